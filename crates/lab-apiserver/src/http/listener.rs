//! The listener: HTTPS with a self-signed certificate made at start (kubectl sends bearer
//! tokens only over TLS), and plain HTTP on the same port for clients that connect without TLS
//! (kube clients send their token either way). The first byte of a connection decides: a TLS
//! handshake starts with 0x16.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::error::Error;

/// The server's certificate: PEM for kubeconfigs, DER for kube clients.
#[derive(Clone)]
pub struct Certificate {
    /// PEM text (`certificate-authority-data` of kubeconfigs, base64-encoded there).
    pub pem: String,
    /// DER bytes.
    pub der: Vec<u8>,
    acceptor: TlsAcceptor,
}

impl std::fmt::Debug for Certificate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Certificate")
            .field("pem", &self.pem)
            .finish()
    }
}

impl Certificate {
    /// A self-signed certificate for the listen address, `127.0.0.1` and `localhost`.
    pub fn new(addr: SocketAddr) -> Result<Self, Error> {
        let tls = |message: String| Error::Tls { message };
        let names = vec![
            addr.ip().to_string(),
            "127.0.0.1".to_string(),
            "localhost".to_string(),
        ];
        let ck = rcgen::generate_simple_self_signed(names).map_err(|e| tls(e.to_string()))?;
        let der = ck.cert.der().to_vec();
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(ck.key_pair.serialize_der()));
        let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
        let config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| tls(e.to_string()))?
            .with_no_client_auth()
            .with_single_cert(vec![CertificateDer::from(der.clone())], key)
            .map_err(|e| tls(e.to_string()))?;
        Ok(Self {
            pem: ck.cert.pem(),
            der,
            acceptor: TlsAcceptor::from(Arc::new(config)),
        })
    }
}

/// How long a connection may wait for its next request's header, idle keep-alive time included
/// (hyper's `header_read_timeout` covers both). Longer than the 90 s a kube client keeps an idle
/// pooled connection: with hyper's default of 30 s the server closed connections the client
/// still counted on, and a request sent just then failed with "peer closed connection without
/// sending TLS close_notify". kube-apiserver itself keeps idle connections 90 s.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(120);

/// How long a kube client (hyper-util's pool, its default) keeps an idle connection to reuse.
const KUBE_CLIENT_POOL_IDLE: Duration = Duration::from_secs(90);
const _: () = assert!(IDLE_TIMEOUT.as_secs() > KUBE_CLIENT_POOL_IDLE.as_secs());

/// Serves `router` on `listener` until `stop` fires, then lets open requests finish for up to
/// five seconds.
pub async fn serve(
    listener: TcpListener,
    cert: Certificate,
    router: axum::Router,
    stop: oneshot::Receiver<()>,
) {
    serve_idle(listener, cert, router, stop, IDLE_TIMEOUT).await;
}

/// [`serve`], closing a connection that waited `idle` for its next request.
async fn serve_idle(
    listener: TcpListener,
    cert: Certificate,
    router: axum::Router,
    stop: oneshot::Receiver<()>,
    idle: Duration,
) {
    let graceful = GracefulShutdown::new();
    tokio::pin!(stop);
    loop {
        let (stream, _) = tokio::select! {
            _ = &mut stop => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!(error = %e, "accepting a connection failed");
                    continue;
                }
            },
        };
        let service = TowerToHyperService::new(router.clone());
        let acceptor = cert.acceptor.clone();
        let watcher = graceful.watcher();
        // As Go's net package (so kube-apiserver) does: without it, Nagle's algorithm holds a
        // watch event written right after another until the client's delayed ACK (~40 ms).
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(error = %e, "cannot set TCP_NODELAY");
        }
        tokio::spawn(async move {
            let mut first = [0u8; 1];
            let tls = matches!(stream.peek(&mut first).await, Ok(1) if first[0] == 0x16);
            let mut http = hyper::server::conn::http1::Builder::new();
            http.timer(TokioTimer::new());
            http.header_read_timeout(idle);
            let result = if tls {
                match acceptor.accept(stream).await {
                    Ok(s) => {
                        let conn = http.serve_connection(TokioIo::new(s), service);
                        watcher.watch(conn).await
                    }
                    Err(e) => {
                        tracing::debug!(error = %e, "TLS handshake failed");
                        return;
                    }
                }
            } else {
                let conn = http.serve_connection(TokioIo::new(stream), service);
                watcher.watch(conn).await
            };
            if let Err(e) = result {
                tracing::debug!(error = %e, "connection ended with an error");
            }
        });
    }
    let _ = tokio::time::timeout(Duration::from_secs(5), graceful.shutdown()).await;
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    use super::*;

    /// Sends one plain-HTTP request on `conn` and reads its whole (short) answer.
    async fn ask(conn: &mut TcpStream) -> String {
        conn.write_all(b"GET /ping HTTP/1.1\r\nHost: test\r\n\r\n")
            .await
            .unwrap();
        let mut buf = vec![0u8; 1024];
        let n = conn.read(&mut buf).await.unwrap();
        String::from_utf8_lossy(&buf[..n]).into_owned()
    }

    #[tokio::test]
    async fn an_idle_keep_alive_connection_is_closed_only_after_the_idle_timeout() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let cert = Certificate::new(addr).unwrap();
        let router = axum::Router::new().route("/ping", axum::routing::get(|| async { "pong" }));
        let (stop, stopped) = oneshot::channel();
        let idle = Duration::from_millis(1500);
        let server = tokio::spawn(serve_idle(listener, cert, router, stopped, idle));

        let mut conn = TcpStream::connect(addr).await.unwrap();
        assert!(ask(&mut conn).await.ends_with("pong"));
        // Idle for a third of the timeout: the connection is still there for the next request.
        tokio::time::sleep(idle / 3).await;
        assert!(ask(&mut conn).await.ends_with("pong"));
        // Idle past the timeout: the server has closed it (end of stream).
        tokio::time::sleep(idle * 2).await;
        let mut buf = [0u8; 16];
        let n = tokio::time::timeout(Duration::from_secs(5), conn.read(&mut buf))
            .await
            .unwrap()
            .unwrap_or(0);
        assert_eq!(n, 0, "the connection outlived its idle timeout");
        stop.send(()).unwrap();
        server.await.unwrap();
    }
}
