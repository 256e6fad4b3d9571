//! Output: the `-o` formats, aligned tables, ages and `--timeout` durations.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde::Serialize;

use crate::{Error, Result};

/// How a command prints its result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Format {
    /// Aligned columns for people.
    #[default]
    Table,
    /// The table with more detail (`nodes`: the checks each agent did not judge, and why; the
    /// whole message); the other commands print their usual table.
    Wide,
    /// One JSON document (one per line with `--watch`).
    Json,
    /// YAML.
    Yaml,
}

impl Format {
    /// Renders `value` as JSON or YAML, or calls `table` for the human form.
    ///
    /// # Errors
    /// [`Error::Output`] if the value cannot be serialised.
    pub fn render<T: Serialize>(self, value: &T, table: impl FnOnce() -> String) -> Result<String> {
        match self {
            Self::Table | Self::Wide => Ok(table()),
            Self::Json => serde_json::to_string_pretty(value)
                .map(|s| s + "\n")
                .map_err(|e| Error::Output(e.to_string())),
            Self::Yaml => serde_saphyr::to_string(value).map_err(|e| Error::Output(e.to_string())),
        }
    }
}

/// A table printed like `kubectl get`: upper-case headers, columns padded to the widest cell
/// and separated by three spaces, the last column unpadded.
#[derive(Debug, Clone)]
pub struct Table {
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these headers.
    pub fn new(headers: &[&str]) -> Self {
        Self {
            rows: vec![headers.iter().map(|h| h.to_uppercase()).collect()],
        }
    }

    /// Appends a row; missing cells print as empty.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// Number of data rows.
    pub fn len(&self) -> usize {
        self.rows.len() - 1
    }

    /// Whether the table has no data rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The aligned text, one line per row, each ending in a newline.
    pub fn render(&self) -> String {
        let columns = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let mut widths = vec![0; columns];
        for row in &self.rows {
            for (i, cell) in row.iter().enumerate() {
                widths[i] = widths[i].max(cell.chars().count());
            }
        }
        let mut out = String::new();
        for row in &self.rows {
            let mut line = String::new();
            for (i, width) in widths.iter().enumerate() {
                let cell = row.get(i).map_or("", String::as_str);
                line.push_str(cell);
                if i + 1 < columns {
                    let pad = width - cell.chars().count() + 3;
                    line.extend(std::iter::repeat_n(' ', pad));
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

/// `-` for an absent value, the value otherwise.
pub fn or_dash(value: Option<impl ToString>) -> String {
    value.map_or_else(|| "-".to_string(), |v| v.to_string())
}

/// Age of a timestamp like kubectl prints it (`42s`, `7m`, `3h`, `12d`), `-` when unknown.
pub fn age(time: Option<&Time>, now: jiff::Timestamp) -> String {
    time.map_or_else(
        || "-".to_string(),
        |t| {
            short_duration(Duration::from_secs(
                now.duration_since(t.0).as_secs().max(0).unsigned_abs(),
            ))
        },
    )
}

/// `90s` → `90s`, `150s` → `2m30s`, `3h`, `2d`.
pub fn short_duration(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..120 => format!("{s}s"),
        120..600 if !s.is_multiple_of(60) => format!("{}m{}s", s / 60, s % 60),
        120..7200 => format!("{}m", s / 60),
        7200..172_800 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86_400),
    }
}

/// Shortens `text` to at most `max` characters, marking the cut with `…`.
pub fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        let mut s: String = text.chars().take(max.saturating_sub(1)).collect();
        s.push('…');
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align_columns_to_the_widest_cell() {
        let mut t = Table::new(&["name", "phase"]);
        t.row(vec!["ncr-1".into(), "Succeeded".into()]);
        t.row(vec!["ncr-longer".into(), "Failed".into()]);
        assert_eq!(
            t.render(),
            "NAME         PHASE\nncr-1        Succeeded\nncr-longer   Failed\n"
        );
    }

    #[test]
    fn short_durations_read_like_kubectl_ages() {
        assert_eq!(short_duration(Duration::from_secs(42)), "42s");
        assert_eq!(short_duration(Duration::from_secs(150)), "2m30s");
        assert_eq!(short_duration(Duration::from_secs(3000)), "50m");
        assert_eq!(short_duration(Duration::from_secs(3 * 3600)), "3h");
        assert_eq!(short_duration(Duration::from_secs(5 * 86_400)), "5d");
    }

    #[test]
    fn long_text_is_cut_with_an_ellipsis() {
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(truncate("abc", 4), "abc");
    }
}
