//! Stopping and restarting the lab's API server under a running agent: the kit's lab starts a
//! server that keeps its objects in memory only; [`persistent`] replaces it by one that persists
//! them to a data file (its tokens beside it), so that [`stop`] and [`start`] (the same port,
//! the same data) bring back the objects, their resourceVersions and the agent's kubeconfig.

#![allow(clippy::expect_used)] // test helpers: a failed step is the test failure

use std::net::SocketAddr;
use std::time::Duration;

use netrollout_lab_apiserver::{Config, LabServer};
use netrollout_testkit::agent::Lab;
use netrollout_testkit::apiserver::install_crds;
use netrollout_testkit::objects::add_node;

/// Where the persistent server keeps its objects.
fn data(lab: &Lab) -> std::path::PathBuf {
    lab.dir.path().join("api-data.json")
}

/// Replaces the lab's server (before the agent starts) by one persisting to a data file, with
/// the CRDs and the Node, and rewrites the agent's kubeconfig for it.
pub async fn persistent(lab: &mut Lab) {
    stop(lab).await;
    start(lab, 0).await;
    install_crds(&lab.api.client).await;
    add_node(&lab.api.client, &lab.node, &[], None).await;
    let server = &lab.api.server;
    let kubeconfig = server
        .kubeconfig_yaml()
        .replace(&server.url(), &lab.api_url());
    std::fs::write(lab.dir.path().join("kubeconfig"), kubeconfig).expect("write the kubeconfig");
}

/// Stops the server as a real outage does (open watches end, new connections are refused) and
/// writes its data file. A placeholder server on another port stands in the struct until
/// [`start`].
pub async fn stop(lab: &mut Lab) {
    let placeholder = LabServer::start(Config::default())
        .await
        .expect("a placeholder server");
    let server = std::mem::replace(&mut lab.api.server, placeholder);
    server
        .shutdown()
        .await
        .expect("the server stops and writes its data");
}

/// Starts the server again on `port` (the one it had), from its data file.
pub async fn start(lab: &mut Lab, port: u16) {
    let server = serve(lab, SocketAddr::from(([0, 0, 0, 0], port))).await;
    let placeholder = std::mem::replace(&mut lab.api.server, server);
    placeholder.shutdown().await.expect("the placeholder stops");
}

/// A server on `listen` persisting to the lab's data file; the lab's client is its admin's.
async fn serve(lab: &mut Lab, listen: SocketAddr) -> LabServer {
    let cfg = Config {
        listen,
        data: Some(data(lab)),
        persist_interval: Duration::from_millis(50),
        ..Config::default()
    };
    // The port was just freed; a moment may pass before it can be bound again.
    let mut tries = 0;
    let server = loop {
        match LabServer::start(cfg.clone()).await {
            Ok(s) => break s,
            Err(_) if tries < 50 => {
                tries += 1;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("the lab API server does not start again on {listen}: {e}"),
        }
    };
    lab.api.client = server.client().expect("a client");
    server
}
