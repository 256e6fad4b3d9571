//! CEL for admission: the Kubernetes function library (per thread), policy expressions compiled
//! once and kept by their text, JSON values as a real API server hands them to CEL, evaluation
//! with the API server's error texts. The parent (`admission`) decides what is evaluated when.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use kube_cel::KubeCelExt;
use kube_cel::cel::objects::{Key, Map};
use kube_cel::cel::{Context, ExecutionError, Program, Value as CelValue};
use serde_json::Value;

/// Distinct policy expressions kept compiled; past this the cache starts over.
const PROGRAM_CACHE_CAP: usize = 4096;

pub(super) type Compiled = Result<Arc<Program>, String>;

pub(super) fn program_cache() -> &'static Mutex<HashMap<String, Compiled>> {
    static CACHE: OnceLock<Mutex<HashMap<String, Compiled>>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

thread_local! {
    /// The Kubernetes CEL function library, registered once per thread: the parent scope of
    /// every policy evaluation (CRD rules run in `netrollout_crdcheck`).
    pub(super) static LIBRARY: Context<'static> = Context::default().with_all();
}

/// A policy expression, compiled on first use.
pub(super) fn program(expr: &str) -> Compiled {
    let Ok(mut cache) = program_cache().lock() else {
        return Err("the CEL program cache is poisoned".into());
    };
    if let Some(p) = cache.get(expr) {
        return p.clone();
    }
    let compiled = Program::compile(expr)
        .map(Arc::new)
        .map_err(|e| format!("compilation error in {expr:?}: {e}"));
    if cache.len() >= PROGRAM_CACHE_CAP {
        cache.clear();
    }
    cache.insert(expr.to_string(), compiled.clone());
    compiled
}

pub(super) fn bind(ctx: &mut Context<'_>, name: &str, v: &Value) -> Result<(), String> {
    ctx.add_variable_from_value(name, to_cel(v));
    Ok(())
}

/// A JSON value as CEL sees it in a real API server: a JSON integer is an `int` (`i64`; `uint`
/// only past `i64::MAX`), so `object.spec.level != 42` compares like with like. (The `cel`
/// crate's serde path makes every non-negative integer a `uint`, which never equals the
/// literal `42`.)
pub(super) fn to_cel(v: &Value) -> CelValue {
    match v {
        Value::Null => CelValue::Null,
        Value::Bool(b) => CelValue::Bool(*b),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => CelValue::Int(i),
            (None, Some(u)) => CelValue::UInt(u),
            _ => CelValue::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => CelValue::String(Arc::new(s.clone())),
        Value::Array(items) => CelValue::List(Arc::new(items.iter().map(to_cel).collect())),
        Value::Object(m) => {
            let map: HashMap<Key, CelValue> = m
                .iter()
                .map(|(k, v)| (Key::String(Arc::new(k.clone())), to_cel(v)))
                .collect();
            CelValue::Map(Map { map: Arc::new(map) })
        }
    }
}

pub(super) fn eval(ctx: &Context<'_>, expr: &str) -> Result<CelValue, String> {
    program(expr)?
        .execute(ctx)
        .map_err(|e: ExecutionError| format!("expression '{expr}' resulted in error: {e}"))
}

pub(super) fn eval_bool(ctx: &Context<'_>, expr: &str) -> Result<bool, String> {
    match eval(ctx, expr)? {
        CelValue::Bool(b) => Ok(b),
        other => Err(format!("expression '{expr}' must be a bool, not {other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_integers_are_cel_ints_as_in_a_real_api_server() {
        let mut ctx = Context::default().with_all();
        let object = json!({"spec": {"level": 42, "ratio": 0.5, "big": u64::MAX, "tags": ["a"]}});
        bind(&mut ctx, "object", &object).unwrap();
        assert!(!eval_bool(&ctx, "object.spec.level != 42").unwrap());
        assert!(eval_bool(&ctx, "object.spec.level == 42 && object.spec.level > -1").unwrap());
        assert!(eval_bool(&ctx, "object.spec.ratio == 0.5").unwrap());
        assert!(eval_bool(&ctx, "object.spec.big == 18446744073709551615u").unwrap());
        assert!(eval_bool(&ctx, "object.spec.tags == ['a']").unwrap());
    }

    #[test]
    fn a_policy_expression_is_compiled_once_and_a_bad_one_fails_every_time() {
        let a = program("1 + 2 == 3 && 'cache-test'.size() > 0").unwrap();
        let b = program("1 + 2 == 3 && 'cache-test'.size() > 0").unwrap();
        assert!(
            Arc::ptr_eq(&a, &b),
            "the second use must reuse the compiled program"
        );
        for _ in 0..2 {
            let e = program("1 +").unwrap_err();
            assert!(e.contains("compilation error in \"1 +\""), "{e}");
        }
    }
}
