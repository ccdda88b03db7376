//! How `hookctl status`, `stats` and `list` show background work (async hooks, detached
//! events) and the hooks the circuit breaker has paused.

use std::fmt::Write;

use hookd_protocol::{BackgroundStatus, BreakerStatus, PausedHook};

/// The lines `status` and `stats` add: background runs, the breaker, each paused hook.
pub fn render(background: Option<&BackgroundStatus>, breaker: Option<&BreakerStatus>) -> String {
    let mut out = String::new();
    if let Some(background) = background {
        let _ = writeln!(
            out,
            "background runs: {} running (at most {}), {} started, {} finished, {} dropped, {} cut short",
            background.running,
            background.max,
            background.started,
            background.finished,
            background.dropped,
            background.cut_short
        );
    }
    if let Some(breaker) = breaker {
        if breaker.threshold == 0 {
            out.push_str("circuit breaker: off\n");
        } else {
            let _ = writeln!(
                out,
                "circuit breaker: pauses a hook after {} failures in a row for {} ms (doubling up to {} ms); {} pauses, {} runs skipped",
                breaker.threshold,
                breaker.backoff_ms,
                breaker.max_backoff_ms,
                breaker.pauses,
                breaker.skipped
            );
        }
        for hook in &breaker.paused {
            let _ = writeln!(
                out,
                "  paused: {} ({}): {}",
                hook.name,
                hook.event,
                paused(hook)
            );
        }
    }
    out
}

/// A paused hook's state in words.
pub fn paused(hook: &PausedHook) -> String {
    if hook.retry_in_ms == 0 {
        format!(
            "{} failures in a row; trial run due or in progress",
            hook.failures
        )
    } else {
        format!(
            "{} failures in a row; tried again in {:.1} s",
            hook.failures,
            hook.retry_in_ms as f64 / 1000.0
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines() {
        let background = BackgroundStatus {
            running: 1,
            max: 64,
            started: 3,
            finished: 2,
            dropped: 0,
            cut_short: 0,
        };
        let breaker = BreakerStatus {
            threshold: 5,
            backoff_ms: 30_000,
            max_backoff_ms: 600_000,
            pauses: 1,
            skipped: 4,
            paused: vec![PausedHook {
                event: "BeforeTool".to_owned(),
                name: "guard".to_owned(),
                failures: 5,
                retry_in_ms: 12_500,
            }],
        };
        assert_eq!(
            render(Some(&background), Some(&breaker)),
            "background runs: 1 running (at most 64), 3 started, 2 finished, 0 dropped, 0 cut short\n\
             circuit breaker: pauses a hook after 5 failures in a row for 30000 ms (doubling up to 600000 ms); 1 pauses, 4 runs skipped\n  \
             paused: guard (BeforeTool): 5 failures in a row; tried again in 12.5 s\n"
        );
        let off = BreakerStatus::default();
        assert_eq!(render(None, Some(&off)), "circuit breaker: off\n");
        assert_eq!(render(None, None), "");
    }
}
