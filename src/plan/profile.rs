//! cgroup-profiles/*.toml: a memcg setup as a file (levels from the base down, each with
//! knobs). What a knob becomes on each cgroup version is cgroup knowledge: cgroup/knobs.rs.
//!
//! Profile format:
//!
//! ```toml
//! name = "limited"
//! description = "what it measures"
//! [[level]]                 # one level below the base
//! "memory.max" = "256M"
//! [[level]]                 # two levels below
//! "memory.low" = "64M"
//! ```
//!
//! Sizes may be relative, as published setups give them: `"90%"` (or `"90% of RAM"`) is that
//! share of MemTotal; `"50% of parent"` is that share of the same knob one level up (which must
//! set it). Both resolve to bytes, page-aligned down, when the
//! profile is loaded, and the bytes are what is written and shown (with their basis).
//! `skip_on_v1 = ["memory.min"]` lets knobs with no v1 equivalent go unset on v1 (said so)
//! instead of refusing to build.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Result, anyhow, bail};

use super::MAX_DEPTH;
use crate::cgroup::knobs::Knob;
use crate::text::size_bytes;

/// The profiles that ship with faultscale, embedded so the binary works from anywhere.
pub const SHIPPED: &[(&str, &str)] = &[
    ("root", include_str!("../../cgroup-profiles/root.toml")),
    ("child", include_str!("../../cgroup-profiles/child.toml")),
    ("nested-2", include_str!("../../cgroup-profiles/nested-2.toml")),
    ("nested-4", include_str!("../../cgroup-profiles/nested-4.toml")),
    ("nested-8", include_str!("../../cgroup-profiles/nested-8.toml")),
    ("limited", include_str!("../../cgroup-profiles/limited.toml")),
    ("high", include_str!("../../cgroup-profiles/high.toml")),
    ("protected", include_str!("../../cgroup-profiles/protected.toml")),
    ("protected-3", include_str!("../../cgroup-profiles/protected-3.toml")),
    ("lkp-cgroup2", include_str!("../../cgroup-profiles/lkp-cgroup2.toml")),
];

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Profile {
    pub name: String,
    pub description: String,
    /// levels[0] is one level below the base.
    pub levels: Vec<Vec<Knob>>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProfile {
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    skip_on_v1: Vec<String>,
    #[serde(default)]
    level: Vec<BTreeMap<String, toml::Value>>,
}

const SIZE_KNOBS: &[&str] = &["memory.max", "memory.high", "memory.low", "memory.min", "memory.swap.max"];
const KNOWN_KNOBS: &[&str] =
    &["memory.max", "memory.high", "memory.low", "memory.min", "memory.swap.max", "memory.oom.group"];

/// The 1-based line of the first occurrence of `needle`, for error messages.
fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|line| line.contains(needle)).map(|i| i + 1).unwrap_or(1)
}

/// This machine's RAM (MemTotal), the basis of percentages.
fn ram_bytes() -> Result<u64> {
    crate::measure::machine::meminfo_bytes("MemTotal")
        .ok_or_else(|| anyhow!("/proc/meminfo has no MemTotal line; percentages in profiles need it"))
}

/// What a percentage is a share of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ShareOf {
    Ram,
    Parent,
}

/// `"90%"`, `"90% of RAM"`, `"50% of parent"`: the percentage and its basis; None if the text
/// is not a percentage at all.
fn percentage(text: &str) -> Option<Result<(f64, ShareOf), String>> {
    let (number, rest) = text.trim().split_once('%')?;
    let of = match rest.trim().to_ascii_lowercase().as_str() {
        "" | "of ram" => ShareOf::Ram,
        "of parent" => ShareOf::Parent,
        other => return Some(Err(format!("{other:?} after the %: write \"N%\", \"N% of RAM\" or \"N% of parent\""))),
    };
    Some(match number.trim().parse::<f64>() {
        Ok(p) if p > 0.0 && p <= 100.0 => Ok((p, of)),
        _ => Err(format!("{:?} is not a percentage from above 0 to 100", format!("{number}%"))),
    })
}

/// Parses and validates one profile; `origin` names it in errors (a file path or a shipped name).
pub fn parse(origin: &str, text: &str) -> Result<Profile> {
    // RAM is read only when a value is relative: a plain profile needs nothing of the machine.
    let ram = text.contains('%').then(ram_bytes).transpose()?.unwrap_or(0);
    parse_with_ram(origin, text, ram)
}

/// `parse`, with percentages taken of `ram` bytes.
fn parse_with_ram(origin: &str, text: &str, ram: u64) -> Result<Profile> {
    if text.len() > 1 << 20 {
        bail!("{origin}: profile is over 1 MiB; a profile is a few lines of TOML");
    }
    let raw = read_toml(origin, text)?;
    let name = checked_name(origin, text, &raw)?;
    let mut levels: Vec<Vec<Knob>> = Vec::new();
    for table in raw.level {
        let mut knobs = Vec::new();
        for (key, value) in table {
            let line = line_of(text, &key);
            if !KNOWN_KNOBS.contains(&key.as_str()) {
                bail!("{origin}:{line}: unknown knob {key:?}; known: {}", KNOWN_KNOBS.join(", "));
            }
            let at = Origin { origin, line };
            let (knob_value, basis) = knob_value(at, &key, &value, ram, levels.last())?;
            let optional_on_v1 = raw.skip_on_v1.contains(&key);
            knobs.push(Knob { name: key, value: knob_value, basis, optional_on_v1 });
        }
        levels.push(knobs);
    }
    Ok(Profile { name, description: raw.description.trim().to_string(), levels })
}

/// The TOML read into the profile's fields; an error names the line it is on.
fn read_toml(origin: &str, text: &str) -> Result<RawProfile> {
    toml::from_str(text).map_err(|e| {
        let message = e.message().replace('\n', " ");
        // serde reports an unknown key with the whole table as its span; point at the key.
        let unknown_key = message
            .strip_prefix("unknown field `")
            .and_then(|rest| rest.split_once('`'))
            .map(|(key, _)| line_of(text, key));
        let line =
            unknown_key.or_else(|| e.span().map(|span| text[..span.start.min(text.len())].lines().count().max(1)));
        match line {
            Some(line) => anyhow!("{origin}:{line}: {message}"),
            None => anyhow!("{origin}: {message}"),
        }
    })
}

/// The profile's name, once its name, level count and skip_on_v1 list are found sound.
fn checked_name(origin: &str, text: &str, raw: &RawProfile) -> Result<String> {
    let name = raw.name.trim().to_string();
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
        bail!("{origin}:{}: name {:?} must be letters, digits, - or _", line_of(text, "name"), raw.name);
    }
    if raw.level.len() > MAX_DEPTH as usize {
        bail!("{origin}: {} levels; at most {MAX_DEPTH}", raw.level.len());
    }
    // Zero levels is the base itself: only the baseline profile may say that.
    if raw.level.is_empty() && name != "root" {
        bail!("{origin}: no [[level]]; a profile needs 1 to {MAX_DEPTH} levels below the base");
    }
    for name in &raw.skip_on_v1 {
        if !KNOWN_KNOBS.contains(&name.as_str()) {
            bail!(
                "{origin}:{}: skip_on_v1 names {name:?}, not a knob; known: {}",
                line_of(text, "skip_on_v1"),
                KNOWN_KNOBS.join(", ")
            );
        }
    }
    Ok(name)
}

/// Where a knob's value was written, for its error messages: `origin:line`.
#[derive(Clone, Copy)]
struct Origin<'a> {
    origin: &'a str,
    line: usize,
}

impl std::fmt::Display for Origin<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.origin, self.line)
    }
}

/// One knob's value in bytes (None: "max") and, for a relative size, what it was a share of.
/// `above` is the level one up, the basis of "N% of parent".
fn knob_value(
    at: Origin,
    key: &str,
    value: &toml::Value,
    ram: u64,
    above: Option<&Vec<Knob>>,
) -> Result<(Option<u64>, Option<String>)> {
    let mut basis = None;
    let knob_value = match (value, SIZE_KNOBS.contains(&key)) {
        (toml::Value::String(s), true) if s.trim() == "max" => None,
        (toml::Value::String(s), true) if percentage(s).is_some() => {
            let (bytes, said) = relative_size(at, key, s, ram, above)?;
            basis = Some(said);
            Some(bytes)
        }
        (toml::Value::String(s), true) => {
            Some(size_bytes(s).map_err(|why| anyhow!("{at}: {key} = {s:?}: {why}; use bytes, K/M/G or \"max\""))?)
        }
        (toml::Value::Integer(n), _) if *n >= 0 => Some(*n as u64),
        _ if key == "memory.oom.group" => bail!("{at}: {key} must be 0 or 1"),
        _ => bail!("{at}: {key} = {value}: not a size; use bytes, K/M/G or \"max\""),
    };
    if key == "memory.oom.group" && knob_value.is_some_and(|v| v > 1) {
        bail!("{at}: {key} must be 0 or 1");
    }
    Ok((knob_value, basis))
}

/// A percentage (`s`, already known to be one) in bytes, page-aligned down, with its basis
/// as the listing says it.
fn relative_size(at: Origin, key: &str, s: &str, ram: u64, above: Option<&Vec<Knob>>) -> Result<(u64, String)> {
    let (percent, of) = percentage(s).expect("checked").map_err(|e| anyhow!("{at}: {key}: {e}"))?;
    let (whole, said) = match of {
        ShareOf::Ram => (ram, format!("{percent}% of RAM")),
        // The same knob one level up; the base's own values are not read, so
        // a top level must say "of RAM".
        ShareOf::Parent => match above.and_then(|above| above.iter().find(|k| k.name == key)).and_then(|k| k.value) {
            Some(above) => (above, format!("{percent}% of the parent's {key}")),
            None => bail!(
                "{at}: {key} = {s:?}: the level above sets no {key} in bytes; give it one, or write \"{percent}%\" (of RAM)"
            ),
        },
    };
    // Page-aligned down, as the kernel would round it anyway.
    let bytes = ((whole as f64 * percent / 100.0) as u64) & !4095;
    // A share that leaves a memcg a few pages is a typo, not a setup: every worker would be
    // OOM-killed at its first chunk. A share of exactly 0 is a setting (no protection).
    if percent > 0.0 && bytes < MIN_SHARE_BYTES {
        bail!(
            "{at}: {key} = {s:?} is {bytes} bytes ({said}), under {} KiB; give a larger share",
            MIN_SHARE_BYTES >> 10
        );
    }
    Ok((bytes, said))
}

/// The smallest size a share may come to: 64 KiB, sixteen 4K pages.
const MIN_SHARE_BYTES: u64 = 64 << 10;

/// Whether `spec` is taken for a profile: a shipped name or a path (anything with a `/` or
/// ending in .toml); anything else `load` refuses without reading.
pub fn names_a_profile(spec: &str) -> bool {
    SHIPPED.iter().any(|(name, _)| *name == spec) || is_path(spec)
}

fn is_path(spec: &str) -> bool {
    spec.contains('/') || spec.ends_with(".toml")
}

/// The shipped profiles' names, comma-separated, for an error naming what there is.
pub fn shipped_names() -> String {
    SHIPPED.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
}

/// Loads a profile by shipped name or by path (anything with a `/` or ending in .toml).
pub fn load(spec: &str) -> Result<Profile> {
    if let Some((_, text)) = SHIPPED.iter().find(|(name, _)| *name == spec) {
        return parse(&format!("cgroup-profiles/{spec}.toml"), text);
    }
    if is_path(spec) {
        let path = Path::new(spec);
        // Checked before reading, so a huge file (or /dev/zero) is refused, not slurped.
        let metadata = std::fs::metadata(path).map_err(|e| anyhow!("{spec}: cannot read profile: {e}"))?;
        if !metadata.is_file() {
            bail!("{spec}: not a regular file; a profile is a .toml file");
        }
        if metadata.len() > 1 << 20 {
            bail!("{spec}: profile is over 1 MiB; a profile is a few lines of TOML");
        }
        let bytes = std::fs::read(path).map_err(|e| anyhow!("{spec}: cannot read profile: {e}"))?;
        let text = String::from_utf8(bytes).map_err(|_| anyhow!("{spec}: not UTF-8 text; a profile is TOML"))?;
        return parse(spec, &text);
    }
    bail!(
        "--cgroup {spec:?}: not a placement (root, child, nested:N, nested:A..B, siblings:N), shipped profile ({}) or .toml path",
        shipped_names()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_profile_parses_and_says_what_it_measures() {
        for (name, text) in SHIPPED {
            let profile = parse(name, text).unwrap_or_else(|e| panic!("{name}: {e:#}"));
            assert_eq!(&profile.name, name);
            assert!(!profile.description.is_empty(), "{name}");
            assert!(text.starts_with('#'), "{name}: must start with a comment");
        }
        assert_eq!(load("nested-8").unwrap().levels.len(), 8);
        assert_eq!(load("root").unwrap().levels.len(), 0);
    }

    #[test]
    fn sizes_and_max() {
        let p = parse(
            "t",
            "name = \"t\"\n[[level]]\n\"memory.max\" = \"64K\"\n\"memory.high\" = \"max\"\n\"memory.low\" = 4096\n",
        )
        .unwrap();
        assert_eq!(
            p.levels[0],
            vec![
                Knob { name: "memory.high".into(), value: None, ..Knob::default() },
                Knob { name: "memory.low".into(), value: Some(4096), ..Knob::default() },
                Knob { name: "memory.max".into(), value: Some(65536), ..Knob::default() },
            ]
        );
    }

    #[test]
    fn errors_name_file_line_and_field() {
        let cases = [
            ("name = \"x\"\n[[level]]\n\"memory.maxx\" = \"1M\"\n", "t.toml:3: unknown knob \"memory.maxx\""),
            ("name = \"x\"\n[[level]]\n\"memory.max\" = \"lots\"\n", "t.toml:3: "),
            ("name = \"x\"\n[[level]]\n\"memory.max\" = -5\n", "t.toml:3: memory.max = -5"),
            ("name = \"x\"\n[[level]]\n\"memory.oom.group\" = 2\n", "t.toml:3: memory.oom.group must be 0 or 1"),
            ("name = \"x\"\n", "t.toml: no [[level]]"),
            ("name = \"x\"\ncolour = \"red\"\n[[level]]\n", "t.toml:2: unknown field `colour`"),
            ("name = \"x\"\n[[level]\n", "t.toml:2: "),
            ("name = \"a b\"\n[[level]]\n", "t.toml:1: name \"a b\""),
            ("", "t.toml:1: missing field `name`"),
            ("\0\u{1}binary", "t.toml:1: "),
        ];
        for (text, expected) in cases {
            let err = format!("{:#}", parse("t.toml", text).unwrap_err());
            assert!(err.starts_with(expected), "{text:?}: {err}");
            assert!(!err.contains('\n'), "{text:?}: multi-line error {err:?}");
        }
        // The fix is said once, however the size is wrong.
        for size in ["lots", "99999999999999999999", "99999999999T"] {
            let text = format!("name = \"x\"\n[[level]]\n\"memory.max\" = \"{size}\"\n");
            let err = format!("{:#}", parse("t.toml", &text).unwrap_err());
            assert_eq!(err.matches("use bytes").count(), 1, "{err}");
            assert!(err.starts_with(&format!("t.toml:3: memory.max = \"{size}\": ")), "{err}");
        }
        let deep = format!("name = \"deep\"\n{}", "[[level]]\n".repeat(65));
        assert!(parse("t.toml", &deep).unwrap_err().to_string().contains("at most 64"));
        assert!(parse("t.toml", &" ".repeat(2 << 20)).unwrap_err().to_string().contains("over 1 MiB"));
    }

    #[test]
    fn percentages_of_ram_and_of_the_parent_resolve_to_page_aligned_bytes() {
        let ram = 24 << 30;
        let text = "name = \"t\"\n[[level]]\n\"memory.high\" = \"90%\"\n\"memory.low\" = \"50% of RAM\"\n\
                    [[level]]\n\"memory.low\" = \"25% of parent\"\n[[level]]\n\"memory.low\" = \"12.5% of parent\"\n";
        let p = parse_with_ram("t", text, ram).unwrap();
        let knob = |level: usize, name: &str| p.levels[level].iter().find(|k| k.name == name).unwrap().clone();
        assert_eq!(knob(0, "memory.high").value, Some((ram as f64 * 0.9) as u64 & !4095));
        assert_eq!(knob(0, "memory.high").basis.as_deref(), Some("90% of RAM"));
        assert_eq!(knob(0, "memory.low").value, Some(12 << 30));
        assert_eq!(knob(1, "memory.low").value, Some(3 << 30));
        assert_eq!(knob(1, "memory.low").describe(), format!("{} (25% of the parent's memory.low)", 3u64 << 30));
        assert_eq!(knob(2, "memory.low").value, Some(384 << 20));
        let cases = [
            (
                "[[level]]\n\"memory.low\" = \"50% of parent\"\n",
                "t.toml:3: memory.low = \"50% of parent\": the level above sets no memory.low",
            ),
            (
                "[[level]]\n\"memory.max\" = \"1G\"\n[[level]]\n\"memory.low\" = \"5% of parent\"\n",
                "t.toml:5: memory.low",
            ),
            ("[[level]]\n\"memory.low\" = \"0%\"\n", "t.toml:3: memory.low: \"0%\" is not a percentage"),
            ("[[level]]\n\"memory.low\" = \"101%\"\n", "t.toml:3: memory.low: \"101%\""),
            ("[[level]]\n\"memory.low\" = \"x%\"\n", "t.toml:3: memory.low: \"x%\""),
            // A share that leaves a memcg a few pages OOM-kills every worker.
            ("[[level]]\n\"memory.max\" = \"0.0000001%\"\n", "t.toml:3: memory.max = \"0.0000001%\" is 0 bytes"),
            ("[[level]]\n\"memory.low\" = \"-5%\"\n", "t.toml:3: memory.low: \"-5%\""),
            ("[[level]]\n\"memory.low\" = \"50% of disk\"\n", "t.toml:3: memory.low: \"of disk\" after the %"),
        ];
        for (levels, expected) in cases {
            let err = format!("{:#}", parse_with_ram("t.toml", &format!("name = \"t\"\n{levels}"), ram).unwrap_err());
            assert!(err.starts_with(expected), "{levels:?}: {err}");
        }
    }

    #[test]
    fn skip_on_v1_marks_only_the_knobs_it_names() {
        let p = parse("t", "name = \"t\"\nskip_on_v1 = [\"memory.min\"]\n[[level]]\n\"memory.min\" = \"1M\"\n\"memory.high\" = \"2M\"\n").unwrap();
        let optional: Vec<(&str, bool)> = p.levels[0].iter().map(|k| (k.name.as_str(), k.optional_on_v1)).collect();
        assert_eq!(optional, [("memory.high", false), ("memory.min", true)]);
        let err = parse("t", "name = \"t\"\nskip_on_v1 = [\"memory.mni\"]\n[[level]]\n").unwrap_err().to_string();
        assert!(err.contains("t:2: skip_on_v1 names \"memory.mni\""), "{err}");
    }

    #[test]
    fn duplicate_knobs_are_rejected_by_toml() {
        assert!(parse("t", "name = \"t\"\n[[level]]\n\"memory.max\" = 1\n\"memory.max\" = 2\n").is_err());
    }

    #[test]
    fn deeply_nested_toml_is_an_error_not_a_crash() {
        for depth in [100, 10_000, 200_000] {
            let arrays = format!("name = \"x\"\nv = {}{}\n", "[".repeat(depth), "]".repeat(depth));
            assert!(parse("deep.toml", &arrays).is_err(), "depth {depth}");
            let tables = format!("name = \"x\"\nv = {}1{}\n", "{a = ".repeat(depth), "}".repeat(depth));
            assert!(parse("deep.toml", &tables).is_err(), "depth {depth}");
        }
    }

    mod fuzz {
        use super::super::*;
        use proptest::prelude::*;

        /// Profile-shaped text: known and unknown keys, sizes good and bad, stray bytes.
        fn profileish() -> impl Strategy<Value = String> {
            let key = prop_oneof![
                Just("\"memory.max\"".to_string()),
                Just("\"memory.low\"".to_string()),
                Just("\"memory.oom.group\"".to_string()),
                Just("name".to_string()),
                "[a-z.\"]{0,12}",
            ];
            let value = prop_oneof![
                Just("\"max\"".to_string()),
                "[0-9]{0,25}[KMGTkmgt]?".prop_map(|v| format!("\"{v}\"")),
                "-?[0-9]{0,22}",
                "\"[^\"]{0,20}\"",
                Just("\"1M\\nmemory.high\"".to_string()),
            ];
            let line = prop_oneof![
                (key, value).prop_map(|(k, v)| format!("{k} = {v}")),
                Just("[[level]]".to_string()),
                ".{0,30}",
            ];
            proptest::collection::vec(line, 0..20).prop_map(|lines| lines.join("\n"))
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 20_000, failure_persistence: None, ..ProptestConfig::default() })]

            #[test]
            fn profile_parsing_never_panics_and_errors_are_one_line(text in profileish()) {
                match parse("fuzz.toml", &text) {
                    Ok(profile) => {
                        prop_assert!(profile.levels.len() <= MAX_DEPTH as usize);
                        for knob in profile.levels.iter().flatten() {
                            prop_assert!(KNOWN_KNOBS.contains(&knob.name.as_str()));
                            // A knob value is a number or max: nothing else can reach a file.
                            let written = knob.value_text();
                            prop_assert!(written == "max" || written.bytes().all(|b| b.is_ascii_digit()));
                        }
                    }
                    Err(e) => {
                        let message = format!("{e:#}");
                        prop_assert!(message.starts_with("fuzz.toml"), "{}", message);
                        prop_assert!(!message.contains('\n'), "{}", message);
                    }
                }
            }

            #[test]
            fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
                let text = String::from_utf8_lossy(&bytes);
                let _ = parse("fuzz.toml", &text);
            }
        }
    }

    #[test]
    fn huge_and_special_files_are_refused_before_reading() {
        let dir = tempfile::tempdir().unwrap();
        let huge = dir.path().join("huge.toml");
        std::fs::File::create(&huge).unwrap().set_len(10 << 20).unwrap();
        assert!(load(huge.to_str().unwrap()).unwrap_err().to_string().contains("over 1 MiB"));
        assert!(load("/dev/zero").unwrap_err().to_string().contains("not a regular file"));
        let binary = dir.path().join("binary.toml");
        std::fs::write(&binary, [0xff, 0xfe, 0x00, 0x01]).unwrap();
        assert!(load(binary.to_str().unwrap()).unwrap_err().to_string().contains("not UTF-8"));
    }

    #[test]
    fn unknown_names_list_what_exists() {
        let err = load("nosuch").unwrap_err().to_string();
        assert!(err.contains("limited") && err.contains("nested:N"), "{err}");
    }
}
