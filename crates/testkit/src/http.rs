//! Plain HTTP for tests: [`metrics`] scrapes a binary's `/metrics` endpoint from blocking code;
//! [`get`] (feature `kube`) asks a running server for a path (`/healthz`, `/readyz`) from async
//! code.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

/// `GET /metrics` over HTTP/1.0 at `addr`, retrying the connection every 100 ms until `within`
/// passes (the binary may still be binding its port); returns the whole response.
pub fn metrics(addr: &str, within: Duration) -> String {
    let deadline = Instant::now() + within;
    loop {
        if let Ok(mut s) = std::net::TcpStream::connect(addr) {
            s.write_all(b"GET /metrics HTTP/1.0\r\nHost: agent\r\n\r\n")
                .unwrap();
            let mut out = String::new();
            s.read_to_string(&mut out).unwrap();
            return out;
        }
        assert!(Instant::now() < deadline, "no metrics at {addr}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `GET path` over HTTP/1.1 at `addr` (one connection, closed after the answer): the status
/// code and the body. Panics when the server cannot be reached or answers no HTTP.
#[cfg(feature = "kube")]
pub async fn get(addr: impl tokio::net::ToSocketAddrs, path: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!("GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut buf = String::new();
    s.read_to_string(&mut buf).await.unwrap();
    let status = (buf.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("GET {path}: no HTTP status in {buf:?}"));
    let body = buf.split("\r\n\r\n").nth(1).unwrap_or_default();
    (status, body.to_string())
}
