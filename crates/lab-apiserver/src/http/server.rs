//! [`LabServer`]: starting the server, its kubeconfig and client, and shutting it down.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::authz::auth::{Identity, Tokens};
use crate::error::{Error, Result};
use crate::faults::Faults;
use crate::http::app::App;
use crate::http::front::handle;
use crate::http::listener::{self, Certificate};
use crate::storage::State;
use crate::storage::persist;

pub use crate::storage::DEFAULT_WINDOW_BYTES;
pub use crate::storage::watchers::DEFAULT_WATCH_BYTES;

/// How to start a [`LabServer`].
#[derive(Debug, Clone)]
pub struct Config {
    /// Address to listen on; port 0 picks a free port.
    pub listen: SocketAddr,
    /// Where to write a kubeconfig pointing at the server, if anywhere.
    pub kubeconfig: Option<PathBuf>,
    /// File to persist objects to (and load them from on start), if any.
    pub data: Option<PathBuf>,
    /// Number of recent events retained for resuming watches; older resourceVersions get 410 Gone.
    pub event_window: usize,
    /// Bytes of encoded events retained at most (the window also ends at `event_window`
    /// events); older resourceVersions get 410 Gone.
    pub event_window_bytes: usize,
    /// Events buffered per watcher before a slow watcher's stream is ended.
    pub watch_buffer: usize,
    /// Bytes one watcher may hold (events queued for it, response chunks its connection has
    /// not taken) before its stream is ended.
    pub watch_bytes: usize,
    /// How often watches that allow bookmarks get one.
    pub bookmark_interval: Duration,
    /// How soon after a change the data file is rewritten.
    pub persist_interval: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            kubeconfig: None,
            data: None,
            event_window: 10_000,
            event_window_bytes: crate::storage::DEFAULT_WINDOW_BYTES,
            watch_buffer: 4096,
            watch_bytes: crate::storage::watchers::DEFAULT_WATCH_BYTES,
            bookmark_interval: Duration::from_secs(1),
            persist_interval: Duration::from_millis(200),
        }
    }
}

/// A running lab API server.
#[derive(Debug)]
pub struct LabServer {
    addr: SocketAddr,
    kubeconfig: Option<PathBuf>,
    data: Option<PathBuf>,
    state: Arc<Mutex<State>>,
    faults: Faults,
    stop: Option<oneshot::Sender<()>>,
    serve: JoinHandle<()>,
    persist: Option<JoinHandle<()>>,
    tokens: Tokens,
    admin_token: String,
    cert: Certificate,
}

impl LabServer {
    /// Binds, loads persisted data, writes the kubeconfig and starts serving.
    pub async fn start(cfg: Config) -> Result<Self> {
        let mut state = State::new(cfg.event_window, cfg.event_window_bytes);
        state.watchers.set_max_bytes(cfg.watch_bytes);
        if let Some(path) = &cfg.data {
            persist::load(path, &mut state)?;
        }
        let state = Arc::new(Mutex::new(state));
        let listener = tokio::net::TcpListener::bind(cfg.listen)
            .await
            .map_err(|source| Error::Bind {
                addr: cfg.listen.to_string(),
                source,
            })?;
        let addr = listener.local_addr().map_err(|source| Error::Bind {
            addr: cfg.listen.to_string(),
            source,
        })?;
        let faults = Faults::new(state.clone());
        // With persisted objects the tokens persist beside them, so that kubeconfigs written
        // before a restart keep working; the admin keeps one token.
        let tokens = Tokens::new(cfg.data.as_ref().map(|d| d.with_extension("tokens.json")))?;
        let admin_token = tokens.issue(Identity::admin())?;
        let app = Arc::new(App {
            tokens: tokens.clone(),
            state: state.clone(),
            faults: faults.clone(),
            addr,
            watch_buffer: cfg.watch_buffer,
            bookmark_every: cfg.bookmark_interval,
        });
        let router = axum::Router::new().fallback(handle).with_state(app);
        let (stop, stopped) = oneshot::channel::<()>();
        let cert = Certificate::new(addr)?;
        let serve = tokio::spawn(listener::serve(listener, cert.clone(), router, stopped));
        let persist = cfg.data.clone().map(|path| {
            let state = state.clone();
            let every = cfg.persist_interval;
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(every).await;
                    if let Err(e) = persist::flush(&path, &state) {
                        tracing::error!(error = %e, "cannot persist the lab API server's objects");
                    }
                }
            })
        });
        let server = Self {
            addr,
            kubeconfig: cfg.kubeconfig.clone(),
            data: cfg.data,
            state,
            faults,
            stop: Some(stop),
            serve,
            persist,
            tokens,
            admin_token,
            cert,
        };
        if let Some(path) = &cfg.kubeconfig {
            server.write_kubeconfig(path)?;
        }
        tracing::info!(url = %server.url(), "lab API server listening");
        Ok(server)
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `https://<addr>` (the same port also answers plain HTTP: `http://<addr>`).
    pub fn url(&self) -> String {
        format!("https://{}", self.addr)
    }

    /// The server's self-signed certificate (PEM), which its kubeconfigs and clients trust.
    pub fn certificate_pem(&self) -> &str {
        &self.cert.pem
    }

    /// The kubeconfig path given in [`Config::kubeconfig`].
    pub fn kubeconfig_path(&self) -> Option<&Path> {
        self.kubeconfig.as_deref()
    }

    /// A kubeconfig (YAML) with one context, `netrollout-lab`, pointing at the server, for
    /// the admin (group `system:masters`).
    pub fn kubeconfig_yaml(&self) -> String {
        self.kubeconfig_yaml_with(&self.admin_token)
    }

    fn kubeconfig_yaml_with(&self, token: &str) -> String {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: netrollout-lab\n  cluster:\n    server: {}\n    certificate-authority-data: {}\n\
             users:\n- name: netrollout-lab\n  user:\n    token: {token}\ncontexts:\n- name: netrollout-lab\n  context:\n    \
             cluster: netrollout-lab\n    user: netrollout-lab\n    namespace: default\ncurrent-context: netrollout-lab\n",
            self.url(),
            base64::engine::general_purpose::STANDARD.encode(&self.cert.pem)
        )
    }

    /// Writes [`LabServer::kubeconfig_yaml`] (the admin's) to `path`.
    pub fn write_kubeconfig(&self, path: &Path) -> Result<()> {
        write_file(path, &self.kubeconfig_yaml())
    }

    /// Issues a bearer token for `identity` (a ServiceAccount, with the node-name claim for an
    /// agent, or a person) and returns it.
    pub fn issue_token(&self, identity: Identity) -> Result<String> {
        self.tokens.issue(identity)
    }

    /// Issues a token for `identity` and writes a kubeconfig with it to `path`.
    pub fn write_kubeconfig_for(&self, path: &Path, identity: Identity) -> Result<()> {
        let token = self.tokens.issue(identity)?;
        write_file(path, &self.kubeconfig_yaml_with(&token))
    }

    /// A `kube::Client` acting as `identity` (a new token).
    pub fn client_for(&self, identity: Identity) -> Result<kube::Client> {
        let token = self.tokens.issue(identity)?;
        self.client_with(Some(token))
    }

    /// A `kube::Client` without credentials (every request but health checks gets 401).
    pub fn anonymous_client(&self) -> Result<kube::Client> {
        self.client_with(None)
    }

    /// A `kube::Client` for the server, as the admin.
    pub fn client(&self) -> Result<kube::Client> {
        self.client_with(Some(self.admin_token.clone()))
    }

    fn client_with(&self, token: Option<String>) -> Result<kube::Client> {
        let err = |message: String| Error::Client {
            url: self.url(),
            message,
        };
        let uri: http::Uri = self
            .url()
            .parse()
            .map_err(|e: http::uri::InvalidUri| err(e.to_string()))?;
        // kube builds a TLS connector even for http URLs, and rustls needs a process-wide
        // crypto provider; installing fails harmlessly when one is already installed.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut config = kube::Config::new(uri);
        config.default_namespace = "default".into();
        config.auth_info.token = token.map(secrecy::SecretString::from);
        config.root_cert = Some(vec![self.cert.der.clone()]);
        kube::Client::try_from(config).map_err(|e| err(e.to_string()))
    }

    /// The fault-injection handle.
    pub fn faults(&self) -> &Faults {
        &self.faults
    }

    /// Number of objects stored.
    pub fn object_count(&self) -> usize {
        self.state
            .lock()
            .map(|s| s.object_count())
            .unwrap_or_default()
    }

    /// Number of open watch streams (registered watchers).
    pub fn watcher_count(&self) -> usize {
        self.state
            .lock()
            .map(|s| s.watchers.count())
            .unwrap_or_default()
    }

    /// Bytes held by all watchers: events queued for them and response chunks their
    /// connections have not taken yet (mostly shared with the store and the event window).
    pub fn watch_bytes_held(&self) -> usize {
        self.state
            .lock()
            .map(|s| s.watchers.held_bytes())
            .unwrap_or_default()
    }

    /// The last resourceVersion handed out.
    pub fn resource_version(&self) -> u64 {
        self.state.lock().map(|s| s.rv).unwrap_or_default()
    }

    /// Stops serving (ending all watches), waits for open requests, and writes the data file.
    pub async fn shutdown(mut self) -> Result<()> {
        self.faults.set_outage(crate::faults::Outage::None);
        if let Ok(mut st) = self.state.lock() {
            st.watchers.drop_all();
        }
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = tokio::time::timeout(Duration::from_secs(5), &mut self.serve).await;
        self.serve.abort();
        if let Some(p) = self.persist.take() {
            p.abort();
        }
        match &self.data {
            Some(path) => persist::flush(path, &self.state),
            None => Ok(()),
        }
    }
}

/// The `netrollout-lab-apiserver` process (`main.rs` calls it with the parsed flags): starts the
/// server on a multi-threaded runtime, prints its URL, and shuts it down (writing the data file)
/// at SIGTERM or Ctrl-C. The async code is compiled once, here, not again in the binary.
///
/// # Errors
/// The runtime, the server or the signal handlers cannot be set up, or the shutdown fails.
pub fn run_until_signal(cfg: Config) -> anyhow::Result<()> {
    use anyhow::Context as _;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the tokio runtime")?;
    runtime.block_on(async move {
        let server = LabServer::start(cfg)
            .await
            .context("starting the lab API server")?;
        println!("{}", server.url());
        if let Some(k) = server.kubeconfig_path() {
            eprintln!("kubeconfig written to {}", k.display());
        }
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .context("installing the SIGTERM handler")?;
        tokio::select! {
            r = tokio::signal::ctrl_c() => r.context("waiting for Ctrl-C")?,
            _ = term.recv() => {}
        }
        server
            .shutdown()
            .await
            .context("shutting down the lab API server")
    })
}

fn write_file(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(|source| Error::File {
        path: path.display().to_string(),
        source,
    })
}

impl Drop for LabServer {
    fn drop(&mut self) {
        self.serve.abort();
        if let Some(p) = self.persist.take() {
            p.abort();
        }
    }
}
