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

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Result, anyhow, bail};

use super::MAX_DEPTH;
use crate::cgroup::knobs::Knob;
use crate::text::parse_size;

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
    level: Vec<BTreeMap<String, toml::Value>>,
}

const SIZE_KNOBS: &[&str] = &["memory.max", "memory.high", "memory.low", "memory.min", "memory.swap.max"];
const KNOWN_KNOBS: &[&str] =
    &["memory.max", "memory.high", "memory.low", "memory.min", "memory.swap.max", "memory.oom.group"];

/// The 1-based line of the first occurrence of `needle`, for error messages.
fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|line| line.contains(needle)).map(|i| i + 1).unwrap_or(1)
}

/// Parses and validates one profile; `origin` names it in errors (a file path or a shipped name).
pub fn parse(origin: &str, text: &str) -> Result<Profile> {
    if text.len() > 1 << 20 {
        bail!("{origin}: profile is over 1 MiB; a profile is a few lines of TOML");
    }
    let raw: RawProfile = toml::from_str(text).map_err(|e| {
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
    })?;
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
    let mut levels = Vec::new();
    for table in raw.level {
        let mut knobs = Vec::new();
        for (key, value) in table {
            let line = line_of(text, &key);
            if !KNOWN_KNOBS.contains(&key.as_str()) {
                bail!("{origin}:{line}: unknown knob {key:?}; known: {}", KNOWN_KNOBS.join(", "));
            }
            let knob_value = match (&value, SIZE_KNOBS.contains(&key.as_str())) {
                (toml::Value::String(s), true) if s.trim() == "max" => None,
                (toml::Value::String(s), true) => Some(
                    parse_size(&key, s).map_err(|e| anyhow!("{origin}:{line}: {e}; use bytes, K/M/G or \"max\""))?,
                ),
                (toml::Value::Integer(n), _) if *n >= 0 => Some(*n as u64),
                _ if key == "memory.oom.group" => bail!("{origin}:{line}: {key} must be 0 or 1"),
                _ => bail!("{origin}:{line}: {key} = {value}: not a size; use bytes, K/M/G or \"max\""),
            };
            if key == "memory.oom.group" && knob_value.is_some_and(|v| v > 1) {
                bail!("{origin}:{line}: {key} must be 0 or 1");
            }
            knobs.push(Knob { name: key, value: knob_value });
        }
        levels.push(knobs);
    }
    Ok(Profile { name, description: raw.description.trim().to_string(), levels })
}

/// Loads a profile by shipped name or by path (anything with a `/` or ending in .toml).
pub fn load(spec: &str) -> Result<Profile> {
    if let Some((_, text)) = SHIPPED.iter().find(|(name, _)| *name == spec) {
        return parse(&format!("cgroup-profiles/{spec}.toml"), text);
    }
    if spec.contains('/') || spec.ends_with(".toml") {
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
        "--cgroup {spec:?}: not a placement (root, child, nested:N, nested:A..B), shipped profile ({}) or .toml path",
        SHIPPED.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
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
                Knob { name: "memory.high".into(), value: None },
                Knob { name: "memory.low".into(), value: Some(4096) },
                Knob { name: "memory.max".into(), value: Some(65536) },
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
        let deep = format!("name = \"deep\"\n{}", "[[level]]\n".repeat(65));
        assert!(parse("t.toml", &deep).unwrap_err().to_string().contains("at most 64"));
        assert!(parse("t.toml", &" ".repeat(2 << 20)).unwrap_err().to_string().contains("over 1 MiB"));
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
