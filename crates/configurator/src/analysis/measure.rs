//! One check measured: its success condition (the small grammar `result <op> number`), the
//! number in a Prometheus query answer, and the tries a check gets ([`run_check`]).

use std::future::Future;
use std::time::Duration;

use netrollout_api::AnalysisCheck;

/// A success condition, `result <op> number`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SuccessCondition {
    op: Op,
    value: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl SuccessCondition {
    /// Parses `result == 0`, `result<0.01`, `result >= 1e3` (spaces optional).
    ///
    /// # Errors
    /// A sentence naming the condition and the grammar.
    pub fn parse(text: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "success condition {text:?} is not `result <op> number` with <op> one of ==, !=, <, <=, >, >= (e.g. `result == 0`, `result < 0.01`)"
            )
        };
        let rest = text
            .trim()
            .strip_prefix("result")
            .ok_or_else(bad)?
            .trim_start();
        let (op, number) = [
            ("==", Op::Eq),
            ("!=", Op::Ne),
            ("<=", Op::Le),
            (">=", Op::Ge),
            ("<", Op::Lt),
            (">", Op::Gt),
        ]
        .into_iter()
        .find_map(|(s, op)| rest.strip_prefix(s).map(|n| (op, n)))
        .ok_or_else(bad)?;
        let value: f64 = number.trim().parse().map_err(|_| bad())?;
        if !value.is_finite() {
            return Err(bad());
        }
        Ok(Self { op, value })
    }

    /// Whether `result` meets the condition (NaN never does; callers treat NaN as inconclusive).
    pub fn holds(self, result: f64) -> bool {
        let v = self.value;
        match self.op {
            Op::Eq => result == v,
            Op::Ne => result != v,
            Op::Lt => result < v,
            Op::Le => result <= v,
            Op::Gt => result > v,
            Op::Ge => result >= v,
        }
    }
}

/// What one query of Prometheus gave.
#[derive(Debug, Clone, PartialEq)]
pub enum Sample {
    /// A number.
    Value(f64),
    /// No number to judge: why (no series, NaN, Prometheus unreachable or refusing the query).
    Inconclusive(String),
}

/// The number in a `/api/v1/query` answer: a scalar, or a vector of exactly one series.
pub fn sample_of(body: &str) -> Sample {
    let inconclusive = |why: String| Sample::Inconclusive(why);
    let v: serde_json::Value = match serde_json::from_str(body) {
        Ok(v) => v,
        Err(e) => {
            return inconclusive(format!(
                "Prometheus answered something that is not JSON ({e})"
            ));
        }
    };
    if v["status"] != "success" {
        return inconclusive(format!(
            "Prometheus refused the query: {} {}",
            v["errorType"].as_str().unwrap_or("error"),
            v["error"].as_str().unwrap_or("(no message)")
        ));
    }
    let data = &v["data"];
    let pair = match data["resultType"].as_str() {
        Some("scalar") => &data["result"],
        Some("vector") => match data["result"].as_array().map(Vec::as_slice) {
            Some([one]) => &one["value"],
            Some([]) | None => return inconclusive("the query returned no series".into()),
            Some(many) => {
                return inconclusive(format!(
                    "the query returned {} series; it must return one (wrap it in sum(...), max(...) or count(...))",
                    many.len()
                ));
            }
        },
        other => {
            return inconclusive(format!(
                "the query returned a {} result; it must return a scalar or one series",
                other.unwrap_or("missing")
            ));
        }
    };
    match pair[1].as_str().map(str::parse::<f64>) {
        Some(Ok(x)) if x.is_nan() => inconclusive("the query returned NaN".into()),
        Some(Ok(x)) => Sample::Value(x),
        _ => inconclusive(format!("the query's value {} is not a number", pair[1])),
    }
}

/// How a check ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// It passed.
    pub passed: bool,
    /// The last value measured, if any.
    pub value: Option<f64>,
    /// The measurement in words.
    pub message: String,
}

/// Measures `check` with `query` until it passes, fails more than `failureLimit` times, or is
/// inconclusive more than `inconclusiveLimit` times (which fails it too), waiting
/// `intervalSeconds` with `sleep` between two measurements.
pub async fn run_check<Q, QF, S, SF>(check: &AnalysisCheck, mut query: Q, mut sleep: S) -> Outcome
where
    Q: FnMut() -> QF,
    QF: Future<Output = Sample>,
    S: FnMut(Duration) -> SF,
    SF: Future<Output = ()>,
{
    let condition = match SuccessCondition::parse(&check.success_condition) {
        Ok(c) => c,
        Err(message) => {
            return Outcome {
                passed: false,
                value: None,
                message,
            };
        }
    };
    let (mut failed, mut inconclusive) = (0u32, 0u32);
    let mut last = None;
    loop {
        match query().await {
            Sample::Value(x) if condition.holds(x) => {
                return Outcome {
                    passed: true,
                    value: Some(x),
                    message: format!("result {x} meets `{}`", check.success_condition.trim()),
                };
            }
            Sample::Value(x) => {
                failed += 1;
                last = Some(x);
                if failed > check.failure_limit {
                    return Outcome {
                        passed: false,
                        value: Some(x),
                        message: format!(
                            "result {x} does not meet `{}` ({failed} failed measurement(s), failureLimit {})",
                            check.success_condition.trim(),
                            check.failure_limit
                        ),
                    };
                }
            }
            Sample::Inconclusive(why) => {
                inconclusive += 1;
                if inconclusive > check.inconclusive_limit {
                    return Outcome {
                        passed: false,
                        value: last,
                        message: format!(
                            "inconclusive {inconclusive} time(s), more than inconclusiveLimit {}: {why}",
                            check.inconclusive_limit
                        ),
                    };
                }
            }
        }
        sleep(Duration::from_secs(u64::from(check.interval_seconds))).await;
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;

    #[test]
    fn success_conditions_parse_the_six_comparisons_and_refuse_anything_else_with_the_grammar() {
        let holds = |c: &str, x: f64| SuccessCondition::parse(c).unwrap().holds(x);
        assert!(holds("result == 0", 0.0) && !holds("result == 0", 1.0));
        assert!(holds("result != 0", 2.0) && !holds("result!=0", 0.0));
        assert!(holds(" result < 0.01 ", 0.001) && !holds("result < 0.01", 0.01));
        assert!(holds("result <= 0.01", 0.01) && holds("result >= 1e3", 1000.0));
        assert!(holds("result > -1", 0.0) && !holds("result > -1", -1.0));
        for bad in [
            "",
            "result",
            "result = 0",
            "x == 0",
            "result == zero",
            "result == NaN",
            "result == 0 && result < 1",
        ] {
            let e = SuccessCondition::parse(bad).unwrap_err();
            assert!(e.contains("is not `result <op> number`"), "{bad}: {e}");
        }
    }

    #[test]
    fn a_query_answer_gives_a_number_only_from_a_scalar_or_one_series() {
        let vector = |series: &str| {
            format!(
                r#"{{"status":"success","data":{{"resultType":"vector","result":[{series}]}}}}"#
            )
        };
        assert_eq!(
            sample_of(&vector(r#"{"metric":{},"value":[1700000000.1,"3"]}"#)),
            Sample::Value(3.0)
        );
        assert_eq!(
            sample_of(r#"{"status":"success","data":{"resultType":"scalar","result":[1,"0.5"]}}"#),
            Sample::Value(0.5)
        );
        let why = |body: &str| match sample_of(body) {
            Sample::Inconclusive(w) => w,
            Sample::Value(x) => panic!("{body}: {x}"),
        };
        assert!(why(&vector("")).contains("no series"));
        assert!(why(&vector(r#"{"value":[1,"1"]},{"value":[1,"2"]}"#)).contains("2 series"));
        assert!(why(&vector(r#"{"value":[1,"NaN"]}"#)).contains("NaN"));
        assert!(
            why(r#"{"status":"error","errorType":"bad_data","error":"parse error at char 4"}"#)
                .contains("bad_data parse error at char 4")
        );
        assert!(why("<html>").contains("not JSON"));
    }

    fn check(failure_limit: u32, inconclusive_limit: u32) -> AnalysisCheck {
        AnalysisCheck {
            name: "lost".into(),
            query: "sum(x)".into(),
            success_condition: "result == 0".into(),
            interval_seconds: 2,
            inconclusive_limit,
            failure_limit,
            initial_delay_seconds: 0,
        }
    }

    /// Runs `check` over the `samples` in turn; returns the outcome and the sleeps taken.
    fn run(check: &AnalysisCheck, samples: Vec<Sample>) -> (Outcome, usize) {
        let samples = RefCell::new(samples.into_iter());
        let sleeps = RefCell::new(0);
        let outcome = futures::executor::block_on(run_check(
            check,
            || {
                let s = samples.borrow_mut().next().expect("no more samples");
                async move { s }
            },
            |d| {
                assert_eq!(d, Duration::from_secs(2));
                *sleeps.borrow_mut() += 1;
                async {}
            },
        ));
        (outcome, sleeps.into_inner())
    }

    #[test]
    fn inconclusive_measurements_are_retried_up_to_the_limit_then_fail_the_check() {
        let none = || Sample::Inconclusive("the query returned no series".into());
        let (o, sleeps) = run(&check(0, 2), vec![none(), none(), Sample::Value(0.0)]);
        assert!(o.passed && sleeps == 2, "{o:?}");
        let (o, sleeps) = run(&check(0, 2), vec![none(), none(), none()]);
        assert!(!o.passed && sleeps == 2, "{o:?}");
        assert!(o.message.contains("inconclusive 3 time(s), more than inconclusiveLimit 2: the query returned no series"), "{}", o.message);
    }

    #[test]
    fn failed_measurements_fail_the_check_past_the_failure_limit() {
        let (o, sleeps) = run(&check(0, 3), vec![Sample::Value(2.0)]);
        assert!(!o.passed && sleeps == 0 && o.value == Some(2.0), "{o:?}");
        assert!(
            o.message.contains("result 2 does not meet `result == 0`"),
            "{}",
            o.message
        );
        let (o, _) = run(&check(1, 3), vec![Sample::Value(2.0), Sample::Value(0.0)]);
        assert!(o.passed, "{o:?}");
    }
}
