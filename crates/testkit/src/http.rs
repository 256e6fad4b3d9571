//! Plain HTTP from blocking test code: [`metrics`] scrapes a binary's `/metrics` endpoint.

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
