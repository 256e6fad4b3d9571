//! The metrics and health HTTP servers, with one failure policy: the address is bound before
//! the binary starts its work, and a bind failure is an [`Error::Bind`] the binary stops on. A
//! server that fails later (which axum only does on a broken listener) ends its future with the
//! error; the binary decides what that means.

use std::future::Future;
use std::io::ErrorKind;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::net::TcpListener;

use crate::{Error, Result};

/// How long [`bind`] tries again an address in use. A process of the same binary killed a
/// moment ago (restarted by the kubelet, or by a test) can leave its listening socket behind
/// for seconds, with no process holding it, while the kernel finishes closing its sockets (seen
/// for 7 s beside a kernel busy removing network devices): the restart would otherwise stop
/// on it.
pub const BIND_RETRY: Duration = Duration::from_secs(30);

/// Binds `addr` for the `what` server (e.g. "metrics"), trying an address in use again for
/// [`BIND_RETRY`].
///
/// # Errors
/// [`Error::Bind`], naming the server and the address.
pub async fn bind(what: &'static str, addr: SocketAddr) -> Result<TcpListener> {
    bind_within(what, addr, BIND_RETRY).await
}

/// [`bind`], trying an address in use again every 100 ms for `within` (logged once).
///
/// # Errors
/// [`Error::Bind`], naming the server and the address: at once for any other error, after
/// `within` for an address still in use.
pub async fn bind_within(
    what: &'static str,
    addr: SocketAddr,
    within: Duration,
) -> Result<TcpListener> {
    let deadline = Instant::now() + within;
    let mut said = false;
    loop {
        match TcpListener::bind(addr).await {
            Ok(listener) => return Ok(listener),
            Err(e) if e.kind() == ErrorKind::AddrInUse && Instant::now() < deadline => {
                if !said {
                    tracing::warn!(server = what, %addr, error = %e, within_s = within.as_secs(),
                        "address in use; trying again (a process stopped a moment ago may still hold it)");
                    said = true;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(source) => return Err(Error::Bind { what, addr, source }),
        }
    }
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
        let t = Instant::now();
        let e = bind_within("health", addr, Duration::from_millis(300))
            .await
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("cannot listen on {addr} for the health server")),
            "{e}"
        );
        assert!(
            t.elapsed() >= Duration::from_millis(300),
            "tried again meanwhile"
        );
    }

    #[tokio::test]
    async fn an_address_freed_while_trying_again_is_bound() {
        let first = bind("metrics", "127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        let addr = first.local_addr().unwrap();
        let freed = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            drop(first);
        });
        let second = bind_within("metrics", addr, Duration::from_secs(10)).await;
        assert_eq!(second.unwrap().local_addr().unwrap(), addr);
        freed.await.unwrap();
    }
}
