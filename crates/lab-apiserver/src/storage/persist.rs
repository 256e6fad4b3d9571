//! Optional persistence: the whole store is written to one JSON file (atomically: temporary
//! file, fsync, rename) shortly after changes and on shutdown, and read back on start.

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::error::{Error, Result};
use crate::storage::State;

fn file_err(path: &Path, source: std::io::Error) -> Error {
    Error::File {
        path: path.display().to_string(),
        source,
    }
}

/// Loads `path` into `state` if the file exists.
pub fn load(path: &Path, state: &mut State) -> Result<()> {
    let text = match std::fs::read(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(file_err(path, e)),
    };
    let corrupt = |message: String| Error::CorruptData {
        path: path.display().to_string(),
        message,
    };
    let snap: Value = serde_json::from_slice(&text).map_err(|e| corrupt(e.to_string()))?;
    let (events, bytes) = state.window_cap();
    *state = State::new(events, bytes);
    state.restore(&snap).map_err(corrupt)
}

/// Writes the store to `path` if it changed since the last write.
pub fn flush(path: &Path, state: &Arc<Mutex<State>>) -> Result<()> {
    let (rv, objects) = {
        let Ok(mut st) = state.lock() else {
            return Ok(());
        };
        if !st.dirty {
            return Ok(());
        }
        st.dirty = false;
        st.snapshot()
    };
    let mut out = format!("{{\"resourceVersion\":{rv},\"objects\":[").into_bytes();
    for (i, o) in objects.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.push(b'\n');
        out.extend_from_slice(o.raw());
    }
    out.extend_from_slice(b"\n]}\n");
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::File::create(&tmp).map_err(|e| file_err(&tmp, e))?;
    f.write_all(&out)
        .and_then(|_| f.sync_all())
        .map_err(|e| file_err(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| file_err(path, e))
}
