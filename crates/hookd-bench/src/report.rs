//! Presenting a [`Report`]: the table for people, JSON for scripts, and the targets.

use std::fmt::Write as _;
use std::time::Duration;

use serde_json::{Value, json};

use crate::bench::{Report, Throughput};
use crate::child::Memory;
use crate::stats::{Summary, micros};

/// A ratio between two rows, with the target it is held to.
#[derive(Debug, Clone, PartialEq)]
pub struct Ratio {
    /// What is compared with what.
    pub name: &'static str,
    /// The ratio of the medians.
    pub p50: f64,
    /// The ratio of the 99th percentiles.
    pub p99: f64,
    /// The largest acceptable ratio; `None` for ratios shown for context only.
    pub target: Option<f64>,
}

impl Ratio {
    fn new(
        name: &'static str,
        measured: &Summary,
        baseline: &Summary,
        target: Option<f64>,
    ) -> Ratio {
        Ratio {
            name,
            p50: ratio(measured.p50, baseline.p50),
            p99: ratio(measured.p99, baseline.p99),
            target,
        }
    }

    fn verdict(&self, value: f64) -> &'static str {
        match self.target {
            Some(target) if value <= target => "PASS",
            Some(_) => "MISS",
            None => "-",
        }
    }
}

/// The ratios the benchmark exists for, with their targets.
pub fn ratios(report: &Report) -> Vec<Ratio> {
    vec![
        Ratio::new(
            "no-hook event / raw ping-pong",
            &report.no_hook_lean,
            &report.raw,
            Some(1.3),
        ),
        Ratio::new(
            "tokio ping-pong / raw ping-pong",
            &report.tokio_echo,
            &report.raw,
            None,
        ),
        Ratio::new(
            "no-hook event / tokio ping-pong",
            &report.no_hook_lean,
            &report.tokio_echo,
            None,
        ),
        Ratio::new(
            "1 hook via daemon / direct spawn",
            &report.hooks.one_hook,
            &report.hooks.direct_spawn,
            Some(1.15),
        ),
        Ratio::new(
            "5 parallel hooks / 1 hook",
            &report.hooks.five_hooks,
            &report.hooks.one_hook,
            Some(1.5),
        ),
        Ratio::new(
            "5 parallel waiting hooks / 1",
            &report.hooks.sleep_five,
            &report.hooks.sleep_one,
            Some(1.5),
        ),
        Ratio::new(
            "5 direct spawns / 1 direct spawn",
            &report.hooks.five_direct,
            &report.hooks.direct_spawn,
            None,
        ),
        Ratio::new(
            "5 hooks via daemon / 5 direct spawns",
            &report.hooks.five_hooks,
            &report.hooks.five_direct,
            None,
        ),
    ]
}

fn ratio(measured: Duration, baseline: Duration) -> f64 {
    let baseline = baseline.as_secs_f64();
    if baseline > 0.0 {
        measured.as_secs_f64() / baseline
    } else {
        f64::INFINITY
    }
}

/// The unit a row's latencies are shown in.
#[derive(Debug, Clone, Copy)]
enum Unit {
    Micros,
    Millis,
}

fn format_latency(duration: Duration, unit: Unit) -> String {
    match unit {
        Unit::Micros => format!("{:.1} µs", micros(duration)),
        Unit::Millis => format!("{:.3} ms", duration.as_secs_f64() * 1e3),
    }
}

/// An integer with thousands separators, for rates.
fn format_count(value: f64) -> String {
    let digits = format!("{:.0}", value.max(0.0));
    let mut grouped = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    grouped
}

fn format_memory(memory_kib: u64) -> String {
    format!("{:.1} MiB", memory_kib as f64 / 1024.0)
}

/// The report as a table.
pub fn table(report: &Report) -> String {
    let mut out = String::new();
    let options = &report.options;
    let _ = writeln!(
        out,
        "hookd-bench: {} CPUs ({}), Linux {}; daemon runtime {}; {}; {} iterations per hook \
         row, {} samples per socket row, warm-up excluded; run took {:.0} s",
        report.machine.cpus,
        report.machine.cpu_model,
        report.machine.kernel,
        options.daemon_runtime.as_arg(),
        crate::placement::describe(),
        report.hooks.one_hook.count,
        report.raw.count,
        report.elapsed.as_secs_f64(),
    );
    let _ = writeln!(
        out,
        "frames: no-hook event request {} B, its result {} B (plus the 4-byte prefix); the \
         ping-pong sends and answers frames of the same sizes",
        report.request_bytes, report.response_bytes,
    );
    let _ = writeln!(
        out,
        "client for the daemon rows: lean blocking std UnixStream speaking the protocol \
         (hello, then pre-encoded event frames, one at a time, fixed id); the async \
         hookd-client row is for comparison; the tokio ping-pong is a tokio server built \
         like the daemon (same runtime, FrameCodec, shared sink) that answers without parsing"
    );
    let _ = writeln!(out);

    let _ = writeln!(
        out,
        "{:<48} {:>12} {:>12} {:>18}",
        "row", "p50", "p99", "throughput"
    );
    let latency_rows: [(&str, &Summary, Unit, &str); 4] = [
        (
            "raw ping-pong, 1 conn (floor)",
            &report.raw,
            Unit::Micros,
            "rt/s",
        ),
        (
            "tokio ping-pong, 1 conn (no JSON)",
            &report.tokio_echo,
            Unit::Micros,
            "rt/s",
        ),
        (
            "no-hook event, 1 conn, lean client",
            &report.no_hook_lean,
            Unit::Micros,
            "ev/s",
        ),
        (
            "no-hook event, 1 conn, hookd-client (async)",
            &report.no_hook_async,
            Unit::Micros,
            "ev/s",
        ),
    ];
    for (name, summary, unit, rate_unit) in latency_rows {
        let rate = summary.per_second.map_or_else(String::new, |rate| {
            format!("{} {rate_unit}", format_count(rate))
        });
        let _ = writeln!(
            out,
            "{name:<48} {:>12} {:>12} {rate:>18}",
            format_latency(summary.p50, unit),
            format_latency(summary.p99, unit),
        );
    }
    let throughput_rows: [(String, &Throughput, &str); 2] = [
        (
            format!("raw ping-pong, {} conns", report.raw_concurrent.connections),
            &report.raw_concurrent,
            "rt/s",
        ),
        (
            format!(
                "no-hook event, {} conns, lean client",
                report.no_hook_concurrent.connections
            ),
            &report.no_hook_concurrent,
            "ev/s",
        ),
    ];
    for (name, throughput, rate_unit) in throughput_rows {
        let rate = format!("{} {rate_unit}", format_count(throughput.per_second()));
        let _ = writeln!(out, "{name:<48} {:>12} {:>12} {rate:>18}", "-", "-");
    }
    let hook_rows: [(&str, &Summary); 6] = [
        ("1 `true` hook via daemon", &report.hooks.one_hook),
        (
            "`bash -c true` spawned directly",
            &report.hooks.direct_spawn,
        ),
        (
            "5 parallel `true` hooks via daemon",
            &report.hooks.five_hooks,
        ),
        (
            "5 `bash -c true` spawned directly at once",
            &report.hooks.five_direct,
        ),
        ("1 `sleep 0.02` hook via daemon", &report.hooks.sleep_one),
        (
            "5 parallel `sleep 0.02` hooks via daemon",
            &report.hooks.sleep_five,
        ),
    ];
    for (index, (name, summary)) in hook_rows.into_iter().enumerate() {
        let _ = writeln!(
            out,
            "{name:<48} {:>12} {:>12} {:>18}",
            format_latency(summary.p50, Unit::Millis),
            format_latency(summary.p99, Unit::Millis),
            "",
        );
        if index == 0 {
            // Where the one-hook time goes, by the daemon's own clock.
            let _ = writeln!(
                out,
                "{:<48} {:>12} {:>12}",
                "  of which the runner's hook duration",
                format_latency(report.hooks.one_hook_runner.p50, Unit::Millis),
                format_latency(report.hooks.one_hook_runner.p99, Unit::Millis),
            );
            let _ = writeln!(
                out,
                "{:<48} {:>12} {:>12}",
                "  and the rest of the round trip",
                format_latency(report.hooks.one_hook_outside_runner.p50, Unit::Micros),
                format_latency(report.hooks.one_hook_outside_runner.p99, Unit::Micros),
            );
        }
    }
    let _ = writeln!(out);

    let _ = writeln!(
        out,
        "{:<40} {:>8} {:>8} {:>9} {:>6} {:>6}",
        "ratio", "p50", "p99", "target", "p50", "p99"
    );
    for ratio in ratios(report) {
        let _ = writeln!(
            out,
            "{:<40} {:>7.2}× {:>7.2}× {:>9} {:>6} {:>6}",
            ratio.name,
            ratio.p50,
            ratio.p99,
            ratio
                .target
                .map_or_else(|| "-".to_owned(), |target| format!("≤ {target:.2}×")),
            ratio.verdict(ratio.p50),
            ratio.verdict(ratio.p99),
        );
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "server CPU per request (socket rows): echo server {:.1} µs per round trip, tokio echo \
         server {:.1} µs, daemon {:.1} µs per no-hook event",
        micros(report.socket_cpu.echo_per_round_trip),
        micros(report.socket_cpu.tokio_echo_per_round_trip),
        micros(report.socket_cpu.daemon_per_event),
    );
    let _ = writeln!(
        out,
        "in-process timing of the daemon's own work per no-hook event: parse_client_message \
         {:.2} µs (plain serde_json::from_slice into ClientMessage: {:.2} µs), encoding the \
         result {:.2} µs",
        micros(report.breakdown.parse_classifying),
        micros(report.breakdown.parse_serde_only),
        micros(report.breakdown.encode_result),
    );
    let _ = writeln!(
        out,
        "daemon RSS (VmRSS): {} idle after start, {} idle after the runs (peak VmHWM {})",
        format_memory(report.memory_idle.rss_kib),
        format_memory(report.memory_after.rss_kib),
        format_memory(report.memory_after.peak_rss_kib),
    );
    out
}

/// The report as JSON; durations in microseconds, memory in KiB.
pub fn to_json(report: &Report) -> Value {
    let throughput = |throughput: &Throughput| {
        json!({
            "connections": throughput.connections,
            "operations": throughput.operations,
            "wall_s": throughput.wall.as_secs_f64(),
            "per_second": throughput.per_second(),
        })
    };
    let memory =
        |memory: &Memory| json!({ "rss_kib": memory.rss_kib, "peak_rss_kib": memory.peak_rss_kib });
    let ratios: Vec<Value> = ratios(report)
        .iter()
        .map(|ratio| {
            json!({
                "name": ratio.name,
                "p50": ratio.p50,
                "p99": ratio.p99,
                "target": ratio.target,
                "p50_pass": ratio.target.map(|target| ratio.p50 <= target),
                "p99_pass": ratio.target.map(|target| ratio.p99 <= target),
            })
        })
        .collect();
    json!({
        "machine": {
            "cpus": report.machine.cpus,
            "cpu_model": report.machine.cpu_model,
            "kernel": report.machine.kernel,
        },
        "options": {
            "iterations": report.options.iterations,
            "daemon_runtime": report.options.daemon_runtime.as_arg(),
            "placement": crate::placement::describe(),
            "client": "lean blocking std UnixStream",
        },
        "frames": {
            "request_bytes": report.request_bytes,
            "response_bytes": report.response_bytes,
        },
        "rows": {
            "raw_ping_pong": report.raw.to_json(),
            "tokio_ping_pong": report.tokio_echo.to_json(),
            "no_hook_lean": report.no_hook_lean.to_json(),
            "no_hook_async_client": report.no_hook_async.to_json(),
            "raw_ping_pong_concurrent": throughput(&report.raw_concurrent),
            "no_hook_lean_concurrent": throughput(&report.no_hook_concurrent),
            "one_hook": report.hooks.one_hook.to_json(),
            "direct_spawn": report.hooks.direct_spawn.to_json(),
            "five_hooks": report.hooks.five_hooks.to_json(),
            "five_direct_spawns": report.hooks.five_direct.to_json(),
            "sleep_one": report.hooks.sleep_one.to_json(),
            "sleep_five": report.hooks.sleep_five.to_json(),
            "one_hook_runner_duration": report.hooks.one_hook_runner.to_json(),
            "one_hook_outside_runner": report.hooks.one_hook_outside_runner.to_json(),
        },
        "ratios": ratios,
        "server_cpu_us": {
            "echo_per_round_trip": micros(report.socket_cpu.echo_per_round_trip),
            "tokio_echo_per_round_trip": micros(report.socket_cpu.tokio_echo_per_round_trip),
            "daemon_per_no_hook_event": micros(report.socket_cpu.daemon_per_event),
        },
        "in_process_us": {
            "parse_client_message": micros(report.breakdown.parse_classifying),
            "serde_json_from_slice": micros(report.breakdown.parse_serde_only),
            "encode_result": micros(report.breakdown.encode_result),
        },
        "daemon_memory": {
            "idle_after_start": memory(&report.memory_idle),
            "idle_after_runs": memory(&report.memory_after),
        },
        "elapsed_s": report.elapsed.as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(value: f64, expected: &str) {
        assert_eq!(format_count(value), expected, "{value}");
    }

    #[test]
    fn counts_are_grouped_by_thousands() {
        let cases = [
            (0.0, "0"),
            (999.4, "999"),
            (1000.0, "1,000"),
            (65_432.6, "65,433"),
            (1_234_567.0, "1,234,567"),
            (-3.0, "0"),
        ];
        for (value, expected) in cases {
            check(value, expected);
        }
    }
}
