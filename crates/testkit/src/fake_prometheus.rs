//! A fake Prometheus: `GET /api/v1/query?query=...` answered with one series whose value a
//! test chooses per query, and every query recorded with the wall-clock time it arrived, so a
//! test can say when the configurator measured (and that it did not measure before it should).
//! Anything else is a 404. One connection at a time, `Connection: close`: the configurator
//! sends one query at a time.

use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// The value the fake answers for a query.
pub type Answer = Arc<dyn Fn(&str) -> f64 + Send + Sync>;

/// The value the fake answers for a query, or `None`: no series at all (an empty vector, what a
/// query for firing alerts returns while none fires).
pub type MaybeAnswer = Arc<dyn Fn(&str) -> Option<f64> + Send + Sync>;

/// One query the fake received.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    /// When it arrived (wall clock, comparable with the times in API objects).
    pub at: SystemTime,
    /// The PromQL, decoded.
    pub query: String,
}

/// A running fake Prometheus; stops when dropped.
#[derive(Debug)]
pub struct FakePrometheus {
    url: String,
    queries: Arc<Mutex<Vec<Query>>>,
    task: tokio::task::JoinHandle<()>,
}

impl FakePrometheus {
    /// Listens on a free loopback port and answers each query with `answer(query)`.
    pub async fn start(answer: Answer) -> Self {
        Self::start_maybe(Arc::new(move |q: &str| Some(answer(q)))).await
    }

    /// [`FakePrometheus::start`], answering a query with no series when `answer` gives `None`.
    pub async fn start_maybe(answer: MaybeAnswer) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let queries = Arc::new(Mutex::new(Vec::new()));
        let seen = queries.clone();
        let task = tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match conn.read(&mut chunk).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&buf);
                let target = head.split_whitespace().nth(1).unwrap_or_default();
                let reply = match target.split_once("/api/v1/query?query=") {
                    Some((_, q)) => {
                        let query = decode(q.split('&').next().unwrap_or_default());
                        let value = answer(&query);
                        seen.lock().unwrap().push(Query {
                            at: SystemTime::now(),
                            query,
                        });
                        let now = SystemTime::now()
                            .duration_since(SystemTime::UNIX_EPOCH)
                            .unwrap()
                            .as_secs_f64();
                        let series = match value {
                            Some(value) => format!(
                                r#"{{"metric":{{"alertname":"Fake"}},"value":[{now},"{value}"]}}"#
                            ),
                            None => String::new(),
                        };
                        let body = format!(
                            r#"{{"status":"success","data":{{"resultType":"vector","result":[{series}]}}}}"#
                        );
                        format!(
                            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                            body.len()
                        )
                    }
                    None => {
                        "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                            .to_string()
                    }
                };
                let _ = conn.write_all(reply.as_bytes()).await;
                let _ = conn.shutdown().await;
            }
        });
        Self { url, queries, task }
    }

    /// The base URL, for `--prometheus-url`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Every query so far, in the order they arrived.
    pub fn queries(&self) -> Vec<Query> {
        self.queries.lock().unwrap().clone()
    }
}

impl Drop for FakePrometheus {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Percent-decoding of a query parameter (`+` is a space).
fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' if i + 2 < b.len() => {
                let hex = std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(v) => {
                        out.push(v);
                        i += 3;
                        continue;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b'+' => out.push(b' '),
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_parameter_decodes_back_to_its_promql() {
        assert_eq!(
            decode("sum%28up%7Bjob%3D%22a%20b%22%7D%29%20%3D%3D%200"),
            r#"sum(up{job="a b"}) == 0"#
        );
        assert_eq!(decode("a+b%2"), "a b%2");
    }
}
