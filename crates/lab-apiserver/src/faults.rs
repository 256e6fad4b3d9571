//! Fault injection: latency, error rates per verb and resource, dropped watch streams and an
//! API outage (every request fails with 503 or hangs until the outage ends). Controlled in
//! process through [`Faults`] or over HTTP under `/lab/faults`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::ApiError;
use crate::storage::State;

/// An API outage mode.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outage {
    /// Requests are served.
    #[default]
    None,
    /// Every request fails at once with 500 InternalError (not 503, which kube-client retries
    /// for minutes before giving up).
    Fail,
    /// Every request hangs until the outage ends.
    Hang,
}

/// One error-injection rule: requests matching `verb` and `resource` fail with `code` with
/// probability `rate`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorRule {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`; any when absent.
    #[serde(default)]
    pub verb: Option<String>,
    /// Plural resource name or kind (case-insensitive); any when absent.
    #[serde(default)]
    pub resource: Option<String>,
    /// Probability in 0..=1.
    pub rate: f64,
    /// HTTP code returned (default 500).
    #[serde(default = "default_code")]
    pub code: u16,
    /// How many more requests the rule may fail; it stops failing after that many (none: no
    /// limit). With rate 1 a test gets exactly that many errors, where a rate alone could by
    /// chance give none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
}

fn default_code() -> u16 {
    500
}

/// The whole fault configuration (what `GET /lab/faults` shows and `PUT` replaces).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FaultConfig {
    /// Added to every API request.
    #[serde(default)]
    pub latency_ms: u64,
    /// Error-injection rules.
    #[serde(default)]
    pub errors: Vec<ErrorRule>,
    /// Outage mode.
    #[serde(default)]
    pub outage: Outage,
}

/// A handle to the server's faults; cheap to clone.
#[derive(Debug, Clone)]
pub struct Faults {
    cfg: Arc<Mutex<FaultConfig>>,
    outage: Arc<tokio::sync::watch::Sender<Outage>>,
    state: Arc<Mutex<State>>,
}

impl Faults {
    pub(crate) fn new(state: Arc<Mutex<State>>) -> Self {
        let (tx, _) = tokio::sync::watch::channel(Outage::None);
        Self {
            cfg: Arc::default(),
            outage: Arc::new(tx),
            state,
        }
    }

    /// The current configuration.
    pub fn config(&self) -> FaultConfig {
        self.cfg.lock().map(|c| c.clone()).unwrap_or_default()
    }

    /// Replaces the configuration (including the outage mode).
    pub fn set(&self, cfg: FaultConfig) {
        let outage = cfg.outage;
        if let Ok(mut c) = self.cfg.lock() {
            *c = cfg;
        }
        self.set_outage(outage);
    }

    /// Adds `latency` to every API request.
    pub fn set_latency(&self, latency: Duration) {
        if let Ok(mut c) = self.cfg.lock() {
            c.latency_ms = latency.as_millis() as u64;
        }
    }

    /// Makes a fraction `rate` of requests for `verb` on `resource` (either `None` = any) fail
    /// with 500 InternalError.
    pub fn set_error_rate(&self, verb: Option<&str>, resource: Option<&str>, rate: f64) {
        self.add_rule(verb, resource, rate, None);
    }

    /// Makes the next `n` requests for `verb` on `resource` (either `None` = any) fail with 500
    /// InternalError, and no more.
    pub fn fail_next(&self, verb: Option<&str>, resource: Option<&str>, n: u32) {
        self.add_rule(verb, resource, 1.0, Some(n));
    }

    /// Adds a rule failing requests with 500 InternalError.
    fn add_rule(&self, verb: Option<&str>, resource: Option<&str>, rate: f64, count: Option<u32>) {
        if let Ok(mut c) = self.cfg.lock() {
            c.errors.push(ErrorRule {
                verb: verb.map(String::from),
                resource: resource.map(String::from),
                rate,
                code: 500,
                count,
            });
        }
    }

    /// Ends every open watch stream now (clients see the stream close and resume).
    pub fn drop_watches(&self) {
        if let Ok(mut st) = self.state.lock() {
            st.watchers.drop_all();
        }
    }

    /// Starts or ends an outage. Starting one also drops all watch streams.
    pub fn set_outage(&self, mode: Outage) {
        if let Ok(mut c) = self.cfg.lock() {
            c.outage = mode;
        }
        if mode != Outage::None {
            self.drop_watches();
        }
        self.outage.send_replace(mode);
    }

    /// Removes every fault.
    pub fn clear(&self) {
        self.set(FaultConfig::default());
    }

    /// Applies the faults to one request, before it is served.
    pub(crate) async fn before(
        &self,
        verb: &str,
        resource: &str,
        kind: &str,
    ) -> Result<(), ApiError> {
        let mut rx = self.outage.subscribe();
        loop {
            let mode = *rx.borrow_and_update();
            match mode {
                Outage::None => break,
                Outage::Fail => {
                    return Err(ApiError::new(
                        500,
                        "InternalError",
                        "the lab API server is in a simulated outage",
                    ));
                }
                Outage::Hang => {
                    if rx.changed().await.is_err() {
                        break;
                    }
                }
            }
        }
        // The latency alone, without cloning the rules (`injected` reads them under the lock).
        let latency_ms = self.cfg.lock().map_or(0, |c| c.latency_ms);
        if latency_ms > 0 {
            tokio::time::sleep(Duration::from_millis(latency_ms)).await;
        }
        match self.injected(verb, resource, kind) {
            Some(code) => Err(injected_error(code, verb, resource)),
            None => Ok(()),
        }
    }

    /// The code of the first rule that fails this request, spending one of its count.
    fn injected(&self, verb: &str, resource: &str, kind: &str) -> Option<u16> {
        let matches = |want: &Option<String>, have: &[&str]| {
            want.as_deref()
                .is_none_or(|w| have.iter().any(|h| h.eq_ignore_ascii_case(w)))
        };
        let mut cfg = self.cfg.lock().ok()?;
        let rule = cfg.errors.iter_mut().find(|rule| {
            rule.count != Some(0)
                && matches(&rule.verb, &[verb])
                && matches(&rule.resource, &[resource, kind])
                && rand::random::<f64>() < rule.rate
        })?;
        if let Some(n) = rule.count.as_mut() {
            *n -= 1;
        }
        Some(rule.code)
    }
}

/// The error an injected fault answers with.
fn injected_error(code: u16, verb: &str, resource: &str) -> ApiError {
    let reason = match code {
        429 => "TooManyRequests",
        503 => "ServiceUnavailable",
        409 => "Conflict",
        504 => "Timeout",
        _ => "InternalError",
    };
    ApiError::new(
        code,
        reason,
        format!("injected fault for {verb} {resource}"),
    )
}
