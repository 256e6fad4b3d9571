//! Validation of custom objects against their CRD's `openAPIV3Schema` (structural subset):
//! types, required, enum, minimum/maximum, length and item limits, pattern, nullable,
//! int-or-string, allOf/anyOf/oneOf/not, and unknown fields (reported for
//! `fieldValidation=Strict`, otherwise pruned) unless `x-kubernetes-preserve-unknown-fields`.
//! CEL rules (`x-kubernetes-validations`) are evaluated in `admission`.

use serde_json::{Map, Value};

/// What validation found.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Outcome {
    /// `(field path, message)` for each invalid value.
    pub invalid: Vec<(String, String)>,
    /// Paths of fields the schema does not know.
    pub unknown: Vec<String>,
}

/// Validates `obj` (a whole object) against `schema`; removes unknown fields when `prune`.
pub fn validate(schema: &Value, obj: &mut Value, prune: bool) -> Outcome {
    let mut out = Outcome::default();
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return out;
    };
    let preserve = schema["x-kubernetes-preserve-unknown-fields"] == true;
    if let Some(map) = obj.as_object_mut() {
        let mut unknown = vec![];
        for (k, v) in map.iter_mut() {
            match (k.as_str(), props.get(k)) {
                ("apiVersion" | "kind" | "metadata", _) => {}
                (_, Some(s)) => walk(s, v, k.clone(), &mut out, prune),
                (_, None) if !preserve => unknown.push(k.clone()),
                _ => {}
            }
        }
        for k in unknown {
            if prune {
                map.remove(&k);
            }
            out.unknown.push(k);
        }
        required(schema, map, "", &mut out);
    }
    out
}

fn required(schema: &Value, map: &Map<String, Value>, path: &str, out: &mut Outcome) {
    for r in schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if !map.contains_key(r) {
            out.invalid.push((join(path, r), "Required value".into()));
        }
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn show(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn walk(s: &Value, v: &mut Value, path: String, out: &mut Outcome, prune: bool) {
    let bad = |out: &mut Outcome, msg: String| out.invalid.push((path.clone(), msg));
    if v.is_null() {
        if s["nullable"] != true {
            let t = s["type"].as_str().unwrap_or("object");
            bad(
                out,
                format!("Invalid value: \"null\": {path} in body must be of type {t}: \"null\""),
            );
        }
        return;
    }
    let int_or_string = s["x-kubernetes-int-or-string"] == true;
    if let Some(t) = s["type"].as_str().filter(|_| !int_or_string) {
        let have = type_name(v);
        let ok = have == t
            || (t == "number" && have == "integer")
            || (t == "integer" && v.as_f64().is_some_and(|f| f.fract() == 0.0));
        if !ok {
            return bad(
                out,
                format!(
                    "Invalid value: \"{have}\": {path} in body must be of type {t}: \"{have}\""
                ),
            );
        }
    } else if int_or_string && !(v.is_string() || type_name(v) == "integer") {
        return bad(
            out,
            format!(
                "Invalid value: {}: {path} in body must be of type integer or string",
                show(v)
            ),
        );
    }
    if let Some(e) = s["enum"].as_array()
        && !e.contains(v)
    {
        let allowed: Vec<String> = e.iter().map(show).collect();
        bad(
            out,
            format!(
                "Unsupported value: {}: supported values: {}",
                show(v),
                allowed.join(", ")
            ),
        );
    }
    if let Some(f) = v.as_f64() {
        let (excl_min, excl_max) = (s["exclusiveMinimum"] == true, s["exclusiveMaximum"] == true);
        if let Some(min) = s["minimum"].as_f64()
            && (f < min || (excl_min && f == min))
        {
            let op = if excl_min {
                "greater than"
            } else {
                "greater than or equal to"
            };
            bad(
                out,
                format!(
                    "Invalid value: {}: {path} in body should be {op} {}",
                    show(v),
                    s["minimum"]
                ),
            );
        }
        if let Some(max) = s["maximum"].as_f64()
            && (f > max || (excl_max && f == max))
        {
            let op = if excl_max {
                "less than"
            } else {
                "less than or equal to"
            };
            bad(
                out,
                format!(
                    "Invalid value: {}: {path} in body should be {op} {}",
                    show(v),
                    s["maximum"]
                ),
            );
        }
    }
    if let Some(text) = v.as_str() {
        let n = text.chars().count() as u64;
        if let Some(max) = s["maxLength"].as_u64().filter(|m| n > *m) {
            bad(out, format!("Too long: may not be more than {max} bytes"));
        }
        if let Some(min) = s["minLength"].as_u64().filter(|m| n < *m) {
            bad(
                out,
                format!(
                    "Invalid value: {}: {path} in body should be at least {min} chars long",
                    show(v)
                ),
            );
        }
        if let Some(p) = s["pattern"].as_str() {
            match regex::Regex::new(p) {
                Ok(re) if !re.is_match(text) => bad(
                    out,
                    format!(
                        "Invalid value: {}: {path} in body should match '{p}'",
                        show(v)
                    ),
                ),
                Ok(_) => {}
                Err(e) => bad(
                    out,
                    format!("Invalid value: schema pattern {p:?} does not compile: {e}"),
                ),
            }
        }
    }
    combinators(s, v, &path, out);
    match v {
        Value::Array(items) => {
            let n = items.len() as u64;
            if let Some(max) = s["maxItems"].as_u64().filter(|m| n > *m) {
                bad(out, format!("Too many: {n}: must have at most {max} items"));
            }
            if let Some(min) = s["minItems"].as_u64().filter(|m| n < *m) {
                bad(
                    out,
                    format!("Invalid value: {n}: {path} in body should have at least {min} items"),
                );
            }
            if let Some(is) = s.get("items") {
                for (i, item) in items.iter_mut().enumerate() {
                    walk(is, item, format!("{path}[{i}]"), out, prune);
                }
            }
            duplicates(s, items, &path, out);
        }
        Value::Object(map) => object(s, map, &path, out, prune),
        _ => {}
    }
}

fn object(s: &Value, map: &mut Map<String, Value>, path: &str, out: &mut Outcome, prune: bool) {
    let props = s["properties"].as_object();
    let additional = s.get("additionalProperties");
    let preserve = s["x-kubernetes-preserve-unknown-fields"] == true
        || s["x-kubernetes-embedded-resource"] == true;
    let mut unknown = vec![];
    for (k, child) in map.iter_mut() {
        let p = join(path, k);
        match (props.and_then(|p| p.get(k)), additional) {
            (Some(cs), _) => walk(cs, child, p, out, prune),
            (None, Some(a)) if a.is_object() => walk(a, child, p, out, prune),
            (None, Some(Value::Bool(true))) => {}
            (None, _) if preserve => {}
            (None, _) => unknown.push(k.clone()),
        }
    }
    for k in unknown {
        if prune {
            map.remove(&k);
        }
        out.unknown.push(join(path, &k));
    }
    let n = map.len() as u64;
    if let Some(max) = s["maxProperties"].as_u64().filter(|m| n > *m) {
        out.invalid.push((
            path.to_string(),
            format!("Too many: {n}: must have at most {max} items"),
        ));
    }
    required(s, map, path, out);
}

/// `x-kubernetes-list-type: map` (each item's `x-kubernetes-list-map-keys` once in the list)
/// and `set` (each item once): a repeated item is refused at its index, in kube-apiserver's
/// words.
fn duplicates(s: &Value, items: &[Value], path: &str, out: &mut Outcome) {
    let key = |item: &Value| -> Option<(Value, String)> {
        match s["x-kubernetes-list-type"].as_str()? {
            "map" => {
                let keys = s["x-kubernetes-list-map-keys"].as_array()?;
                let fields: Vec<String> = (keys.iter().filter_map(Value::as_str))
                    .filter_map(|k| Some(format!("{k:?}:{}", item.get(k)?)))
                    .collect();
                let shown = format!("map[string]interface {{}}{{{}}}", fields.join(", "));
                let id = Value::Array(
                    keys.iter()
                        .map(|k| item[k.as_str().unwrap_or("")].clone())
                        .collect(),
                );
                Some((id, shown))
            }
            "set" => Some((item.clone(), show(item))),
            _ => None,
        }
    };
    let mut seen = std::collections::HashSet::new();
    for (i, item) in items.iter().enumerate() {
        let Some((id, shown)) = key(item) else {
            return;
        };
        if !seen.insert(id.to_string()) {
            out.invalid
                .push((format!("{path}[{i}]"), format!("Duplicate value: {shown}")));
        }
    }
}

fn combinators(s: &Value, v: &Value, path: &str, out: &mut Outcome) {
    let passes = |sub: &Value| {
        let mut o = Outcome::default();
        walk(sub, &mut v.clone(), path.to_string(), &mut o, false);
        o.invalid.is_empty()
    };
    for sub in s["allOf"].as_array().into_iter().flatten() {
        let mut o = Outcome::default();
        walk(sub, &mut v.clone(), path.to_string(), &mut o, false);
        out.invalid.extend(o.invalid);
    }
    if let Some(any) = s["anyOf"].as_array()
        && !any.iter().any(passes)
    {
        out.invalid.push((
            path.to_string(),
            "Invalid value: must validate at least one schema (anyOf)".into(),
        ));
    }
    if let Some(one) = s["oneOf"].as_array()
        && one.iter().filter(|x| passes(x)).count() != 1
    {
        out.invalid.push((
            path.to_string(),
            "Invalid value: must validate one and only one schema (oneOf)".into(),
        ));
    }
    if let Some(not) = s.get("not")
        && passes(not)
    {
        out.invalid.push((
            path.to_string(),
            "Forbidden: must not validate the schema (not)".into(),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {"spec": {"type": "object", "required": ["seq"], "properties": {
            "seq": {"type": "integer", "minimum": 1, "maximum": 65534},
            "vrf": {"type": "string", "maxLength": 12, "pattern": "^[a-z]+$"},
            "action": {"type": "string", "enum": ["permit", "deny"]},
            "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}})
    }

    #[test]
    fn a_valid_object_passes_untouched() {
        let mut o = json!({"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "a"}, "spec": {"seq": 5, "vrf": "abc", "extra": {"any": 1}}});
        let before = o.clone();
        assert_eq!(validate(&schema(), &mut o, true), Outcome::default());
        assert_eq!(o, before);
    }

    #[test]
    fn ranges_lengths_patterns_enums_types_and_required_are_enforced() {
        let mut o = json!({"spec": {"seq": 70000, "vrf": "Way-Too-Long-Name", "action": "maybe"}});
        let fields: Vec<String> = validate(&schema(), &mut o, true)
            .invalid
            .into_iter()
            .map(|(f, _)| f)
            .collect();
        assert_eq!(
            fields,
            vec!["spec.action", "spec.seq", "spec.vrf", "spec.vrf"]
        );
        let mut o = json!({"spec": {"vrf": 3}});
        let out = validate(&schema(), &mut o, true);
        assert_eq!(out.invalid.len(), 2, "{out:?}");
    }

    #[test]
    fn a_list_keyed_by_name_refuses_a_key_twice_naming_the_second_item() {
        // As kube-apiserver: `x-kubernetes-list-type: map` keys are unique, `set` items are.
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "checks": {"type": "array", "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "required": ["name"], "properties": {
                    "name": {"type": "string"}, "query": {"type": "string"}}}},
            "tags": {"type": "array", "x-kubernetes-list-type": "set",
                "items": {"type": "string"}}}}}});
        let mut ok = json!({"spec": {"checks": [{"name": "a", "query": "x"}, {"name": "b", "query": "x"}],
            "tags": ["a", "b"]}});
        assert_eq!(validate(&schema, &mut ok, false), Outcome::default());
        let mut twice = json!({"spec": {"checks": [{"name": "a", "query": "x"}, {"name": "b"}, {"name": "a", "query": "y"}],
            "tags": ["a", "b", "a"]}});
        let out = validate(&schema, &mut twice, false);
        assert_eq!(
            out.invalid,
            vec![
                (
                    "spec.checks[2]".to_string(),
                    r#"Duplicate value: map[string]interface {}{"name":"a"}"#.to_string()
                ),
                (
                    "spec.tags[2]".to_string(),
                    r#"Duplicate value: "a""#.to_string()
                ),
            ]
        );
    }

    #[test]
    fn unknown_fields_are_reported_and_pruned() {
        let mut o = json!({"spec": {"seq": 1, "bogus": true}, "other": 1});
        let out = validate(&schema(), &mut o, true);
        assert_eq!(
            out.unknown,
            vec!["spec.bogus".to_string(), "other".to_string()]
        );
        assert_eq!(o, json!({"spec": {"seq": 1}}));
    }
}
