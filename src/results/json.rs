//! The fields a result JSON file's reading takes, each read as its type through serde or the
//! file refused with the field's JSON path: a hand-edited `"slice": 1.0` slipped past the
//! duplicate check (a whole number was looked for), and `"counted": "false"` counted.

use anyhow::{Result, bail};
use serde::de::{DeserializeOwned, IgnoredAny};
use serde_json::Value;

/// The field `key` of `parent` (at `path`, "" for the document) as a T: None where absent or
/// null, else its value, or the file refused naming the field's path and `what` it must be.
pub fn field<T: DeserializeOwned>(name: &str, parent: &Value, path: &str, key: &str, what: &str) -> Result<Option<T>> {
    let value = &parent[key];
    if value.is_null() {
        return Ok(None);
    }
    match T::deserialize(value) {
        Ok(v) => Ok(Some(v)),
        Err(_) => bail!("{name}: {} {value} is not {what}; is this a faultscale --json file?", join(path, key)),
    }
}

/// `path.key`, or `key` at the document's top.
pub fn join(path: &str, key: &str) -> String {
    if path.is_empty() { key.to_string() } else { format!("{path}.{key}") }
}

/// An object where present (`"run": 5` is no run without fields), its path said otherwise.
pub fn object<'a>(name: &str, parent: &'a Value, path: &str, key: &str) -> Result<&'a Value> {
    let value = &parent[key];
    if !value.is_null() && !value.is_object() {
        bail!("{name}: {} {value} is not an object; is this a faultscale --json file?", join(path, key));
    }
    Ok(value)
}

/// What one element of `measurements` says besides its figures, each field of its type.
#[derive(Debug, PartialEq)]
pub struct Measurement {
    pub placement: String,
    pub repetition: Option<u32>,
    pub slice: Option<u32>,
    /// The crew generation (1-based) that measured it; absent in files from before.
    pub generation: Option<u32>,
    pub counted: Option<bool>,
    pub depth: Option<u64>,
    /// How many workers `run.workers` lists: the task count.
    pub workers: usize,
    pub overran: Option<bool>,
    pub kernel_source: Option<String>,
}

impl Measurement {
    /// The `index`th measurement.
    pub fn read(name: &str, m: &Value, index: usize) -> Result<Self> {
        let at = format!("measurements[{index}]");
        if !m.is_object() {
            bail!("{name}: {at} {m} is not an object; is this a faultscale --json file?");
        }
        let run = object(name, m, &at, "run")?;
        let run_at = join(&at, "run");
        let whole = "a whole number";
        let flag = "true or false";
        Ok(Measurement {
            placement: field(name, m, &at, "placement", "text")?.unwrap_or_else(|| "?".to_string()),
            repetition: field(name, m, &at, "repetition", whole)?,
            slice: field(name, m, &at, "slice", whole)?,
            generation: match field::<u32>(name, m, &at, "generation", "a generation number (1 or more)")? {
                Some(0) => bail!(
                    "{name}: {at}.generation 0 is not a generation number (1 or more); is this a faultscale --json file?"
                ),
                generation => generation,
            },
            counted: field(name, m, &at, "counted", flag)?,
            depth: field(name, m, &at, "depth", whole)?,
            workers: field::<Vec<IgnoredAny>>(name, run, &run_at, "workers", "a list of workers")?
                .map_or(0, |w| w.len()),
            overran: field(name, run, &run_at, "overran", flag)?,
            kernel_source: field(name, run, &run_at, "kernel_source", "text")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ill_typed_fields_are_refused_with_their_path() {
        let m = serde_json::json!({"placement": "child", "repetition": 1, "slice": 3, "counted": true,
            "run": {"workers": [{}, {}], "overran": false, "kernel_source": "minflt"}});
        let read = Measurement::read("x.json", &m, 2).unwrap();
        assert_eq!((read.slice, read.counted, read.workers, read.overran), (Some(3), Some(true), 2, Some(false)));
        let refused = |key: &str, value: Value, path: &str| {
            let mut m = m.clone();
            match key.split_once('.') {
                Some((outer, inner)) => m[outer][inner] = value,
                None => m[key] = value,
            }
            let err = Measurement::read("x.json", &m, 2).unwrap_err().to_string();
            assert!(err.starts_with(&format!("x.json: {path} ")) && err.contains(" is not "), "{key}: {err}");
        };
        refused("slice", serde_json::json!(1.0), "measurements[2].slice");
        refused("slice", serde_json::json!(-1), "measurements[2].slice");
        refused("repetition", serde_json::json!("1"), "measurements[2].repetition");
        refused("counted", serde_json::json!("false"), "measurements[2].counted");
        refused("depth", serde_json::json!(1.5), "measurements[2].depth");
        refused("placement", serde_json::json!(7), "measurements[2].placement");
        refused("run.overran", serde_json::json!("true"), "measurements[2].run.overran");
        refused("run.workers", serde_json::json!(2), "measurements[2].run.workers");
        refused("run", serde_json::json!(5), "measurements[2].run");
        // Absent and null are the files from before a field.
        let bare = Measurement::read("x.json", &serde_json::json!({"slice": null}), 0).unwrap();
        assert_eq!((bare.slice, bare.counted, bare.workers, bare.placement.as_str()), (None, None, 0, "?"));
    }
}
