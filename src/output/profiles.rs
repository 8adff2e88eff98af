//! `faultscale profiles [NAME]`: the shipped profiles, or the tree one would build here.

use anyhow::{Result, anyhow};

use crate::cgroup::knobs::{skipped_on, writes_for};
use crate::cgroup::{self, VersionChoice};
use crate::plan::profile;
use crate::text::escaped;

/// One line per shipped profile: name, depth, knobs per level, description.
pub fn list() -> Result<()> {
    out!("{:<12} {:>5}  {:<28} description", "name", "depth", "knobs");
    for (shipped, _) in profile::SHIPPED {
        let p = profile::load(shipped)?;
        let knobs: Vec<String> = p
            .levels
            .iter()
            .enumerate()
            .flat_map(|(i, level)| level.iter().map(move |k| format!("L{}:{}={}", i + 1, k.name, compact(k))))
            .collect();
        let knobs = if knobs.is_empty() { "-".to_string() } else { knobs.join(" ") };
        out!("{:<12} {:>5}  {:<28} {}", p.name, p.levels.len(), knobs, escaped(&p.description));
    }
    Ok(())
}

/// A knob's value for the one-line listing: bytes, or the share it was given as.
fn compact(knob: &crate::cgroup::knobs::Knob) -> String {
    match knob.basis.as_deref().and_then(|basis| basis.split_once(' ')) {
        Some((percent, rest)) if rest.contains("parent") => format!("{percent}-of-parent"),
        Some((percent, _)) => format!("{percent}-of-RAM"),
        None => knob.value_text(),
    }
}

/// The directories and knob files `name` would become on this machine; creates nothing.
pub fn show(name: &str, version: VersionChoice) -> Result<()> {
    // The user's input, refused as a run refuses `--cgroup bogus` (exit 2), named as given
    // here: a placement such as nested:3 is no profile.
    if !profile::names_a_profile(name) {
        return Err(crate::error::usage(anyhow!(
            "profiles {name:?}: not a shipped profile ({}) or a .toml path; `faultscale profiles` lists the shipped ones",
            profile::shipped_names()
        )));
    }
    let p = profile::load(name).map_err(crate::error::usage)?;
    let hierarchy = cgroup::detect()?.memory_hierarchy(version)?;
    // A profile file is anyone's text: its description is shown escaped (its name is checked).
    out!("{}: {} (cgroup {} names; nothing is created)", p.name, escaped(&p.description), hierarchy.version);
    out!("<base>");
    for (index, level) in p.levels.iter().enumerate() {
        let indent = "  ".repeat(index + 1);
        let dir =
            if index == 0 { format!("faultscale-<pid>-<nonce>-{}", p.name) } else { format!("level{}", index + 1) };
        out!("{indent}{dir}/");
        let writes = writes_for(level, hierarchy.version).map_err(|e| anyhow!("{name}: level {}: {e}", index + 1))?;
        for write in writes {
            let basis = level.iter().find(|k| k.name == write.knob).and_then(|k| k.basis.as_ref());
            match basis {
                Some(basis) => out!("{indent}  {} = {}  ({} {basis})", write.file, write.value, write.knob),
                None => out!("{indent}  {} = {}", write.file, write.value),
            }
        }
        for knob in skipped_on(level, hierarchy.version) {
            out!(
                "{indent}  ({} = {} left unset: no cgroup {} equivalent)",
                knob.name,
                knob.describe(),
                hierarchy.version
            );
        }
    }
    Ok(())
}
