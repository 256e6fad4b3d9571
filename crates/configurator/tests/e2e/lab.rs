//! The lab for end-to-end tests: the test kit's lab API server with the netrollout kinds, nodes
//! and inputs, and configurators run in-process (library `run`) or as real processes.

use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, DeleteParams};
use netrollout_api::{NetworkConfigRevision, NodeNetworkConfig, RevisionPhase};
use netrollout_configurator::{Args, Metrics};
use netrollout_testkit::apiserver::LabApi;
use netrollout_testkit::objects;
pub use netrollout_testkit::wait::eventually;
use tokio::sync::oneshot;

pub type R<T = ()> = anyhow::Result<T>;

/// The kit's lab API server (`api`: server, client, kubeconfig) with the configurator's helpers.
pub struct Lab {
    pub api: LabApi,
}

impl Lab {
    pub async fn start() -> R<Lab> {
        Ok(Lab {
            api: LabApi::netrollout().await,
        })
    }

    pub async fn add_node(&self, name: &str, labels: &[(&str, &str)], ready: bool) -> R {
        objects::add_node(&self.api.client, name, labels, Some(ready)).await;
        Ok(())
    }

    pub async fn set_ready(&self, name: &str, ready: bool) -> R {
        objects::set_ready(&self.api.client, name, ready).await;
        Ok(())
    }

    pub async fn delete_node(&self, name: &str) -> R {
        let api: Api<Node> = Api::all(self.api.client.clone());
        api.delete(name, &DeleteParams::default()).await?;
        Ok(())
    }

    /// Creates or replaces a RoutingTable input (the simplest input kind).
    pub async fn set_table(&self, name: &str, table_id: i64) -> R {
        objects::apply_table(&self.api.client, "e2e-test", name, table_id).await;
        Ok(())
    }

    pub async fn revisions(&self) -> R<Vec<NetworkConfigRevision>> {
        let api: Api<NetworkConfigRevision> = Api::all(self.api.client.clone());
        let mut list = api.list(&Default::default()).await?.items;
        list.sort_by_key(|r| r.spec.sequence);
        Ok(list)
    }

    pub async fn configs(&self) -> R<Vec<NodeNetworkConfig>> {
        let api: Api<NodeNetworkConfig> = Api::all(self.api.client.clone());
        Ok(api.list(&Default::default()).await?.items)
    }

    /// Waits until the newest revision by sequence is in `phase`; returns it.
    pub async fn newest_in(
        &self,
        phase: RevisionPhase,
        within: Duration,
    ) -> R<NetworkConfigRevision> {
        self.newest_after(0, phase, within).await
    }

    /// Waits until the newest revision has a sequence above `sequence` and is in `phase`.
    pub async fn newest_after(
        &self,
        sequence: i64,
        phase: RevisionPhase,
        within: Duration,
    ) -> R<NetworkConfigRevision> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let revs = self.revisions().await?;
            let newest = revs.last();
            if let Some(r) = newest.filter(|r| {
                r.spec.sequence > sequence && r.status.as_ref().and_then(|s| s.phase) == Some(phase)
            }) {
                return Ok(r.clone());
            }
            if tokio::time::Instant::now() >= deadline {
                let seen: Vec<_> = revs
                    .iter()
                    .map(|r| {
                        (
                            r.metadata.name.clone(),
                            r.spec.sequence,
                            r.status.as_ref().and_then(|s| s.phase),
                        )
                    })
                    .collect();
                anyhow::bail!(
                    "no revision after sequence {sequence} reached {phase:?} within {within:?}; revisions: {seen:?}"
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits for an Event with `reason` about the `kind` object `name` (Events about
    /// cluster-scoped objects are in `default`); returns it.
    pub async fn event(&self, kind: &str, name: &str, reason: &str, within: Duration) -> R<Event> {
        let api: Api<Event> = Api::namespaced(self.api.client.clone(), "default");
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let events = api.list(&Default::default()).await?.items;
            let about = |e: &Event| {
                e.regarding.as_ref().is_some_and(|r| {
                    r.kind.as_deref() == Some(kind) && r.name.as_deref() == Some(name)
                })
            };
            if let Some(e) = events
                .iter()
                .find(|e| about(e) && e.reason.as_deref() == Some(reason))
            {
                return Ok(e.clone());
            }
            if tokio::time::Instant::now() >= deadline {
                let seen: Vec<_> = events
                    .iter()
                    .map(|e| {
                        let r = e.regarding.clone().unwrap_or_default();
                        (r.kind, r.name, e.reason.clone())
                    })
                    .collect();
                anyhow::bail!(
                    "no {reason} Event about {kind} {name} within {within:?}; Events: {seen:?}"
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The flags of a test configurator: short timeouts, ports picked by the OS.
    pub fn args(&self, extra: &[&str]) -> Args {
        let mut argv = vec![
            "netrollout-configurator".to_string(),
            "--apply-timeout=2s".into(),
            "--pickup-timeout=3s".into(),
            "--api-timeout=2s".into(),
            "--lease-duration=3s".into(),
            "--metrics-addr=127.0.0.1:0".into(),
            "--health-addr=127.0.0.1:0".into(),
            "--resync=200ms".into(),
            "--debounce=10ms".into(),
        ];
        // A flag given in `extra` replaces the default above.
        argv.retain(|a| {
            let flag = a.split('=').next().unwrap_or_default();
            !extra.iter().any(|e| e.split('=').next() == Some(flag))
        });
        argv.extend(extra.iter().map(|s| s.to_string()));
        Args::parse_from(argv)
    }

    /// Runs a configurator in this process until the returned handle is stopped: on its own
    /// thread and runtime, as the binary runs it
    /// ([`netrollout_configurator::controller::RUNTIME`]), with its own client.
    pub fn configurator(&self, extra: &[&str]) -> Configurator {
        let mut args = self.args(extra);
        args.identity = Some(format!("e2e-{}", rand_suffix()));
        let metrics = Arc::new(Metrics::default());
        let (stop, stopped) = oneshot::channel::<()>();
        let (done, ended) = oneshot::channel();
        let kubeconfig = self.api.kubeconfig();
        let m = metrics.clone();
        std::thread::spawn(move || {
            let ran = netrollout_support::block_on(
                netrollout_configurator::controller::RUNTIME,
                async move {
                    let config =
                        netrollout_support::kube_config(Some(kubeconfig.as_path()), None).await?;
                    let client = netrollout_support::client(config)?;
                    netrollout_configurator::run(args, client, m, async {
                        let _ = stopped.await;
                    })
                    .await
                    .map_err(anyhow::Error::from)
                },
            );
            let _ = done.send(ran.map_err(anyhow::Error::from).and_then(|r| r));
        });
        Configurator {
            stop: Some(stop),
            ended,
            metrics,
        }
    }
}

pub struct Configurator {
    stop: Option<oneshot::Sender<()>>,
    ended: oneshot::Receiver<R>,
    pub metrics: Arc<Metrics>,
}

impl Configurator {
    pub async fn stop(mut self) -> R {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        (&mut self.ended).await?
    }
}

fn rand_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}
