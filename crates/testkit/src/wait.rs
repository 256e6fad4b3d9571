//! Waiting with a deadline: [`eventually`] polls a check until it holds.

use std::time::Duration;

/// Polls `check` every 50 ms until it returns true or `within` passes; the error names the last
/// error the check returned.
pub async fn eventually<F, Fut>(within: Duration, mut check: F) -> anyhow::Result<()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<bool>>,
{
    let deadline = tokio::time::Instant::now() + within;
    let mut last = None;
    loop {
        match check().await {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(e) => last = Some(e),
        }
        if tokio::time::Instant::now() >= deadline {
            anyhow::bail!("condition not met within {within:?} (last error: {last:?})");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
