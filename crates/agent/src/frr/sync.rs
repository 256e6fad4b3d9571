//! Sync: FRR's running config brought to the written text by the agent's own diff, one `vtysh -f`
//! of the changed contexts, and FRR's running config read again to show it holds the text;
//! `frr-reload.py` when it does not.
//!
//! Why not `frr-reload.py` every time: it starts Python, has vtysh mark both texts, reads the
//! running config twice, runs one vtysh per deleted line and sends every line of its first pass
//! again in the second; about 1 s for one changed VRF of 50 and several seconds at 500. The
//! diff here reads the same two texts (FRR's parse of the file from the `vtysh -m -f` check, and
//! `show running-config`), so what is compared is still FRR's own view.

use std::collections::HashSet;
use std::sync::atomic::Ordering;

use tracing::{debug, warn};

use super::diff::{Conf, Line, missing, script_quiet};
use super::script::Script;
use super::{Frr, FrrError};

/// Rounds of script and read-back before the agent gives the change to `frr-reload.py`: a `no`
/// line may take more with it than it names (`no neighbor X remote-as`), which the second round
/// puts back, as `frr-reload.py`'s second pass does.
const ROUNDS: usize = 2;

impl Frr {
    /// Makes FRR run `full`, read as `marked` (FRR's parse of the written `frr.conf`, from the
    /// check), starting from `running` (its running config before); returns the FRR writes (0
    /// when it already runs it, else 1). Falls back to [`Frr::reload_script_apply`] (counted in
    /// [`Frr::fallbacks`], logged with what was left) when a script fails or FRR's running
    /// config still differs after [`ROUNDS`] rounds.
    ///
    /// A line FRR accepted without an error and still does not show when the same script is
    /// due again is a default of its `frr defaults` profile (`no bgp ebgp-requires-policy` under
    /// `datacenter`): it is remembered as quiet and no longer a difference. Only lines to add
    /// can be quiet; a line FRR shows and the text lacks always is one.
    ///
    /// `early` is the script's vtysh when it was started already ([`Frr::start_early`]); it is
    /// ended without a line when no script is sent.
    pub(super) async fn sync(
        &self,
        full: &str,
        marked: &str,
        running: &str,
        mut early: Option<Script>,
    ) -> Result<u32, FrrError> {
        let synced = self.rounds(full, marked, running, &mut early).await;
        if let Some(script) = early {
            script.end().await;
        }
        synced
    }

    /// Whether FRR's `running` config differs from `full` as written (not yet as FRR parses
    /// it): then the script's vtysh is started now ([`super::script`]), `None` otherwise.
    pub(super) fn start_early(&self, full: &str, running: &str) -> Option<Script> {
        let lines = script_quiet(
            &Conf::parse(full),
            &Conf::parse(running),
            &self.quiet_lines(),
        );
        if lines.is_empty() {
            return None;
        }
        self.start_script().ok()
    }

    async fn rounds(
        &self,
        full: &str,
        marked: &str,
        running: &str,
        early: &mut Option<Script>,
    ) -> Result<u32, FrrError> {
        let new = Conf::parse(marked);
        let mut running = Conf::parse(running);
        let mut writes = 0;
        let mut sent: Option<(Vec<String>, Vec<Line>)> = None;
        // The first round's script is empty when FRR already runs the text; each later round
        // reads FRR's running config back (and asks the daemons) after a write.
        for round in 0..=ROUNDS {
            let quiet = self.quiet_lines();
            let lines = script_quiet(&new, &running, &quiet);
            if lines.is_empty() {
                return Ok(writes);
            }
            let adds = missing(&new, &running, &quiet);
            if let Some((last, last_adds)) = &sent
                && *last == lines
                && adds.iter().all(|a| last_adds.contains(a))
            {
                let mut all = quiet.clone();
                all.extend(adds.iter().cloned());
                if script_quiet(&new, &running, &all).is_empty() {
                    debug!(lines = ?adds, "FRR accepted these lines and does not show them: defaults");
                    self.learn_quiet(adds);
                    return Ok(writes);
                }
            }
            if round == ROUNDS {
                warn!(
                    left = %lines.join(" | "),
                    "FRR's running config differs from frr.conf after the agent's diff; applying it with frr-reload.py"
                );
                break;
            }
            writes = 1;
            let sent_script = match early.take() {
                Some(script) => script.run(&lines).await,
                None => match self.start_script() {
                    Ok(script) => script.run(&lines).await,
                    Err(e) => Err(e),
                },
            };
            if let Err(e) = sent_script {
                warn!(error = %e, "the agent's diff of FRR's config failed; applying it with frr-reload.py");
                break;
            }
            sent = Some((lines, adds));
            running = match self.running_config().await {
                Ok(text) => Conf::parse(&text),
                Err(e @ FrrError::Unavailable { .. }) => return Err(e),
                Err(e) => {
                    warn!(error = %e, "reading FRR's running config failed; applying it with frr-reload.py");
                    break;
                }
            };
        }
        self.fallbacks.fetch_add(1, Ordering::Relaxed);
        let reloaded = self.reload_script_apply(full).await;
        self.require_running().await?;
        reloaded.map(|()| 1)
    }

    fn quiet_lines(&self) -> HashSet<Line> {
        // A poisoned lock only means a panic elsewhere while it was held; the set is still whole.
        self.quiet.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn learn_quiet(&self, lines: Vec<Line>) {
        self.quiet
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(lines);
    }

    /// The reload as it was before the diff: new VRF VNIs through vtysh, then `frr-reload.py`
    /// (`full` is the written text).
    pub(super) async fn reload_script_apply(&self, full: &str) -> Result<(), FrrError> {
        self.add_new_vrf_vnis(full).await?;
        self.reload().await
    }
}
