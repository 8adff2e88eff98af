//! A result JSON file read as its type (`schema::Document`), each field of its type and no
//! unknown one, or the file refused with the field's JSON path: a hand-edited `"slice": 1.0`
//! slipped past the duplicate check (a whole number was looked for), and `"counted": "false"`
//! counted. The parts the document keeps as JSON values (environment, per_level) are read a
//! field at a time, each of its type too.

use std::io::Read;

use anyhow::{Result, anyhow, bail};
use serde::Deserialize;
use serde::de::{DeserializeOwned, IgnoredAny};
use serde_json::Value;

use super::schema::Document;

/// Why a file is not read: two documents in one (two runs, the user's input), or anything else.
#[derive(Debug)]
pub enum Refused {
    Mixed(String),
    Other(anyhow::Error),
}

/// The document streamed from `reader` (`first`: its first byte that is not blank), or the file
/// refused with the JSON path of what is not of its type. Read as its type, never as a whole
/// `Value`: what the reader passes over (a worker's figures, the samples) is skipped unkept.
pub fn document(name: &str, first: Option<u8>, reader: impl Read) -> Result<Document, Refused> {
    let other = |error: anyhow::Error| Refused::Other(error);
    let mut stream = serde_json::Deserializer::from_reader(reader);
    if first != Some(b'{') {
        // Not an object: say what it is, read as nothing kept.
        let read = Skipped::deserialize(&mut stream).and_then(|_| stream.end());
        return Err(other(match read {
            Err(e) => not_json(name, &e),
            Ok(()) => anyhow!("{name}: a JSON document that is not an object; is this a faultscale --json file?"),
        }));
    }
    let document = serde_path_to_error::deserialize(&mut stream).map_err(|e| {
        if e.inner().is_syntax() || e.inner().is_eof() || e.inner().is_io() {
            return other(not_json(name, e.inner()));
        }
        // The file's own keys, escaped: they reach the terminal.
        let shown = |text: String| crate::text::escaped(&text).into_owned();
        let (path, error) = (shown(e.path().to_string()), shown(e.inner().to_string()));
        let at = if path == "." { String::new() } else { format!("{path}: ") };
        other(anyhow!("{name}: {at}{error}; is this a faultscale --json file?"))
    })?;
    // `cat a.json b.json`: two whole documents, two runs, as a header again in a CSV.
    match stream.into_iter::<IgnoredAny>().next() {
        None => Ok(document),
        Some(Ok(_)) => Err(Refused::Mixed(format!(
            "{name}: a second JSON document follows the first: the file holds two runs; give each run its own file"
        ))),
        Some(Err(e)) => Err(other(not_json(name, &e))),
    }
}

/// Any JSON value, read through and kept nowhere: as `IgnoredAny`, but nested no deeper than
/// serde_json's limit for a value (`IgnoredAny` is read without one), so a file of `[[[...` is
/// named for what it is.
struct Skipped;

impl<'de> Deserialize<'de> for Skipped {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(Skipped)
    }
}

impl<'de> serde::de::Visitor<'de> for Skipped {
    type Value = Skipped;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Skipped, E> {
        Ok(Skipped)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Skipped, E> {
        Ok(Skipped)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Skipped, E> {
        Ok(Skipped)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Skipped, E> {
        Ok(Skipped)
    }
    fn visit_str<E>(self, _: &str) -> Result<Skipped, E> {
        Ok(Skipped)
    }
    fn visit_unit<E>(self) -> Result<Skipped, E> {
        Ok(Skipped)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Skipped, A::Error> {
        while seq.next_element::<Skipped>()?.is_some() {}
        Ok(Skipped)
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Skipped, A::Error> {
        while map.next_entry::<IgnoredAny, Skipped>()?.is_some() {}
        Ok(Skipped)
    }
}

/// A JSON value the document keeps whole (the environment, the knobs, the summaries), read as
/// serde_json's `Value` but for one thing: a key given twice in one object is refused (its path
/// said by the caller's error), where `Value` would keep the last silently and a hand-edited
/// `"kernel"` given twice would compare as whichever came second.
pub fn unique_keys<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Value, D::Error> {
    deserializer.deserialize_any(UniqueKeys)
}

/// A map of the document's (the memcg counters) with no key given twice, as `unique_keys`.
pub fn unique_map<'de, D, V>(deserializer: D) -> Result<std::collections::BTreeMap<String, V>, D::Error>
where
    D: serde::Deserializer<'de>,
    V: Deserialize<'de>,
{
    struct Map<V>(std::marker::PhantomData<V>);
    impl<'de, V: Deserialize<'de>> serde::de::Visitor<'de> for Map<V> {
        type Value = std::collections::BTreeMap<String, V>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a map")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut read = std::collections::BTreeMap::new();
            while let Some(key) = map.next_key::<String>()? {
                if read.contains_key(&key) {
                    return Err(duplicate(&key));
                }
                let value = map.next_value()?;
                read.insert(key, value);
            }
            Ok(read)
        }
    }
    deserializer.deserialize_map(Map(std::marker::PhantomData))
}

fn duplicate<E: serde::de::Error>(key: &str) -> E {
    E::custom(format_args!("duplicate key `{key}` (a file gives each key once; which one holds?)"))
}

/// Builds the `Value`, with no key twice in an object.
struct UniqueKeys;

impl<'de> serde::de::Visitor<'de> for UniqueKeys {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        unique_keys(deserializer)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut read = Vec::new();
        while let Some(UniqueValue(value)) = seq.next_element()? {
            read.push(value);
        }
        Ok(Value::Array(read))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut read = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if read.contains_key(&key) {
                return Err(duplicate(&key));
            }
            let UniqueValue(value) = map.next_value()?;
            read.insert(key, value);
        }
        Ok(Value::Object(read))
    }
}

/// A nested value read through `UniqueKeys`.
struct UniqueValue(Value);

impl<'de> Deserialize<'de> for UniqueValue {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        unique_keys(deserializer).map(UniqueValue)
    }
}

/// A file that does not parse as JSON, or nests deeper than any document.
fn not_json(name: &str, e: &serde_json::Error) -> anyhow::Error {
    if e.to_string().starts_with("recursion limit exceeded") {
        return anyhow!("{name}: not a faultscale --json file: nested deeper than any faultscale document ({e})");
    }
    anyhow!("{name}: not JSON: {e}")
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

    /// `value` read back as a file's text, its error as the user sees it.
    fn of(value: &Value) -> Result<Document> {
        document("x.json", Some(b'{'), value.to_string().as_bytes()).map_err(|e| match e {
            Refused::Mixed(message) => anyhow!(message),
            Refused::Other(error) => error,
        })
    }

    #[test]
    fn ill_typed_and_unknown_fields_are_refused_with_their_path() {
        let m = serde_json::json!({"placement": "child", "faults_per_sec": 5.0, "repetition": 1, "slice": 3,
            "counted": true, "result": {"workers": [{}, {}], "overran": false, "kernel_source": "minflt"}});
        let with = |m: &Value| serde_json::json!({"settings": {"workload": "anon"}, "measurements": [{}, {}, m]});
        let read = of(&with(&m)).unwrap_err().to_string();
        assert!(read.starts_with("x.json: measurements[0]: missing field `placement`"), "{read}");
        let read = |m: &Value| {
            let mut document = with(m);
            document["measurements"] = serde_json::json!([m]);
            of(&document)
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
        let err = |text: &str| of(&serde_json::from_str(text).unwrap()).unwrap_err().to_string();
        assert!(err(r#"{"settings": {"workload": 7}}"#).starts_with("x.json: settings.workload: invalid type"));
        assert!(err(r#"{"settings": {"chunk": 7}}"#).starts_with("x.json: settings.chunk: unknown field `chunk`"));
        assert!(err(r#"{"complete": "false"}"#).starts_with("x.json: complete: invalid type: string \"false\""));
        assert!(err(r#"{"extra": 1}"#).starts_with("x.json: extra: unknown field `extra`"));
        // Absent is a file from before a field.
        let bare = of(&serde_json::json!({})).unwrap();
        assert!(bare.measurements.is_none() && bare.settings.workload.is_none() && bare.state.is_none());
    }

    #[test]
    fn a_key_given_twice_is_refused_with_its_path_wherever_it_is() {
        // As the file's own text: a Value cannot hold a key twice.
        let err = |text: &str| match document("x.json", Some(b'{'), text.as_bytes()) {
            Ok(_) => panic!("{text} was read"),
            Err(Refused::Other(error)) => error.to_string(),
            Err(Refused::Mixed(message)) => message,
        };
        let environment = err(r#"{"environment": {"kernel": "6.1", "host": "h", "kernel": "6.2"}}"#);
        assert!(environment.starts_with("x.json: environment: duplicate key `kernel`"), "{environment}");
        let nested = err(r#"{"environment": {"machine": {"swap": "none", "swap": "zram"}}}"#);
        assert!(nested.starts_with("x.json: environment.machine: duplicate key `swap`"), "{nested}");
        let in_list = err(r#"{"per_level": [{"tasks": 2}, {"tasks": 2, "tasks": 4}]}"#);
        assert!(in_list.starts_with("x.json: per_level[1]: duplicate key `tasks`"), "{in_list}");
        let m = r#"{"placement": "child", "faults_per_sec": 5.0, "counted": true,
            "result": {"overran": false, "memcg": {"pgscan": 1, "pgscan": 2}}}"#;
        let memcg = err(&format!(r#"{{"measurements": [{m}]}}"#));
        assert!(memcg.starts_with("x.json: measurements[0].result.memcg: duplicate key `pgscan`"), "{memcg}");
        let field = err(r#"{"settings": {"workload": "anon", "workload": "page_fault2"}}"#);
        assert!(field.starts_with("x.json: settings: duplicate field `workload`"), "{field}");
        // One line each.
        assert!([environment, nested, in_list, memcg, field].iter().all(|e| !e.contains('\n')));
    }
}
