//! The configurator's part of the end-to-end harness: the kit's lab API server (`LabApi`, with
//! its builders and waits from `netrollout_testkit::fleet`) runs configurators in-process
//! (library `run`) through [`ConfiguratorLab`].

use std::sync::Arc;

use clap::Parser;
use netrollout_configurator::{Args, Metrics};
pub use netrollout_testkit::apiserver::LabApi;
pub use netrollout_testkit::fleet::R;
pub use netrollout_testkit::wait::eventually;
use tokio::sync::oneshot;

/// What the configurator's suites add to the kit's harness: configurators, in-process or with
/// their flags.
pub trait ConfiguratorLab {
    /// The flags of a test configurator: short timeouts, ports picked by the OS.
    fn args(&self, extra: &[&str]) -> Args;

    /// Runs a configurator in this process until the returned handle is stopped: on its own
    /// thread and runtime, as the binary runs it
    /// ([`netrollout_configurator::controller::RUNTIME`]), with its own client.
    fn configurator(&self, extra: &[&str]) -> Configurator;
}

impl ConfiguratorLab for LabApi {
    fn args(&self, extra: &[&str]) -> Args {
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

    fn configurator(&self, extra: &[&str]) -> Configurator {
        let mut args = self.args(extra);
        args.identity = Some(format!("e2e-{}", rand_suffix()));
        let metrics = Arc::new(Metrics::default());
        let (stop, stopped) = oneshot::channel::<()>();
        let (done, ended) = oneshot::channel();
        let kubeconfig = self.kubeconfig();
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
