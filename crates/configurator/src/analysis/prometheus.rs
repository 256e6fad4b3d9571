//! Prometheus's HTTP API (`GET /api/v1/query`), through the HTTP client the configurator
//! already has (kube's, with its TLS and timeouts; no credentials are sent).

use std::time::Duration;

use crate::analysis::measure::{Sample, sample_of};
use crate::error::{Error, Result};

/// A Prometheus server to query.
#[derive(Clone)]
pub struct Prometheus {
    url: String,
    client: kube::Client,
}

impl std::fmt::Debug for Prometheus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prometheus")
            .field("url", &self.url)
            .finish()
    }
}

impl Prometheus {
    /// A client of the Prometheus at `url` (`http://prometheus.monitoring:9090`, or an
    /// `https://` URL; a path prefix such as `/prometheus` is kept).
    ///
    /// # Errors
    /// [`Error::Flag`] when `url` is not an absolute http(s) URL.
    pub fn new(url: &str, timeout: Duration) -> Result<Self> {
        let bad = |why: String| Error::Flag {
            flag: "--prometheus-url",
            message: format!(
                "{url:?} {why}: give the base URL of the Prometheus server, e.g. http://prometheus.monitoring:9090"
            ),
        };
        let uri: http::Uri = url
            .parse()
            .map_err(|e| bad(format!("is not a URL ({e})")))?;
        if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.host().is_none() {
            return Err(bad("is not an http:// or https:// URL".into()));
        }
        let mut config = kube::Config::new(uri);
        config.connect_timeout = Some(timeout);
        config.read_timeout = Some(timeout);
        config.write_timeout = Some(timeout);
        let client =
            kube::Client::try_from(config).map_err(|e| bad(format!("cannot be used ({e})")))?;
        Ok(Self {
            url: url.trim_end_matches('/').to_string(),
            client,
        })
    }

    /// Runs the instant query `promql` now; any failure to get a number is inconclusive.
    pub async fn query(&self, promql: &str) -> Sample {
        let path = format!("/api/v1/query?query={}", encode(promql));
        let request = match http::Request::get(path).body(Vec::new()) {
            Ok(r) => r,
            Err(e) => return Sample::Inconclusive(format!("cannot build the request ({e})")),
        };
        match self.client.request_text(request).await {
            Ok(body) => sample_of(&body),
            Err(e) => Sample::Inconclusive(format!(
                "Prometheus at {} did not answer the query: {e}",
                self.url
            )),
        }
    }
}

impl Prometheus {
    /// Runs the instant query `promql` now: the series it returns, each as its labels (for
    /// people), or why it could not be run.
    ///
    /// # Errors
    /// Why: Prometheus unreachable, refusing the query, or answering something else.
    pub async fn series(&self, promql: &str) -> std::result::Result<Vec<String>, String> {
        let path = format!("/api/v1/query?query={}", encode(promql));
        let request = http::Request::get(path)
            .body(Vec::new())
            .map_err(|e| format!("cannot build the request ({e})"))?;
        let body = (self.client.request_text(request).await)
            .map_err(|e| format!("Prometheus at {} did not answer the query: {e}", self.url))?;
        series_of(&body)
    }
}

/// The series of a `/api/v1/query` answer, each as `{labels}` (a scalar with a value is one).
fn series_of(body: &str) -> std::result::Result<Vec<String>, String> {
    let v: serde_json::Value = serde_json::from_str(body)
        .map_err(|e| format!("Prometheus answered something that is not JSON ({e})"))?;
    if v["status"] != "success" {
        return Err(format!(
            "Prometheus refused the query: {} {}",
            v["errorType"].as_str().unwrap_or("error"),
            v["error"].as_str().unwrap_or("(no message)")
        ));
    }
    let data = &v["data"];
    match data["resultType"].as_str() {
        Some("vector" | "matrix") => Ok((data["result"].as_array().into_iter().flatten())
            .map(|s| s["metric"].to_string())
            .collect()),
        Some("scalar") => Ok(vec![data["result"][1].to_string()]),
        other => Err(format!(
            "the query returned a {} result; it must return series",
            other.unwrap_or("missing")
        )),
    }
}

/// Percent-encodes a query parameter value (RFC 3986 unreserved characters stay).
fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3);
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_are_counted_and_an_empty_vector_is_nothing() {
        let none = r#"{"status":"success","data":{"resultType":"vector","result":[]}}"#;
        assert_eq!(series_of(none), Ok(vec![]));
        let two = r#"{"status":"success","data":{"resultType":"vector","result":[
            {"metric":{"alertname":"A"},"value":[1,"1"]},{"metric":{"alertname":"B"},"value":[1,"1"]}]}}"#;
        let s = series_of(two).unwrap();
        assert_eq!(s.len(), 2);
        assert!(s[0].contains("\"alertname\":\"A\""), "{s:?}");
        let bad = r#"{"status":"error","errorType":"bad_data","error":"parse error"}"#;
        assert!(series_of(bad).unwrap_err().contains("parse error"));
    }

    #[test]
    fn a_query_is_percent_encoded_whole() {
        assert_eq!(
            encode(r#"sum(up{job="a b"}) == 0"#),
            "sum%28up%7Bjob%3D%22a%20b%22%7D%29%20%3D%3D%200"
        );
    }

    #[tokio::test]
    async fn a_url_that_is_not_http_is_refused_naming_the_flag_and_an_example() {
        for bad in ["prometheus:9090", "ftp://p:21", "not a url"] {
            let e = Prometheus::new(bad, Duration::from_secs(1))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("--prometheus-url") && e.contains("http://prometheus.monitoring:9090"),
                "{bad}: {e}"
            );
        }
        assert!(Prometheus::new("http://127.0.0.1:9090/", Duration::from_secs(1)).is_ok());
    }

    #[tokio::test]
    async fn an_unreachable_prometheus_is_inconclusive_and_says_where_it_looked() {
        // Port 1 on the loopback: nothing listens there.
        let p = Prometheus::new("http://127.0.0.1:1", Duration::from_secs(2)).unwrap();
        match p.query("up").await {
            Sample::Inconclusive(why) => assert!(why.contains("http://127.0.0.1:1"), "{why}"),
            Sample::Value(x) => panic!("a value from nowhere: {x}"),
        }
    }
}
