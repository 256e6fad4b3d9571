//! Helpers for objects held as JSON: metadata access, timestamps, uids, name rules.

use serde_json::{Map, Value};

/// `metadata.<field>` as a string ("" when absent).
pub fn meta_str<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj["metadata"][field].as_str().unwrap_or_default()
}

/// The `metadata` map, created if missing.
pub fn meta_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.is_object() {
        *obj = Value::Object(Map::new());
    }
    if !obj["metadata"].is_object() {
        obj["metadata"] = Value::Object(Map::new());
    }
    match &mut obj["metadata"] {
        Value::Object(m) => m,
        _ => unreachable!("metadata was just made an object"),
    }
}

/// The current time as an RFC 3339 timestamp with second precision, as Kubernetes writes it.
pub fn now_timestamp() -> String {
    jiff::Timestamp::now()
        .round(jiff::Unit::Second)
        .map(|t| t.to_string())
        .unwrap_or_else(|_| jiff::Timestamp::now().to_string())
}

/// A random version-4 UUID.
pub fn new_uid() -> String {
    let b: [u8; 16] = rand::random();
    let h = |r: std::ops::Range<usize>| b[r].iter().map(|x| format!("{x:02x}")).collect::<String>();
    format!(
        "{}-{}-4{}-{:x}{}-{}",
        h(0..4),
        h(4..6),
        &h(6..8)[1..],
        8 | (b[8] & 3),
        &h(8..10)[1..],
        h(10..16)
    )
}

/// Five random lowercase alphanumerics, for `generateName`.
pub fn random_suffix() -> String {
    const CHARS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    (0..5)
        .map(|_| CHARS[rand::random_range(0..CHARS.len())] as char)
        .collect()
}

/// Why `name` is not a valid DNS-1123 subdomain (or label, when `label`), if it is not.
pub fn invalid_name(name: &str, label: bool) -> Option<String> {
    let max = if label { 63 } else { 253 };
    if name.is_empty() {
        return Some("name or generateName is required".into());
    }
    if name.len() > max {
        return Some(format!("must be no more than {max} characters"));
    }
    let ok_char =
        |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || (!label && c == '.');
    let edges = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    if !name.chars().all(ok_char) || !edges(name.chars().next()) || !edges(name.chars().last()) {
        let what = if label {
            "RFC 1123 label"
        } else {
            "RFC 1123 subdomain"
        };
        return Some(format!(
            "a lowercase {what} must consist of lower case alphanumeric characters, '-'{} and must start and end with an alphanumeric character",
            if label { "" } else { " or '.'" }
        ));
    }
    None
}

/// Whether `a` and `b` are the same object apart from `status`.
pub fn same_but_status(a: &Value, b: &Value) -> bool {
    match (a.as_object(), b.as_object()) {
        (Some(a), Some(b)) => {
            let rest = |m: &'_ serde_json::Map<String, Value>| {
                m.len() - usize::from(m.contains_key("status"))
            };
            rest(a) == rest(b)
                && a.iter()
                    .filter(|(k, _)| *k != "status")
                    .all(|(k, v)| b.get(k) == Some(v))
        }
        _ => false,
    }
}

/// Whether two objects agree outside `metadata`, `status`, `apiVersion` and `kind`: what
/// `generation` tracks.
pub fn same_spec(a: &Value, b: &Value) -> bool {
    let skip = |k: &str| matches!(k, "metadata" | "status" | "apiVersion" | "kind");
    match (a.as_object(), b.as_object()) {
        (Some(a), Some(b)) => a
            .iter()
            .filter(|(k, _)| !skip(k))
            .eq(b.iter().filter(|(k, _)| !skip(k))),
        _ => a == b,
    }
}

/// The object's finalizers.
pub fn finalizers(obj: &Value) -> Vec<String> {
    obj["metadata"]["finalizers"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|f| f.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// Parses a request body as JSON, or YAML when the content type says so.
pub fn parse_body(body: &[u8], content_type: &str) -> Result<Value, String> {
    if content_type.contains("yaml") {
        let text = std::str::from_utf8(body).map_err(|e| format!("body is not UTF-8: {e}"))?;
        serde_saphyr::from_str::<Value>(text)
            .map_err(|e| format!("error converting YAML to JSON: {e}"))
    } else {
        serde_json::from_slice(body)
            .map_err(|e| format!("couldn't get version/kind; json parse error: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uids_look_like_version_4_uuids() {
        let u = new_uid();
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        assert!(u.chars().all(|c| c == '-' || c.is_ascii_hexdigit()));
    }

    #[test]
    fn only_changes_outside_metadata_and_status_count_as_spec_changes() {
        let a =
            serde_json::json!({"metadata": {"name": "a"}, "spec": {"x": 1}, "status": {"s": 1}});
        let b =
            serde_json::json!({"metadata": {"name": "b"}, "spec": {"x": 1}, "status": {"s": 2}});
        let c = serde_json::json!({"metadata": {"name": "a"}, "spec": {"x": 2}});
        assert!(same_spec(&a, &b));
        assert!(!same_spec(&a, &c));
    }

    #[test]
    fn names_follow_rfc_1123() {
        assert!(invalid_name("a-b.c", false).is_none());
        assert!(invalid_name("a.b", true).is_some());
        assert!(invalid_name("Bad", false).is_some());
        assert!(invalid_name("-x", false).is_some());
        assert!(invalid_name(&"a".repeat(64), true).is_some());
    }
}
