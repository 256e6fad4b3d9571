//! Crash recovery in the driver: on start, the state on disk goes to the transaction core as
//! [`Event::Started`]; the decision ([`crate::txn::decide`]) and its effects are the core's.

use tracing::Instrument;

use super::Agent;
use crate::error::Result;
use crate::txn::{Core, Event};

impl Agent {
    /// On start: a journal means the agent died mid-apply. Restores the last-known-good config,
    /// then does what [`crate::txn::decide`] says.
    pub async fn recover(&self) -> Result<()> {
        let disk = self.read_disk().await?;
        let Some(journal) = &disk.journal else {
            // The kernel holds the last-known-good config: the neighbour task tracks its
            // networks (an apply or restore tells it of later ones).
            match crate::convert::to_desired(&disk.lkg.config, &self.settings.vtep) {
                Ok(desired) => self.track(desired.host_routes),
                Err(e) => tracing::warn!(error = %e,
                    "the last-known-good config does not convert; neighbour host routes wait for the next apply"),
            }
            return Ok(());
        };
        tracing::warn!(step = "recover", revision = %journal.revision, attempt = journal.attempt,
            last_known_good = disk.lkg.revision.as_deref().unwrap_or("none"),
            "journal says an apply was interrupted; restoring last-known-good");
        let run = super::effects::Run::new(journal.revision.clone());
        let mut core = Core::new(self.core_settings());
        self.drive(&mut core, run, Event::Started(disk))
            .instrument(tracing::info_span!("recover"))
            .await
    }
}
