//! The `/metrics` body every binary serves: the Prometheus text format (0.0.4).
//!
//! `prometheus_client` writes OpenMetrics, which names a counter's family without `_total`
//! (`# TYPE x counter` over samples `x_total`) and ends with `# EOF`. Served as `text/plain`,
//! Prometheus and `promtool check metrics` read it as the classic text format, where a family's
//! name is its samples' name: the counters lost their type and help. [`classic`] rewrites the
//! OpenMetrics text into the classic format, which every Prometheus and promtool reads.

/// The content type of [`classic`]'s output.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// OpenMetrics text (as `prometheus_client` encodes it) as the Prometheus text format: counter
/// families named as their `_total` samples, no `# UNIT` or `# EOF` lines.
pub fn classic(openmetrics: &str) -> String {
    let counters: std::collections::HashSet<&str> = openmetrics
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE ")?.strip_suffix(" counter"))
        .collect();
    let mut out = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let meta = ["# HELP ", "# TYPE "]
            .into_iter()
            .find_map(|p| Some((p, line.strip_prefix(p)?)));
        match meta {
            Some((prefix, rest)) => {
                let (name, tail) = rest.split_once(' ').unwrap_or((rest, ""));
                let sep = if tail.is_empty() { "" } else { " " };
                let suffix = if counters.contains(name) && !name.ends_with("_total") {
                    "_total"
                } else {
                    ""
                };
                out.push_str(&format!("{prefix}{name}{suffix}{sep}{tail}\n"));
            }
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_families_take_their_samples_name_and_eof_goes() {
        let om = "# HELP x_passes Passes run.\n# TYPE x_passes counter\nx_passes_total 3\n\
                  # HELP x_leader 1 while leading.\n# TYPE x_leader gauge\nx_leader 1\n\
                  # HELP x_seconds Durations.\n# TYPE x_seconds histogram\n# UNIT x_seconds seconds\n\
                  x_seconds_bucket{le=\"+Inf\"} 1\nx_seconds_sum 0.5\nx_seconds_count 1\n# EOF\n";
        assert_eq!(
            classic(om),
            "# HELP x_passes_total Passes run.\n# TYPE x_passes_total counter\nx_passes_total 3\n\
             # HELP x_leader 1 while leading.\n# TYPE x_leader gauge\nx_leader 1\n\
             # HELP x_seconds Durations.\n# TYPE x_seconds histogram\n\
             x_seconds_bucket{le=\"+Inf\"} 1\nx_seconds_sum 0.5\nx_seconds_count 1\n"
        );
    }
}
