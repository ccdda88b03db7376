//! `hookctl stats`: what the daemon ran since it started, per hook, per event, per client and
//! per relaying host, once or refreshed in place (`--watch`).

use std::fmt::Write;
use std::io::IsTerminal;
use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use hookd_protocol::StatsResponse;

/// Arguments of `hookctl stats`.
#[derive(Debug, clap::Args)]
pub struct StatsArgs {
    /// Print the daemon's answer as one JSON object (with --watch: one per refresh).
    #[arg(long)]
    pub json: bool,
    /// Ask again every --interval seconds until interrupted; on a terminal the table is
    /// redrawn in place.
    #[arg(long)]
    pub watch: bool,
    /// Seconds between refreshes with --watch.
    #[arg(long, default_value_t = 2.0, value_name = "SECONDS")]
    pub interval: f64,
}

/// Runs `hookctl stats`: returns what to print (for --watch, prints itself and returns when
/// the daemon goes away).
pub async fn run(socket: &Path, args: &StatsArgs) -> anyhow::Result<String> {
    let client = crate::connect(socket, false).await?;
    if !args.watch {
        let stats = client.stats().await.context("stats failed")?;
        return render_or_json(&stats, args.json);
    }
    let interval = Duration::from_secs_f64(args.interval.clamp(0.1, 3600.0));
    let terminal = std::io::stdout().is_terminal() && !args.json;
    loop {
        let stats = client.stats().await.context("stats failed")?;
        let text = render_or_json(&stats, args.json)?;
        {
            use std::io::Write as _;
            let mut stdout = std::io::stdout().lock();
            let written = if terminal {
                // Home, clear to the end of the screen, then the table.
                write!(stdout, "\x1b[H\x1b[2J{text}")
            } else {
                write!(stdout, "{text}")
            };
            written
                .and_then(|()| stdout.flush())
                .context("cannot write to stdout")?;
        }
        tokio::time::sleep(interval).await;
    }
}

fn render_or_json(stats: &StatsResponse, json: bool) -> anyhow::Result<String> {
    if json {
        crate::to_json_line(stats)
    } else {
        Ok(render(stats))
    }
}

/// A count map as `allow 3, deny 1`.
fn counts(map: &std::collections::BTreeMap<String, u64>) -> String {
    let parts: Vec<String> = map.iter().map(|(key, n)| format!("{key} {n}")).collect();
    if parts.is_empty() {
        "-".to_owned()
    } else {
        parts.join(", ")
    }
}

/// The counters as tables.
pub fn render(stats: &StatsResponse) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "since start ({} s ago): {} events answered",
        stats.uptime_ms / 1000,
        stats.events_served
    );
    if stats.hooks.is_empty() {
        out.push_str("No hook has run yet.\n");
    } else {
        let _ = writeln!(
            out,
            "\n{:<36} {:>6} {:>6} {:>8} {:>9} {:>9}  decisions / failures / last error",
            "HOOK (event, layer)", "RUNS", "FAILED", "TIMEOUTS", "P50 MS", "P99 MS"
        );
        for hook in &stats.hooks {
            let label = format!("{} ({}, {})", hook.name, hook.event, hook.source);
            let _ = writeln!(
                out,
                "{label:<36} {:>6} {:>6} {:>8} {:>9.1} {:>9.1}  {}",
                hook.runs,
                hook.failures,
                hook.timeouts,
                hook.p50_ms,
                hook.p99_ms,
                counts(&hook.decisions)
            );
            if hook.failures > 0 {
                let _ = writeln!(out, "{:<36} failed: {}", "", counts(&hook.failures_by_kind));
            }
            if let Some(error) = &hook.last_error {
                let _ = writeln!(out, "{:<36} last error: {error}", "");
            }
        }
        if stats.hooks_untracked > 0 {
            let _ = writeln!(
                out,
                "({} runs of further hooks are counted in their events only)",
                stats.hooks_untracked
            );
        }
    }
    if !stats.events.is_empty() {
        let _ = writeln!(
            out,
            "\n{:<20} {:>6} {:>6} {:>9} {:>9}  final decisions",
            "EVENT", "RUNS", "FAILED", "P50 MS", "P99 MS"
        );
        for event in &stats.events {
            let _ = writeln!(
                out,
                "{:<20} {:>6} {:>6} {:>9.1} {:>9.1}  {}",
                event.event,
                event.runs,
                event.failed_runs,
                event.p50_ms,
                event.p99_ms,
                counts(&event.decisions)
            );
        }
    }
    if !stats.clients.is_empty() {
        let _ = writeln!(
            out,
            "\n{:<32} {:>5} {:>7} {:>8} {:>6}",
            "CLIENT", "OPEN", "CONNS", "EVENTS", "RUNS"
        );
        for client in &stats.clients {
            let _ = writeln!(
                out,
                "{:<32} {:>5} {:>7} {:>8} {:>6}",
                client.name,
                client.connections,
                client.connections_total,
                client.events,
                client.runs
            );
        }
    }
    if !stats.relays.is_empty() {
        let relays: Vec<String> = stats
            .relays
            .iter()
            .map(|relay| format!("{} {}", relay.host, relay.events))
            .collect();
        let _ = writeln!(out, "\nrelayed events: {}", relays.join(", "));
    }
    let background = crate::background::render(stats.background.as_ref(), stats.breaker.as_ref());
    if !background.is_empty() {
        out.push('\n');
        out.push_str(&background);
    }
    if let Some(telemetry) = &stats.telemetry {
        out.push('\n');
        out.push_str(&crate::render_telemetry(telemetry));
    }
    out
}
