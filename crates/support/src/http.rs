//! The metrics and health HTTP servers, with one failure policy: the address is bound before
//! the binary starts its work, and a bind failure is an [`Error::Bind`] the binary stops on. A
//! server that fails later (which axum only does on a broken listener) ends its future with the
//! error; the binary decides what that means.

use std::future::Future;
use std::net::SocketAddr;

use tokio::net::TcpListener;

use crate::{Error, Result};

/// Binds `addr` for the `what` server (e.g. "metrics").
///
/// # Errors
/// [`Error::Bind`], naming the server and the address.
pub async fn bind(what: &'static str, addr: SocketAddr) -> Result<TcpListener> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| Error::Bind { what, addr, source })
}

/// Serves `app` on a bound listener until `shutdown` resolves.
///
/// # Errors
/// When the listener fails.
pub async fn serve(
    listener: TcpListener,
    app: axum::Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_address_in_use_is_an_error_naming_server_and_address() {
        let first = bind("metrics", "127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        let addr = first.local_addr().unwrap();
        let e = bind("health", addr).await.unwrap_err().to_string();
        assert!(
            e.contains(&format!("cannot listen on {addr} for the health server")),
            "{e}"
        );
    }
}
