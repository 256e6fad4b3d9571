//! Fault injection: latency, error rates per verb and resource, dropped watch streams and an
//! API outage (every request fails with 503 or hangs until the outage ends). Controlled in
//! process through [`Faults`] or over HTTP under `/lab/faults`. Held requests (served only
//! when the test releases them, [`Faults::hold`]) are controlled in process only.

use std::sync::atomic::{AtomicUsize, Ordering};
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
    /// Requests whose client hung up (say, it timed out during the latency) are still served
    /// to their end, as kube-apiserver may still commit a write whose client gave up. Off, a
    /// request is dropped with its connection.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub serve_abandoned: bool,
}

/// A handle to the server's faults; cheap to clone.
#[derive(Debug, Clone)]
pub struct Faults {
    cfg: Arc<Mutex<FaultConfig>>,
    outage: Arc<tokio::sync::watch::Sender<Outage>>,
    state: Arc<Mutex<State>>,
    holding: Arc<Holding>,
}

/// Requests held back until the test releases them ([`Faults::hold`]).
#[derive(Debug)]
struct Holding {
    /// Which requests arriving now are held: `(verb, resource)`, each any when `None`; none
    /// when `None`.
    rule: Mutex<Option<(Option<String>, Option<String>)>>,
    /// Bumped by each release; a held request waits until it changes.
    released: tokio::sync::watch::Sender<u64>,
    /// Requests held, or released and not yet answered.
    count: AtomicUsize,
}

/// Counts a held request until it has been served (dropped after its answer was made).
#[must_use]
pub(crate) struct Held(Option<Arc<Holding>>);

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(h) = &self.0 {
            h.count.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// Whether a rule's `want` (any when `None`) names one of `have` (case-insensitive).
fn matches(want: Option<&str>, have: &[&str]) -> bool {
    want.is_none_or(|w| have.iter().any(|h| h.eq_ignore_ascii_case(w)))
}

impl Faults {
    pub(crate) fn new(state: Arc<Mutex<State>>) -> Self {
        let (tx, _) = tokio::sync::watch::channel(Outage::None);
        Self {
            cfg: Arc::default(),
            outage: Arc::new(tx),
            state,
            holding: Arc::new(Holding {
                rule: Mutex::new(None),
                released: tokio::sync::watch::channel(0).0,
                count: AtomicUsize::new(0),
            }),
        }
    }

    /// Holds back every request for `verb` on `resource` (plural or kind; either `None` = any)
    /// that arrives from now on until [`Faults::release_held`]. With
    /// [`Faults::set_serve_abandoned`] a test gets a write that its client gave up on and that
    /// the server serves later, after writes sent since (as kube-apiserver may); without it, a
    /// client that gives up takes its held request with it.
    pub fn hold(&self, verb: Option<&str>, resource: Option<&str>) {
        if let Ok(mut r) = self.holding.rule.lock() {
            *r = Some((verb.map(str::to_string), resource.map(str::to_string)));
        }
    }

    /// Holds back no request arriving from now on; those held stay held until released.
    pub fn stop_holding(&self) {
        if let Ok(mut r) = self.holding.rule.lock() {
            *r = None;
        }
    }

    /// Lets every held request go on (in no particular order).
    pub fn release_held(&self) {
        self.holding.released.send_modify(|n| *n += 1);
    }

    /// Requests held now, or released and not yet answered: after a release, 0 means every
    /// held request has been served.
    pub fn held(&self) -> usize {
        self.holding.count.load(Ordering::SeqCst)
    }

    /// Waits while the request is to be held (see [`Faults::hold`]); the guard counts it until
    /// dropped, after the request was served.
    pub(crate) async fn held_back(&self, verb: &str, resource: &str, kind: &str) -> Held {
        let holds = self.holding.rule.lock().is_ok_and(|r| {
            r.as_ref().is_some_and(|(v, res)| {
                matches(v.as_deref(), &[verb]) && matches(res.as_deref(), &[resource, kind])
            })
        });
        if !holds {
            return Held(None);
        }
        let mut released = self.holding.released.subscribe();
        released.borrow_and_update();
        self.holding.count.fetch_add(1, Ordering::SeqCst);
        let held = Held(Some(self.holding.clone()));
        // (The sender lives as long as `self`: `changed` ends only at a release.)
        let _ = released.changed().await;
        held
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

    /// Serves requests whose client hung up to their end (`true`), or drops them with their
    /// connection (`false`, the default).
    pub fn set_serve_abandoned(&self, on: bool) {
        if let Ok(mut c) = self.cfg.lock() {
            c.serve_abandoned = on;
        }
    }

    /// Whether requests whose client hung up are served to their end.
    pub(crate) fn serves_abandoned(&self) -> bool {
        self.cfg.lock().is_ok_and(|c| c.serve_abandoned)
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

    /// Removes every fault (held requests are released).
    pub fn clear(&self) {
        self.set(FaultConfig::default());
        self.stop_holding();
        self.release_held();
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
        let mut cfg = self.cfg.lock().ok()?;
        let rule = cfg.errors.iter_mut().find(|rule| {
            rule.count != Some(0)
                && matches(rule.verb.as_deref(), &[verb])
                && matches(rule.resource.as_deref(), &[resource, kind])
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
