//! Logging: `tracing` events to stderr as text or JSON, filtered by `RUST_LOG` (default given by
//! the binary).

use tracing_subscriber::EnvFilter;

/// The log line format (`--log-format`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line, the event's fields at the top level.
    Json,
}

/// Installs the global subscriber: stderr, `format`, `RUST_LOG` or else `default_filter`
/// (e.g. `"info"`). A second call in one process changes nothing.
pub fn init_logging(format: LogFormat, default_filter: &str) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_filter));
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Json => logs.json().flatten_event(true).try_init(),
        LogFormat::Text => logs.try_init(),
    };
}
