//! Raw HTTP/1.1 over TCP to the lab API server's plain-HTTP port: for requests no client
//! library would send (forged or oddly cased credentials, oversized headers and paths, bodies
//! that are not JSON) and for watchers that never read.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A response as read off the wire: status code and body (chunked bodies as sent).
#[derive(Debug)]
pub struct Answer {
    pub code: u16,
    pub body: String,
}

/// Sends one request (`Connection: close`) and reads the whole answer; a server that closes
/// the connection without an answer gives code 0.
pub async fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Answer {
    let mut s = TcpStream::connect(addr)
        .await
        .expect("connect to the lab API server");
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    // The server may answer and close before it has read everything (a refused body).
    let _ = s.write_all(head.as_bytes()).await;
    let _ = s.write_all(body).await;
    let mut out = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(30), s.read_to_end(&mut out)).await;
    assert!(
        read.is_ok(),
        "no answer within 30 s to {method} {}",
        &path[..path.len().min(80)]
    );
    let text = String::from_utf8_lossy(&out).into_owned();
    let code = text
        .strip_prefix("HTTP/1.1 ")
        .and_then(|t| t.get(..3))
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Answer { code, body }
}

/// Opens a watch as `token` and never reads it: the connection stays open while the server
/// fills the socket buffers and then has to hold (or drop) what it would send.
pub async fn stalled_watch(addr: SocketAddr, token: &str, path: &str) -> TcpStream {
    let mut s = TcpStream::connect(addr)
        .await
        .expect("connect to the lab API server");
    // A small receive buffer, so the kernel takes little and the server holds the rest.
    let head = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nAccept: application/json\r\n\r\n"
    );
    s.write_all(head.as_bytes())
        .await
        .expect("send the watch request");
    s
}
