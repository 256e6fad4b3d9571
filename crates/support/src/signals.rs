//! SIGTERM (what Kubernetes sends) or Ctrl-C as one shutdown future.

/// Resolves at the first SIGTERM or Ctrl-C, after logging which. If SIGTERM cannot be watched
/// (no signal support), it says so and waits for Ctrl-C alone.
pub async fn shutdown() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => tokio::select! {
            _ = term.recv() => tracing::info!("SIGTERM: shutting down"),
            _ = tokio::signal::ctrl_c() => tracing::info!("interrupted: shutting down"),
        },
        Err(e) => {
            tracing::error!(error = %e, "cannot watch SIGTERM; stopping on Ctrl-C only");
            let _ = tokio::signal::ctrl_c().await;
            tracing::info!("interrupted: shutting down");
        }
    }
}
