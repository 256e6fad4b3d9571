//! Just enough of Kubernetes' protobuf encoding to read the bodies `kubectl create namespace`
//! and `kubectl create configmap` send (kubectl's typed client always writes protobuf): the
//! `k8s\0` + `runtime.Unknown` envelope around a Namespace or ConfigMap with the usual
//! ObjectMeta fields. Anything else is refused by the caller with 415.

use serde_json::{Map, Value, json};

/// One protobuf field value.
enum Wire<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Fixed,
}

struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    fn varint(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let (&b, rest) = self.buf.split_first()?;
            self.buf = rest;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }

    fn next(&mut self) -> Option<Option<(u64, Wire<'a>)>> {
        if self.buf.is_empty() {
            return Some(None);
        }
        let key = self.varint()?;
        let wire = match key & 7 {
            0 => Wire::Varint(self.varint()?),
            2 => {
                let n = usize::try_from(self.varint()?).ok()?;
                if n > self.buf.len() {
                    return None;
                }
                let (b, rest) = self.buf.split_at(n);
                self.buf = rest;
                Wire::Bytes(b)
            }
            1 | 5 => {
                let n = if key & 7 == 1 { 8 } else { 4 };
                self.buf = self.buf.get(n..)?;
                Wire::Fixed
            }
            _ => return None,
        };
        Some(Some((key >> 3, wire)))
    }
}

/// Calls `f` for each field of a message; `None` if the message is malformed.
fn fields<'a>(buf: &'a [u8], mut f: impl FnMut(u64, Wire<'a>) -> Option<()>) -> Option<()> {
    let mut r = Reader { buf };
    while let Some((n, w)) = r.next()? {
        f(n, w)?;
    }
    Some(())
}

fn text(b: &[u8]) -> Option<String> {
    String::from_utf8(b.to_vec()).ok()
}

/// A `map<string, string>` entry.
fn entry(b: &[u8], into: &mut Map<String, Value>) -> Option<()> {
    let (mut k, mut v) = (String::new(), String::new());
    fields(b, |n, w| {
        match (n, w) {
            (1, Wire::Bytes(x)) => k = text(x)?,
            (2, Wire::Bytes(x)) => v = text(x)?,
            _ => {}
        }
        Some(())
    })?;
    into.insert(k, json!(v));
    Some(())
}

fn object_meta(b: &[u8]) -> Option<Value> {
    let mut m = Map::new();
    let (mut labels, mut annotations, mut finalizers) = (Map::new(), Map::new(), vec![]);
    fields(b, |n, w| {
        match (n, w) {
            (1, Wire::Bytes(x)) if !x.is_empty() => drop(m.insert("name".into(), json!(text(x)?))),
            (2, Wire::Bytes(x)) if !x.is_empty() => {
                drop(m.insert("generateName".into(), json!(text(x)?)))
            }
            (3, Wire::Bytes(x)) if !x.is_empty() => {
                drop(m.insert("namespace".into(), json!(text(x)?)))
            }
            (6, Wire::Bytes(x)) if !x.is_empty() => {
                drop(m.insert("resourceVersion".into(), json!(text(x)?)))
            }
            (11, Wire::Bytes(x)) => entry(x, &mut labels)?,
            (12, Wire::Bytes(x)) => entry(x, &mut annotations)?,
            (14, Wire::Bytes(x)) => finalizers.push(json!(text(x)?)),
            _ => {}
        }
        Some(())
    })?;
    for (k, v) in [("labels", labels), ("annotations", annotations)] {
        if !v.is_empty() {
            m.insert(k.into(), Value::Object(v));
        }
    }
    if !finalizers.is_empty() {
        m.insert("finalizers".into(), Value::Array(finalizers));
    }
    Some(Value::Object(m))
}

fn config_map(raw: &[u8], obj: &mut Map<String, Value>) -> Option<()> {
    let mut data = Map::new();
    fields(raw, |n, w| {
        match (n, w) {
            (1, Wire::Bytes(x)) => drop(obj.insert("metadata".into(), object_meta(x)?)),
            (2, Wire::Bytes(x)) => entry(x, &mut data)?,
            (4, Wire::Varint(v)) => drop(obj.insert("immutable".into(), json!(v != 0))),
            (3, _) => return None,
            _ => {}
        }
        Some(())
    })?;
    if !data.is_empty() {
        obj.insert("data".into(), Value::Object(data));
    }
    Some(())
}

fn namespace(raw: &[u8], obj: &mut Map<String, Value>) -> Option<()> {
    fields(raw, |n, w| {
        if let (1, Wire::Bytes(x)) = (n, w) {
            obj.insert("metadata".into(), object_meta(x)?);
        }
        Some(())
    })
}

/// The JSON form of a protobuf-encoded Namespace or ConfigMap, or `None` for anything else.
pub fn decode(body: &[u8]) -> Option<Value> {
    let unknown = body.strip_prefix(b"k8s\0")?;
    let (mut api_version, mut kind, mut raw) = (String::new(), String::new(), &[][..]);
    fields(unknown, |n, w| {
        match (n, w) {
            (1, Wire::Bytes(tm)) => fields(tm, |n, w| {
                match (n, w) {
                    (1, Wire::Bytes(x)) => api_version = text(x)?,
                    (2, Wire::Bytes(x)) => kind = text(x)?,
                    _ => {}
                }
                Some(())
            })?,
            (2, Wire::Bytes(x)) => raw = x,
            _ => {}
        }
        Some(())
    })?;
    let mut obj = Map::new();
    obj.insert("apiVersion".into(), json!(api_version));
    obj.insert("kind".into(), json!(kind));
    match (api_version.as_str(), kind.as_str()) {
        ("v1", "ConfigMap") => config_map(raw, &mut obj)?,
        ("v1", "Namespace") => namespace(raw, &mut obj)?,
        _ => return None,
    }
    Some(Value::Object(obj))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectl_create_configmap_bodies_decode() {
        // Captured from `kubectl create configmap foo --from-literal=a=b` (v1.32).
        let body = b"k8s\x00\n\x0f\n\x02v1\x12\tConfigMap\x12\x1d\n\x13\n\x03foo\x12\x00\x1a\x00\"\x00*\x002\x008\x00B\x00\x12\x06\n\x01a\x12\x01b\x1a\x00\"\x00";
        let v = decode(body).unwrap();
        assert_eq!(
            v,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "foo"}, "data": {"a": "b"}})
        );
    }

    #[test]
    fn other_kinds_and_garbage_are_not_decoded() {
        assert!(decode(b"k8s\x00\n\x0b\n\x02v1\x12\x05Other").is_none());
        assert!(decode(b"k8s\x00\n\xff").is_none());
        assert!(decode(b"{}").is_none());
    }
}
