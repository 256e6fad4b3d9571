//! A CRD's `x-kubernetes-validations`, compiled once and evaluated only where they are.
//!
//! `kube-cel`'s walker converts the value at every schema node it visits into a CEL value,
//! whether or not the node has a rule, so a write of a NodeNetworkConfig (rules four levels
//! down in `spec.config.vrfs[].policies[]`) converted its whole object, then its whole spec,
//! and so on down, for every node of the schema. Two steps keep the result the same and the
//! work where the rules are:
//!
//! - [`compile`] drops the schema subtrees that hold no rule, except below a node that has
//!   rules (a rule sees its whole value, defaults and formats included, so nothing under it is
//!   dropped). A dropped subtree could only have produced errors from rules, and it has none.
//! - [`validate`] walks down plain object nodes without rules itself (no conversion) and hands
//!   the validator the first node that has rules, an array, a map or a combinator, then puts
//!   the path walked in front of each error's field path. Where a missing child has a schema
//!   default (the validator would default it into existence first) it hands over at that node.
//!
//! `kube-cel`'s `isCIDR`, `cidr()`, `isIP` and `ip()` parse with the `ipnet` crate, which takes
//! IPv4 parts and prefix lengths with leading zeros (`010.0.0.0/08`); Kubernetes (Go's
//! `net/netip`) refuses them. [`compile`] rewrites each call so that such a text is refused
//! (`isCIDR`/`isIP` false, `cidr()`/`ip()` an evaluation error), as a real API server does:
//! [`strict_ip_calls`].

use kube_cel::{CompiledSchema, ValidationError, Validator};
use serde_json::Value;

/// Compiles the rules of `schema` and drops the subtrees that hold none.
pub fn compile(schema: &Value) -> CompiledSchema {
    let mut schema = schema.clone();
    strict_rules(&mut schema);
    let mut compiled = kube_cel::compile_schema(&schema);
    prune(&mut compiled);
    compiled
}

/// Keeps only what a rule can see; returns whether `s` holds any rule (or compile error).
fn prune(s: &mut CompiledSchema) -> bool {
    if !s.validations.is_empty() {
        return true;
    }
    s.properties.retain(|_, c| prune(c));
    if s.items.as_mut().is_some_and(|i| !prune(i)) {
        s.items = None;
    }
    if s.additional_properties.as_mut().is_some_and(|a| !prune(a)) {
        s.additional_properties = None;
    }
    s.all_of.retain_mut(prune);
    s.one_of.retain_mut(prune);
    s.any_of.retain_mut(prune);
    !s.properties.is_empty() || !only_properties(s)
}

/// Whether `s` has no sub-schema other than named properties: no items, no additional
/// properties, no combinator.
fn only_properties(s: &CompiledSchema) -> bool {
    s.items.is_none()
        && s.additional_properties.is_none()
        && s.all_of.is_empty()
        && s.one_of.is_empty()
        && s.any_of.is_empty()
}

/// Evaluates the rules of `compiled` on `object` (`old` on update); the errors as the
/// validator reports them from the root.
pub fn validate(
    validator: &Validator,
    compiled: &CompiledSchema,
    object: &Value,
    old: Option<&Value>,
) -> Vec<ValidationError> {
    let mut errors = vec![];
    walk(validator, compiled, object, old, "", &mut errors);
    errors
}

fn walk(
    validator: &Validator,
    s: &CompiledSchema,
    value: &Value,
    old: Option<&Value>,
    path: &str,
    errors: &mut Vec<ValidationError>,
) {
    let plain = s.validations.is_empty() && only_properties(s);
    let defaulted_child = s
        .properties
        .iter()
        .any(|(k, c)| c.default.is_some() && value.get(k).is_none());
    let Some(obj) = value.as_object().filter(|_| plain && !defaulted_child) else {
        if let Err(e) = validator.validate_compiled(s, value, old) {
            errors.extend(e.into_vec().into_iter().map(|mut e| {
                e.field_path = join(path, &e.field_path);
                e
            }));
        }
        return;
    };
    // In the map's order, as the validator walks properties too.
    for (name, child) in &s.properties {
        if let Some(v) = obj.get(name) {
            let o = old.and_then(|o| o.get(name));
            walk(validator, child, v, o, &join(path, name), errors);
        }
    }
}

/// A decimal part with a leading zero: an IPv4 part before a `.` (after anything but a hex
/// digit, so IPv6 groups such as `0001` are left alone) or after one.
const LEADING_ZERO_IP: &str = r"(^|[^0-9A-Fa-f])0[0-9]+\.|\.0[0-9]+$";
/// [`LEADING_ZERO_IP`], and a prefix length with a leading zero.
const LEADING_ZERO_CIDR: &str = r"(^|[^0-9A-Fa-f])0[0-9]+\.|\.0[0-9]+(/|$)|/0[0-9]";

/// Rewrites the `rule` of every `x-kubernetes-validations` entry in `schema` with
/// [`strict_ip_calls`].
fn strict_rules(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::Array(rules)) = map.get_mut("x-kubernetes-validations") {
                for rule in rules {
                    if let Some(Value::String(text)) = rule.get_mut("rule") {
                        *text = strict_ip_calls(text);
                    }
                }
            }
            for (key, child) in map.iter_mut() {
                if key != "x-kubernetes-validations" {
                    strict_rules(child);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(strict_rules),
        _ => {}
    }
}

/// `rule` with every call of `isCIDR`, `cidr`, `isIP` and `ip` (not methods such as
/// `.ip()`, not inside string literals) guarded against leading zeros:
/// `isCIDR(x)` becomes `(isCIDR(x) && !(x).matches(RE))` and `cidr(x)` becomes
/// `cidr((x).matches(RE) ? '' : (x))`, which fails to evaluate like Kubernetes' `cidr()` does.
pub fn strict_ip_calls(rule: &str) -> String {
    const CALLS: [(&str, bool, &str); 4] = [
        ("isCIDR", true, LEADING_ZERO_CIDR),
        ("cidr", false, LEADING_ZERO_CIDR),
        ("isIP", true, LEADING_ZERO_IP),
        ("ip", false, LEADING_ZERO_IP),
    ];
    let b = rule.as_bytes();
    let mut out = String::with_capacity(rule.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'\'' || c == b'"' {
            let end = string_end(b, i);
            out.push_str(&rule[i..end]);
            i = end;
            continue;
        }
        let boundary =
            i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_' || b[i - 1] == b'.');
        let call = CALLS.iter().find(|(name, ..)| {
            boundary && rule[i..].starts_with(name) && b.get(i + name.len()) == Some(&b'(')
        });
        let Some((name, test, re)) = call else {
            let ch = rule[i..].chars().next().unwrap_or_default();
            out.push(ch);
            i += ch.len_utf8().max(1);
            continue;
        };
        let open = i + name.len();
        let Some(close) = matching_paren(b, open) else {
            // Unbalanced: leave the rest for the CEL compiler to report.
            out.push_str(&rule[i..]);
            break;
        };
        let arg = strict_ip_calls(&rule[open + 1..close]);
        let re = re.replace('\\', "\\\\");
        if *test {
            out.push_str(&format!("({name}({arg}) && !({arg}).matches('{re}'))"));
        } else {
            out.push_str(&format!("{name}(({arg}).matches('{re}') ? '' : ({arg}))"));
        }
        i = close + 1;
    }
    out
}

/// The index just past the string literal that starts at `start` (its quote).
fn string_end(b: &[u8], start: usize) -> usize {
    let quote = b[start];
    let mut i = start + 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            c if c == quote => return i + 1,
            _ => i += 1,
        }
    }
    b.len()
}

/// The index of the `)` that closes the `(` at `open`.
fn matching_paren(b: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = open;
    while i < b.len() {
        match b[i] {
            b'\'' | b'"' => {
                i = string_end(b, i);
                continue;
            }
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

fn join(base: &str, rest: &str) -> String {
    match (base.is_empty(), rest.is_empty()) {
        (true, _) => rest.to_string(),
        (false, true) => base.to_string(),
        // A rule's `fieldPath` starts with `.` (`.ge`): `spec.import[0].ge`, as Kubernetes says.
        (false, false) if rest.starts_with('[') || rest.starts_with('.') => format!("{base}{rest}"),
        (false, false) => format!("{base}.{rest}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "metadata": {"type": "object"},
                "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
                "spec": {"type": "object", "properties": {
                    "note": {"type": "string"},
                    "level": {"type": "integer", "default": 3,
                        "x-kubernetes-validations": [{"rule": "self < 10", "message": "level under 10"}]},
                    "frozen": {"type": "string",
                        "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "immutable"}]},
                    "routes": {"type": "array", "items": {"type": "object",
                        "x-kubernetes-validations": [{"rule": "!has(self.ge) || self.ge <= 32", "message": "ge at most 32"}],
                        "properties": {
                            "cidr": {"type": "string",
                                "x-kubernetes-validations": [{"rule": "isCIDR(self)", "message": "cidr must be a network"}]},
                            "ge": {"type": "integer"},
                            "tag": {"type": "object", "properties": {"x": {"type": "string", "default": "d"}}}
                        }}}
                }}
            }
        })
    }

    fn accepts(rule: &str, value: &str) -> bool {
        let schema = json!({"type": "object", "properties": {"v": {"type": "string",
            "x-kubernetes-validations": [{"rule": rule, "message": "refused"}]}}});
        let compiled = compile(&schema);
        validate(&Validator::new(), &compiled, &json!({ "v": value }), None).is_empty()
    }

    #[test]
    fn cidrs_and_ips_follow_kubernetes_and_refuse_leading_zeros() {
        for ok in [
            "10.0.0.0/8",
            "0.0.0.0/0",
            "10.100.0.0/16",
            "fd00:0001::/64",
            "::/0",
            "::1.2.3.4/128",
        ] {
            assert!(accepts("isCIDR(self)", ok), "{ok}");
            assert!(accepts("cidr(self).prefixLength() >= 0", ok), "{ok}");
        }
        for bad in [
            "010.050.000.000/16",
            "10.0.0.00/24",
            "10.0.0.0/016",
            "::ffff:01.2.3.4/128",
            "fe80::1%eth0/64",
            "::ffff:1.2.3.4/128",
        ] {
            assert!(!accepts("isCIDR(self)", bad), "{bad}");
            assert!(!accepts("cidr(self).prefixLength() >= 0", bad), "{bad}");
        }
        for ok in ["10.0.0.1", "fd00::0001", "0.0.0.0"] {
            assert!(accepts("isIP(self) && ip(self).family() > 0", ok), "{ok}");
        }
        for bad in [
            "10.0.0.01",
            "01.0.0.1",
            "10.00.0.1",
            "fe80::1%lo",
            "::ffff:1.2.3.4",
        ] {
            assert!(!accepts("isIP(self)", bad), "{bad}");
            assert!(!accepts("ip(self).family() > 0", bad), "{bad}");
        }
    }

    #[test]
    fn only_calls_outside_strings_are_rewritten() {
        assert_eq!(
            strict_ip_calls("cidr(self).ip() == x.isCIDR('cidr(a)')"),
            format!(
                "cidr((self).matches('{0}') ? '' : (self)).ip() == x.isCIDR('cidr(a)')",
                LEADING_ZERO_CIDR.replace('\\', "\\\\")
            )
        );
        let nested = strict_ip_calls("isCIDR(f(g('x)'), h))");
        assert!(
            nested.starts_with("(isCIDR(f(g('x)'), h)) && !(f(g('x)'), h)).matches("),
            "{nested}"
        );
        assert_eq!(
            strict_ip_calls("self.all(ip, ip.size() > 0)"),
            "self.all(ip, ip.size() > 0)"
        );
    }

    fn sorted(mut e: Vec<ValidationError>) -> Vec<(String, String)> {
        e.sort_by(|a, b| (&a.field_path, &a.message).cmp(&(&b.field_path, &b.message)));
        e.into_iter().map(|e| (e.field_path, e.message)).collect()
    }

    #[test]
    fn a_rule_field_path_is_joined_to_the_path_walked_without_a_double_dot() {
        assert_eq!(
            join("spec", ".advertiseNeighbors"),
            "spec.advertiseNeighbors"
        );
        assert_eq!(join("spec.import", "[0]"), "spec.import[0]");
        assert_eq!(join("spec", "ge"), "spec.ge");
    }

    #[test]
    fn the_pruned_walk_reports_what_the_full_walk_reports() {
        let full = kube_cel::compile_schema(&schema());
        let pruned = compile(&schema());
        assert!(
            !pruned.properties.contains_key("status"),
            "rule-free subtree kept"
        );
        assert!(
            !pruned.properties.contains_key("metadata"),
            "rule-free subtree kept"
        );
        let v = Validator::new();
        let old = json!({"metadata": {"name": "a"}, "spec": {"frozen": "x", "routes": []}});
        let cases = [
            json!({"metadata": {"name": "a"}, "status": {"phase": "ok"},
                   "spec": {"frozen": "y", "level": 12, "routes": [
                       {"cidr": "10.0.0.0/8", "ge": 40, "tag": {}},
                       {"cidr": "nope"}]}}),
            json!({"metadata": {"name": "a"}, "spec": {"frozen": "x", "routes": [{"cidr": "::/0"}]}}),
            json!({"metadata": {"name": "a"}}),
            json!({"metadata": {"name": "a"}, "spec": {}}),
        ];
        for obj in &cases {
            for o in [None, Some(&old)] {
                let want = match v.validate_compiled(&full, obj, o) {
                    Ok(()) => vec![],
                    Err(e) => e.into_vec(),
                };
                let got = validate(&v, &pruned, obj, o);
                assert_eq!(sorted(got), sorted(want), "object {obj} old {o:?}");
            }
        }
        // The first case really fails, with the paths named from the root.
        let got = sorted(validate(&v, &pruned, &cases[0], Some(&old)));
        let paths: Vec<&str> = got.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            paths,
            [
                "spec.frozen",
                "spec.level",
                "spec.routes[0]",
                "spec.routes[1].cidr"
            ]
        );
    }
}
