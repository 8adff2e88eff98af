//! A result JSON file read as its type (`schema::Document`), each field of its type and no
//! unknown one, or the file refused with the field's JSON path: a hand-edited `"slice": 1.0`
//! slipped past the duplicate check (a whole number was looked for), and `"counted": "false"`
//! counted. The parts the document keeps as JSON values (environment, per_level) are read a
//! field at a time, each of its type too.

use anyhow::{Result, bail};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::schema::Document;

/// The document, or the file refused with the JSON path of what is not of its type.
pub fn document(name: &str, value: &Value) -> Result<Document> {
    serde_path_to_error::deserialize(value).or_else(|e| {
        // The file's own keys, escaped: they reach the terminal.
        let shown = |text: String| crate::text::escaped(&text).into_owned();
        let (path, error) = (shown(e.path().to_string()), shown(e.inner().to_string()));
        let at = if path == "." { String::new() } else { format!("{path}: ") };
        bail!("{name}: {at}{error}; is this a faultscale --json file?")
    })
}

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

/// An object where present (`"environment": 5` is none), its path said otherwise.
pub fn object<'a>(name: &str, parent: &'a Value, path: &str, key: &str) -> Result<&'a Value> {
    let value = &parent[key];
    if !value.is_null() && !value.is_object() {
        bail!("{name}: {} {value} is not an object; is this a faultscale --json file?", join(path, key));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ill_typed_and_unknown_fields_are_refused_with_their_path() {
        let m = serde_json::json!({"placement": "child", "faults_per_sec": 5.0, "repetition": 1, "slice": 3,
            "counted": true, "result": {"workers": [{}, {}], "overran": false, "kernel_source": "minflt"}});
        let with = |m: &Value| serde_json::json!({"settings": {"workload": "anon"}, "measurements": [{}, {}, m]});
        let read = document("x.json", &with(&m)).unwrap_err().to_string();
        assert!(read.starts_with("x.json: measurements[0]: missing field `placement`"), "{read}");
        let read = |m: &Value| {
            let mut document = with(m);
            document["measurements"] = serde_json::json!([m]);
            super::document("x.json", &document)
        };
        let measurement = &read(&m).unwrap().measurements.unwrap()[0];
        assert_eq!((measurement.slice, measurement.counted, measurement.result.workers.len()), (Some(3), true, 2));
        let refused = |key: &str, value: Value, said: &str| {
            let mut m = m.clone();
            match key.split_once('.') {
                Some((outer, inner)) => m[outer][inner] = value,
                None => m[key] = value,
            }
            let err = read(&m).unwrap_err().to_string();
            assert!(err.starts_with(&format!("x.json: measurements[0].{said}")), "{key}: {err}");
            assert!(err.ends_with("; is this a faultscale --json file?"), "{key}: {err}");
        };
        refused("slice", serde_json::json!(1.0), "slice: invalid type: floating point `1.0`, expected u32");
        refused("slice", serde_json::json!(-1), "slice: invalid value: integer `-1`, expected u32");
        refused("repetition", serde_json::json!("1"), "repetition: invalid type: string \"1\"");
        refused("counted", serde_json::json!("false"), "counted: invalid type: string \"false\", expected a boolean");
        refused("depth", serde_json::json!(1.5), "depth: invalid type: floating point `1.5`");
        refused("placement", serde_json::json!(7), "placement: invalid type: integer `7`, expected a string");
        refused("result.overran", serde_json::json!("true"), "result.overran: invalid type: string \"true\"");
        refused(
            "result.workers",
            serde_json::json!(2),
            "result.workers: invalid type: integer `2`, expected a sequence",
        );
        refused("result", serde_json::json!(5), "result: invalid type: integer `5`");
        refused("result.elapsed", serde_json::json!(5), "result.elapsed: unknown field `elapsed`, expected one of");
        refused("slices", serde_json::json!(5), "slices: unknown field `slices`");
        refused("\u{1b}[2J", serde_json::json!(5), "\\u{1b}[2J: unknown field `\\u{1b}[2J`");
        // The key of files from before it: their path is theirs.
        let mut old = m.clone();
        old["run"] = old["result"].take();
        old.as_object_mut().unwrap().remove("result");
        assert_eq!(read(&old).unwrap().measurements.unwrap()[0].result.workers.len(), 2);
        old["run"]["overran"] = serde_json::json!(1);
        assert!(read(&old).unwrap_err().to_string().contains("measurements[0].run.overran: invalid type"));
    }

    #[test]
    fn the_settings_and_the_document_are_read_as_their_types() {
        let err = |text: &str| document("x.json", &serde_json::from_str(text).unwrap()).unwrap_err().to_string();
        assert!(err(r#"{"settings": {"workload": 7}}"#).starts_with("x.json: settings.workload: invalid type"));
        assert!(err(r#"{"settings": {"chunk": 7}}"#).starts_with("x.json: settings.chunk: unknown field `chunk`"));
        assert!(err(r#"{"complete": "false"}"#).starts_with("x.json: complete: invalid type: string \"false\""));
        assert!(err(r#"{"extra": 1}"#).starts_with("x.json: extra: unknown field `extra`"));
        // Absent is a file from before a field.
        let bare = document("x.json", &serde_json::json!({})).unwrap();
        assert!(bare.measurements.is_none() && bare.settings.workload.is_none() && bare.state.is_none());
    }
}
