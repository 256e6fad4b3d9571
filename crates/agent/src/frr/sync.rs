//! Sync: FRR's running config brought to the written text by the agent's own diff, one `vtysh -f`
//! of the changed contexts, and FRR's running config read again to show it holds the text;
//! `frr-reload.py` when it does not.
//!
//! Why not `frr-reload.py` every time: it starts Python, has vtysh mark both texts, reads the
//! running config twice, runs one vtysh per deleted line and sends every line of its first pass
//! again in the second; about 1 s for one changed VRF of 50 and several seconds at 500. The
//! diff here reads the same two texts (FRR's parse of the file from the `vtysh -m -f` check, and
//! `show running-config`), so what is compared is still FRR's own view.
//!
//! The rounds ([`converge`]) reach FRR only through [`Io`] (send a script, read the running
//! config, the fallback), which the unit tests give a model FRR (`sync/tests.rs`).

use std::sync::atomic::{AtomicU64, Ordering};

use tracing::{info, warn};

use super::conf::Conf;
use super::diff::{lacking, script};
use super::script::Script;
use super::{Frr, FrrError};

/// Rounds of script and read-back before the agent gives the change to `frr-reload.py`: a `no`
/// line may take more with it than it names (`no neighbor X remote-as`), which the second round
/// puts back, as `frr-reload.py`'s second pass does.
const ROUNDS: usize = 2;

/// What the rounds do to FRR.
pub(super) trait Io {
    /// Sends `lines` as one `vtysh -f` session: FRR's error lines when vtysh went on past them
    /// (empty when FRR said nothing), [`FrrError::Rejected`] when vtysh failed.
    async fn send(&mut self, lines: &[String]) -> Result<String, FrrError>;
    /// FRR's running config ([`FrrError::Unavailable`] when zebra or bgpd does not answer).
    async fn read(&mut self) -> Result<String, FrrError>;
    /// The fallback: `frr-reload.py --reload` of the written text, then the daemons asked.
    async fn reload(&mut self) -> Result<(), FrrError>;
}

/// Makes FRR's running config (`running` before, parsed once by the caller, who also decided
/// with it whether to start the script early) hold `new` (FRR's parse of the written text, as
/// the diff reads it): a script of the difference, FRR's running config read back, again, up to [`ROUNDS`]
/// scripts; returns the FRR writes (0 when FRR already runs it, else 1). When a script fails,
/// the read-back fails (other than FRR unavailable) or FRR still differs after the rounds, the
/// change goes to [`Io::reload`], counted in `fallbacks` and logged with what was left.
///
/// A line FRR does not show counts as there only when it is a listed default of FRR's version
/// and profile ([`super::defaults`]): a line FRR accepted and dropped stays a difference.
///
/// FRR's error lines (`% ...`) decide nothing by their text: FRR prints them for a line it
/// refused (`% Malformed Route Target list`, vtysh going on as after a warning) and for one it
/// took with a remark, in wording that differs per version. The running config decides: when
/// FRR said error lines and its running config does not hold the text after the script, the
/// change goes to `frr-reload.py` at once (the agent's own script may be what FRR refused), and
/// when FRR does not hold the text after that either, the apply fails with FRR's lines and the
/// lines FRR lacks ([`FrrError::Rejected`]: the agent restores). When FRR holds the text, the
/// lines were remarks: logged, no failure.
pub(super) async fn converge(
    io: &mut impl Io,
    new: &Conf,
    mut running: Conf,
    fallbacks: &AtomicU64,
) -> Result<u32, FrrError> {
    let mut writes = 0;
    // FRR's error lines in answer to this apply's scripts.
    let mut said = String::new();
    // The first round's script is empty when FRR already runs the text; each later round
    // reads FRR's running config back (and asks the daemons) after a write.
    for round in 0..=ROUNDS {
        let lines = script(new, &running);
        if lines.is_empty() {
            if !said.is_empty() {
                info!(said = %said, "FRR answered the agent's script with error lines but runs the text: remarks, not failures");
            }
            return Ok(writes);
        }
        if !said.is_empty() {
            warn!(said = %said, left = %lines.join(" | "),
                "FRR answered with error lines and does not run the text; applying it with frr-reload.py");
            break;
        }
        if round == ROUNDS {
            warn!(
                left = %lines.join(" | "),
                "FRR's running config differs from frr.conf after the agent's diff; applying it with frr-reload.py"
            );
            break;
        }
        writes = 1;
        match io.send(&lines).await {
            Ok(answer) => said = answer,
            Err(e) => {
                if let FrrError::Rejected { line, .. } = &e {
                    said = line.clone();
                }
                warn!(error = %e, "the agent's diff of FRR's config failed; applying it with frr-reload.py");
                break;
            }
        }
        running = match io.read().await {
            Ok(text) => Conf::parse(&text),
            Err(e @ FrrError::Unavailable { .. }) => return Err(e),
            Err(e) => {
                warn!(error = %e, "reading FRR's running config failed; applying it with frr-reload.py");
                break;
            }
        };
    }
    fallbacks.fetch_add(1, Ordering::Relaxed);
    io.reload().await?;
    if said.is_empty() {
        return Ok(1);
    }
    // FRR said error lines: `frr-reload.py` succeeds past them as vtysh does, so FRR's running
    // config tells whether it took the text.
    let running = Conf::parse(&io.read().await?);
    let lacking = lacking(new, &running);
    if lacking.is_empty() {
        info!(said = %said, "frr-reload.py brought FRR to the text after FRR's error lines");
        return Ok(1);
    }
    Err(FrrError::Rejected {
        line: format!("{said} (FRR does not hold {})", lacking.join("; ")),
        wrote: true,
    })
}

/// The node's FRR as [`converge`] reaches it: the script's vtysh (started early when it was),
/// the vty read, `frr-reload.py` of `full`.
struct Node<'a> {
    frr: &'a Frr,
    full: &'a str,
    early: Option<Script>,
}

impl Io for Node<'_> {
    async fn send(&mut self, lines: &[String]) -> Result<String, FrrError> {
        let script = match self.early.take() {
            Some(script) => script,
            None => self.frr.start_script()?,
        };
        script.run(lines).await
    }

    async fn read(&mut self) -> Result<String, FrrError> {
        self.frr.running_config().await
    }

    async fn reload(&mut self) -> Result<(), FrrError> {
        let reloaded = self.frr.reload_script_apply(self.full).await;
        // A daemon that died during the reload explains its failure better than the reload's
        // own output.
        self.frr.require_running().await?;
        reloaded
    }
}

impl Frr {
    /// Makes FRR run `full`, read as `marked` (FRR's parse of the written `frr.conf`, from the
    /// check, as the diff reads it), starting from `running` (its running config before,
    /// parsed): [`converge`], counted in
    /// [`Frr::fallbacks`].
    ///
    /// `early` is the script's vtysh when it was started already ([`Frr::start_early`]); it is
    /// ended without a line when no script is sent.
    pub(super) async fn sync(
        &self,
        full: &str,
        marked: &Conf,
        running: Conf,
        early: Option<Script>,
    ) -> Result<u32, FrrError> {
        let mut node = Node {
            frr: self,
            full,
            early,
        };
        let synced = converge(&mut node, marked, running, &self.fallbacks).await;
        if let Some(script) = node.early {
            script.end().await;
        }
        synced
    }

    /// Whether FRR's `running` config differs from `full` (as FRR parsed it when this process
    /// checked the text before, else as written): then the script's vtysh is started now
    /// ([`super::script`]), `None` otherwise.
    pub(super) fn start_early(&self, full: &str, running: &Conf) -> Option<Script> {
        let differs = match self.kept_mark(full) {
            Some(marked) => !script(&marked, running).is_empty(),
            None => !script(&Conf::parse(full), running).is_empty(),
        };
        if !differs {
            return None;
        }
        self.start_script().ok()
    }

    /// The reload as it was before the diff: new VRF VNIs through vtysh, then `frr-reload.py`
    /// (`full` is the written text).
    pub(super) async fn reload_script_apply(&self, full: &str) -> Result<(), FrrError> {
        self.add_new_vrf_vnis(full).await?;
        self.reload().await
    }
}

#[cfg(test)]
mod tests;
