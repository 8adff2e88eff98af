//! Memory knobs under their v2 names, and the files they become on each cgroup version.
//!
//! Profiles name knobs the v2 way (`memory.max`); on v1 they map to `memory.limit_in_bytes`,
//! `memory.soft_limit_in_bytes` and `memory.memsw.limit_in_bytes`; a knob with no v1
//! equivalent is an error before anything is created.

use anyhow::{Result, bail};

use super::Version;

/// A knob as written in a profile, with its value checked.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Knob {
    /// The v2 name, e.g. memory.max.
    pub name: String,
    /// Bytes, or None for "max"; for memory.oom.group, 0 or 1.
    pub value: Option<u64>,
    /// How a relative value was reached, e.g. "90% of RAM", shown beside the bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub basis: Option<String>,
    /// The profile lets this knob go unset on v1, where it has no equivalent (a published
    /// setup ported to v1 keeps what maps), instead of refusing to build.
    #[serde(skip)]
    pub optional_on_v1: bool,
}

impl Knob {
    pub fn value_text(&self) -> String {
        self.value.map(|v| v.to_string()).unwrap_or_else(|| "max".into())
    }

    /// The value as a reader wants it: bytes, and where it came from if it was relative.
    pub fn describe(&self) -> String {
        match &self.basis {
            Some(basis) => format!("{} ({basis})", self.value_text()),
            None => self.value_text(),
        }
    }

    /// Whether cgroup v1 has a file for it (memory.swap.max maps to memsw with memory.max).
    pub fn maps_to_v1(&self) -> bool {
        matches!(self.name.as_str(), "memory.max" | "memory.low" | "memory.swap.max")
    }
}

/// The knobs of a level that are left unset on `version` because the profile allows it.
pub fn skipped_on(level: &[Knob], version: Version) -> Vec<&Knob> {
    match version {
        Version::V1 => level.iter().filter(|k| k.optional_on_v1 && !k.maps_to_v1()).collect(),
        Version::V2 => Vec::new(),
    }
}

/// One file write a knob turns into on a hierarchy version.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct KnobWrite {
    pub knob: String,
    pub file: String,
    pub value: String,
}

/// Maps one level's knobs to the files to write on `version`, in a safe order (v1 needs the
/// memory limit before the memory+swap limit).
pub fn writes_for(level: &[Knob], version: Version) -> Result<Vec<KnobWrite>> {
    let mut writes = Vec::new();
    let skipped = skipped_on(level, version);
    for knob in level.iter().filter(|k| !skipped.contains(k)) {
        let (file, value) = match version {
            Version::V2 => (knob.name.clone(), knob.value_text()),
            Version::V1 => {
                let v1_value = || knob.value.map(|v| v.to_string()).unwrap_or_else(|| "-1".into());
                match knob.name.as_str() {
                    "memory.max" => ("memory.limit_in_bytes".into(), v1_value()),
                    "memory.low" => ("memory.soft_limit_in_bytes".into(), v1_value()),
                    "memory.swap.max" => {
                        // v1 limits memory+swap together: memsw = memory limit + swap allowance.
                        let limit = level.iter().find(|k| k.name == "memory.max").and_then(|k| k.value);
                        match (limit, knob.value) {
                            (_, None) => ("memory.memsw.limit_in_bytes".into(), "-1".into()),
                            // A sum past what the kernel takes means no limit, not a wrapped one.
                            (Some(limit), Some(swap)) => {
                                match limit.checked_add(swap).filter(|&t| t <= i64::MAX as u64) {
                                    Some(total) => ("memory.memsw.limit_in_bytes".into(), total.to_string()),
                                    None => ("memory.memsw.limit_in_bytes".into(), "-1".into()),
                                }
                            }
                            (None, Some(_)) => bail!(
                                "memory.swap.max on cgroup v1 becomes memory.memsw.limit_in_bytes (memory + swap), which needs memory.max on the same level"
                            ),
                        }
                    }
                    other => bail!(
                        "{other} has no cgroup v1 equivalent; run this profile where the memory controller is on cgroup v2 (`faultscale env` says where it is here)"
                    ),
                }
            }
        };
        writes.push(KnobWrite { knob: knob.name.clone(), file, value });
    }
    writes.sort_by_key(|w| w.file == "memory.memsw.limit_in_bytes");
    Ok(writes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_mapping() {
        let level = vec![
            Knob { name: "memory.swap.max".into(), value: Some(1 << 20), ..Knob::default() },
            Knob { name: "memory.max".into(), value: Some(1 << 30), ..Knob::default() },
            Knob { name: "memory.low".into(), value: None, ..Knob::default() },
        ];
        let writes = writes_for(&level, Version::V1).unwrap();
        let files: Vec<(&str, &str)> = writes.iter().map(|w| (w.file.as_str(), w.value.as_str())).collect();
        assert_eq!(
            files,
            [
                ("memory.limit_in_bytes", "1073741824"),
                ("memory.soft_limit_in_bytes", "-1"),
                ("memory.memsw.limit_in_bytes", "1074790400"),
            ]
        );
        for no_v1 in ["memory.high", "memory.min", "memory.oom.group"] {
            let err =
                writes_for(&[Knob { name: no_v1.into(), value: Some(1), ..Knob::default() }], Version::V1).unwrap_err();
            assert!(err.to_string().contains("no cgroup v1 equivalent"), "{no_v1}");
        }
        let huge = [
            Knob { name: "memory.max".into(), value: Some(1 << 62), ..Knob::default() },
            Knob { name: "memory.swap.max".into(), value: Some(u64::MAX - 5), ..Knob::default() },
        ];
        let memsw = writes_for(&huge, Version::V1).unwrap().pop().unwrap();
        assert_eq!((memsw.file.as_str(), memsw.value.as_str()), ("memory.memsw.limit_in_bytes", "-1"));
        let v2 = writes_for(&level, Version::V2).unwrap();
        assert!(v2.iter().any(|w| w.file == "memory.low" && w.value == "max"));
    }

    #[test]
    fn a_knob_the_profile_lets_go_is_skipped_on_v1_only() {
        let level = vec![
            Knob { name: "memory.min".into(), value: Some(1 << 20), optional_on_v1: true, ..Knob::default() },
            Knob { name: "memory.low".into(), value: Some(2 << 20), optional_on_v1: true, ..Knob::default() },
        ];
        let v1: Vec<String> = writes_for(&level, Version::V1).unwrap().into_iter().map(|w| w.file).collect();
        assert_eq!(v1, ["memory.soft_limit_in_bytes"]);
        assert_eq!(skipped_on(&level, Version::V1).iter().map(|k| k.name.as_str()).collect::<Vec<_>>(), ["memory.min"]);
        assert_eq!(writes_for(&level, Version::V2).unwrap().len(), 2);
        assert!(skipped_on(&level, Version::V2).is_empty());
    }
}
