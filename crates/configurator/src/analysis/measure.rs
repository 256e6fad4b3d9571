//! One check measured: its success condition (the small grammar `result <op> number`), the
//! number in a Prometheus query answer, and the tries a check gets ([`Tries`]).

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

/// The measurements of one check so far: a check is measured once per turn ([`Tries::judge`]),
/// and measured again one `intervalSeconds` later while it is neither passed nor failed, so no
/// wait happens inside a configurator pass.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tries {
    failed: u32,
    inconclusive: u32,
    last: Option<f64>,
}

impl Tries {
    /// Judges one measurement of `check` (`sample`): `Some` outcome when the check passed, or
    /// failed more than `failureLimit` times, or was inconclusive more than
    /// `inconclusiveLimit` times (which fails it too); `None`: measure again after the interval.
    pub fn judge(&mut self, check: &AnalysisCheck, sample: Sample) -> Option<Outcome> {
        let condition = match SuccessCondition::parse(&check.success_condition) {
            Ok(c) => c,
            Err(message) => {
                return Some(Outcome {
                    passed: false,
                    value: None,
                    message,
                });
            }
        };
        match sample {
            Sample::Value(x) if condition.holds(x) => Some(Outcome {
                passed: true,
                value: Some(x),
                message: format!("result {x} meets `{}`", check.success_condition.trim()),
            }),
            Sample::Value(x) => {
                self.failed += 1;
                self.last = Some(x);
                (self.failed > check.failure_limit).then(|| Outcome {
                    passed: false,
                    value: Some(x),
                    message: format!(
                        "result {x} does not meet `{}` ({} failed measurement(s), failureLimit {})",
                        check.success_condition.trim(),
                        self.failed,
                        check.failure_limit
                    ),
                })
            }
            Sample::Inconclusive(why) => {
                self.inconclusive += 1;
                (self.inconclusive > check.inconclusive_limit).then(|| Outcome {
                    passed: false,
                    value: self.last,
                    message: format!(
                        "inconclusive {} time(s), more than inconclusiveLimit {}: {why}",
                        self.inconclusive, check.inconclusive_limit
                    ),
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
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

    /// Judges `check` over the `samples` in turn until it ends; returns the outcome and how
    /// many measurements were asked again (each one interval later).
    fn run(check: &AnalysisCheck, samples: Vec<Sample>) -> (Outcome, usize) {
        let mut tries = Tries::default();
        let mut again = 0;
        for sample in samples {
            if let Some(outcome) = tries.judge(check, sample) {
                return (outcome, again);
            }
            again += 1;
        }
        panic!("no more samples after {again} measurement(s) asked again");
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
