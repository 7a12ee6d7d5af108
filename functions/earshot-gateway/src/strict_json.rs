//! Reading a request body as JSON without ambiguity: a key given twice in one object is refused, at any
//! depth, rather than the last one silently winning (serde_json's `Value` keeps the last; RFC 8259 says
//! names "SHOULD be unique" and leaves duplicates to the reader, and a gateway that speaks `"Bye."` for
//! `{"text":"Hi.","text":"Bye."}` has guessed).
//!
//! Written by hand because serde_json has no option for it: a `Deserialize` that builds the same
//! `serde_json::Value` while keeping, per object, the keys it has seen. It reads the input once.

use std::cell::{Cell, RefCell};
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// Why a body is not strict JSON.
#[derive(Debug, Clone, PartialEq)]
pub enum StrictError {
    /// Not JSON at all (serde_json's message, with line and column).
    Syntax(String),
    /// The JSON path of the object and the key it repeats, as `messages[1].role`.
    DuplicateKey(String),
    /// More values than any request holds ([`MOST_VALUES`]): read no further.
    TooManyValues,
}

/// Parses `body` as one JSON value, refusing duplicate keys in any object.
pub fn from_slice(body: &[u8]) -> Result<Value, StrictError> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let value = StrictValue::deserialize(&mut de).map_err(classify)?;
    de.end().map_err(|e| StrictError::Syntax(e.to_string()))?;
    Ok(value.0)
}

/// A duplicate is reported through serde's custom error, tagged so that it can be told from syntax.
const DUPLICATE_TAG: &str = "\u{0}duplicate:";

fn classify(e: serde_json::Error) -> StrictError {
    let text = e.to_string();
    if text.starts_with(TOO_MANY_TAG) {
        return StrictError::TooManyValues;
    }
    match text.strip_prefix(DUPLICATE_TAG) {
        // serde_json appends " at line L column C" to custom errors: the key is what comes before it.
        Some(rest) => StrictError::DuplicateKey(rest.rsplit_once(" at line ").map_or(rest, |(key, _)| key).to_string()),
        None => StrictError::Syntax(text),
    }
}

/// Where the reader is: the keys and indices from the root to the value being read. One stack for the
/// whole body, pushed and popped as the reader goes in and out, so that an element costs no string of
/// its own: the path is written out only for the error that names it (a body of 16,000 array elements
/// cost 10 times a plain one's parse when each element built its path).
#[derive(Default)]
struct Path {
    steps: RefCell<Vec<Step>>,
    /// Values read so far: past [`MOST_VALUES`] the body is refused where it stands, so that a body of
    /// thousands of array elements costs what a few hundred do.
    values: Cell<usize>,
}

impl Path {
    /// One value more, or the error that ends the reading.
    fn count<E: de::Error>(&self) -> Result<(), E> {
        self.values.set(self.values.get() + 1);
        match self.values.get() > MOST_VALUES {
            true => Err(E::custom(TOO_MANY_TAG)),
            false => Ok(()),
        }
    }
}

/// The most JSON values (objects, arrays, strings, numbers… each counts) a body may hold: a request of the
/// documented maximum (40 earlier turns of three values each, and the fields beside them) holds about 140.
pub const MOST_VALUES: usize = 512;

/// A body past [`MOST_VALUES`] is reported through serde's custom error, tagged as a duplicate is.
const TOO_MANY_TAG: &str = "\u{0}too many values";

/// One step of a [`Path`].
enum Step {
    Key(String),
    Index(usize),
}

/// The path as a caller reads it: `messages[1].role`.
fn written(path: &[Step], last: &str) -> String {
    let mut out = String::new();
    for step in path {
        match step {
            Step::Key(key) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Step::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    if !out.is_empty() {
        out.push('.');
    }
    out.push_str(last);
    out
}

/// A value read with a path, so that a duplicate deep inside says where it is.
struct StrictValue(Value);

impl<'de> Deserialize<'de> for StrictValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let path = Path::default();
        deserializer.deserialize_any(ValueVisitor { path: &path }).map(StrictValue)
    }
}

struct ValueVisitor<'a> {
    path: &'a Path,
}

/// A nested value, visited with the path to it.
struct Nested<'a> {
    path: &'a Path,
}

impl<'de> de::DeserializeSeed<'de> for Nested<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        self.path.count()?;
        deserializer.deserialize_any(ValueVisitor { path: self.path })
    }
}

impl<'de> Visitor<'de> for ValueVisitor<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
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
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
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

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        loop {
            self.path.steps.borrow_mut().push(Step::Index(items.len()));
            let item = seq.next_element_seed(Nested { path: self.path })?;
            self.path.steps.borrow_mut().pop();
            match item {
                Some(item) => items.push(item),
                None => return Ok(Value::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(de::Error::custom(format!("{DUPLICATE_TAG}{}", written(&self.path.steps.borrow(), &key))));
            }
            self.path.steps.borrow_mut().push(Step::Key(key));
            let value = map.next_value_seed(Nested { path: self.path })?;
            if let Some(Step::Key(key)) = self.path.steps.borrow_mut().pop() {
                object.insert(key, value);
            }
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_given_twice_is_named_at_any_depth() {
        assert_eq!(from_slice(br#"{"text":"Hi.","text":"Bye."}"#), Err(StrictError::DuplicateKey("text".into())));
        let nested = br#"{"prompt":"x","messages":[{"role":"user","content":"a"},{"role":"user","role":"assistant","content":"b"}]}"#;
        assert_eq!(from_slice(nested), Err(StrictError::DuplicateKey("messages[1].role".into())));
        assert_eq!(from_slice(br#"{"a":{"b":{"c":1,"c":2}}}"#), Err(StrictError::DuplicateKey("a.b.c".into())));
    }

    #[test]
    fn the_same_key_in_different_objects_is_no_duplicate() {
        let body = br#"{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"}],"prompt":"c"}"#;
        let value = from_slice(body).unwrap();
        assert_eq!(value, serde_json::from_slice::<Value>(body).unwrap());
    }

    #[test]
    fn every_kind_of_value_reads_as_serde_json_reads_it() {
        let body = br#"[1, -2, 3.5, true, null, "s\u00e9", {"k": [ ]}, 18446744073709551615]"#;
        assert_eq!(from_slice(body).unwrap(), serde_json::from_slice::<Value>(body).unwrap());
    }

    #[test]
    fn a_body_of_more_values_than_any_request_holds_is_refused_where_it_stands() {
        let crafted = format!("{{\"text\": [{}]}}", vec!["1"; 16_000].join(","));
        assert_eq!(from_slice(crafted.as_bytes()), Err(StrictError::TooManyValues));
        let most = format!("[{}]", vec!["1"; MOST_VALUES - 1].join(","));
        assert!(from_slice(most.as_bytes()).is_ok(), "within the most");
    }

    #[test]
    fn syntax_errors_and_trailing_bytes_are_syntax_errors() {
        assert!(matches!(from_slice(b"{\"text\": "), Err(StrictError::Syntax(_))));
        assert!(matches!(from_slice(b"{} {}"), Err(StrictError::Syntax(_))));
        // A key that merely contains the tag's text is an ordinary key.
        assert!(from_slice(b"{\"duplicate:x\": 1}").is_ok());
    }
}
