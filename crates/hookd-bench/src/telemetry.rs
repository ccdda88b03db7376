//! `hookd-bench telemetry`: what OpenTelemetry export costs a decision (`docs/fleet.md`).
//!
//! Three daemons, each a process of its own on the same fixture: export off, export to a live
//! receiver (a loopback HTTP server that reads each request and answers `200`), and export
//! to a black-holed one (it accepts connections and never reads or answers, so every export
//! waits for its whole timeout). The no-hook and one-hook rows are measured on each in
//! interleaved rounds (a batch per daemon per round, the order rotating), so the machine's
//! drift spreads over all three. Then the outage phase fires events at the black-holed daemon
//! for `--outage-seconds` at a steady rate and samples its resident memory: with a bounded
//! queue and no retries it must stay flat.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;

use crate::child::Helper;
use crate::daemon::RuntimeFlavor;
use crate::fixture::{Fixture, TOOL_NO_HOOK, TOOL_ONE_HOOK};
use crate::stats::{Samples, Summary, micros};

/// The default length of the outage phase: ten minutes, a collector's plausible outage.
pub const DEFAULT_OUTAGE_SECONDS: u64 = 600;

/// Events per second fired during the outage (a busy agent's rate, well above a person's).
const OUTAGE_RATE: u64 = 200;

/// The daemons, in row order.
const MODES: [&str; 3] = [
    "export off",
    "export on, live receiver",
    "export on, black hole",
];

/// What one run measured.
#[derive(Debug, Clone)]
pub struct Report {
    /// (mode, no-hook summary, one-hook summary) per mode.
    rows: Vec<(&'static str, Summary, Summary)>,
    /// The black-holed daemon's resident memory during the outage: (seconds into it, KiB),
    /// sampled every second from its start; the outage's length and events.
    outage: (Vec<(u64, u64)>, Duration, u64),
    elapsed: Duration,
}

/// A loopback OTLP/HTTP sink: reads each request (head and `Content-Length` body) and
/// answers `200` with an empty body, one thread per connection.
fn live_receiver() -> anyhow::Result<String> {
    let listener = TcpListener::bind("127.0.0.1:0").context("cannot bind the receiver")?;
    let address = listener.local_addr()?;
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || serve_sink(stream));
        }
    });
    Ok(format!("http://{address}"))
}

fn serve_sink(mut stream: TcpStream) {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        // One request: its head, then as many body bytes as it declares.
        let head_end = loop {
            if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                break end + 4;
            }
            match stream.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
        };
        let head = String::from_utf8_lossy(&buffer[..head_end]).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|line| line.strip_prefix("content-length:"))
            .and_then(|value| value.trim().parse().ok())
            .unwrap_or(0);
        while buffer.len() < head_end + length {
            match stream.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
        }
        buffer.drain(..head_end + length);
        let answer =
            b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
        if stream.write_all(answer).is_err() {
            return;
        }
    }
}

/// A collector that accepts and never answers; the connections are held until exit.
fn black_hole() -> anyhow::Result<String> {
    let listener = TcpListener::bind("127.0.0.1:0").context("cannot bind the black hole")?;
    let address = listener.local_addr()?;
    let held: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            held.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(stream);
        }
    });
    Ok(format!("http://{address}"))
}

/// Runs the benchmark.
pub fn run(
    quick: bool,
    iterations: Option<usize>,
    outage_seconds: u64,
    runtime: RuntimeFlavor,
) -> anyhow::Result<Report> {
    let started = Instant::now();
    let (rounds, batch) = match (quick, iterations) {
        (_, Some(n)) => (10, n.div_ceil(10).max(1)),
        (true, None) => (4, 50),
        (false, None) => (20, 200),
    };
    let outage = if quick {
        Duration::from_secs(outage_seconds.min(10))
    } else {
        Duration::from_secs(outage_seconds)
    };
    let fixture = Fixture::create()?;
    let endpoints = [None, Some(live_receiver()?), Some(black_hole()?)];
    let mut daemons = Vec::new();
    for (index, endpoint) in endpoints.iter().enumerate() {
        let socket = fixture.path(&format!("t{index}.sock"));
        let mut args = fixture.daemon_args(&socket, runtime.as_arg());
        if let Some(endpoint) = endpoint {
            args.push("--otel-endpoint".into());
            args.push(endpoint.into());
        }
        let log = fixture.path(&format!("daemon-{index}.log"));
        let helper = Helper::start("daemon", &args, &fixture.helper_env(), &log)?;
        daemons.push((helper, socket));
    }
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let report = tokio.block_on(async {
        let mut clients = Vec::new();
        for (_, socket) in &daemons {
            clients.push(
                hookd_client::Client::connect(socket, hookd_client::ConnectOptions::default())
                    .await
                    .context("cannot connect to a daemon")?,
            );
        }
        let no_hook = fixture.client_event(TOOL_NO_HOOK);
        let one_hook = fixture.client_event(TOOL_ONE_HOOK);
        // Warm-up: every daemon's registry built, its spawn path and export thread busy.
        for client in &clients {
            for _ in 0..20 {
                client.event(no_hook.clone()).await?;
                client.event(one_hook.clone()).await?;
            }
        }
        eprintln!("hookd-bench telemetry: {rounds} rounds of {batch} events per row and mode...");
        let mut samples = vec![(Samples::default(), Samples::default()); MODES.len()];
        for round in 0..rounds {
            for turn in 0..MODES.len() {
                let mode = (round + turn) % MODES.len();
                let client = &clients[mode];
                for _ in 0..batch {
                    let start = Instant::now();
                    client.event(no_hook.clone()).await?;
                    samples[mode].0.push(start.elapsed());
                    let start = Instant::now();
                    client.event(one_hook.clone()).await?;
                    samples[mode].1.push(start.elapsed());
                }
            }
        }
        eprintln!(
            "hookd-bench telemetry: outage of {} s against the black-holed daemon...",
            outage.as_secs()
        );
        let hole = &daemons[2].0;
        let mut memory = vec![(0, hole.memory()?.rss_kib)];
        let mut events = 0u64;
        let outage_start = Instant::now();
        let tick = Duration::from_nanos(1_000_000_000 / OUTAGE_RATE);
        let mut next = Instant::now();
        while outage_start.elapsed() < outage {
            clients[2].event(one_hook.clone()).await?;
            events += 1;
            if events % OUTAGE_RATE == 0 {
                memory.push((outage_start.elapsed().as_secs(), hole.memory()?.rss_kib));
            }
            next += tick;
            let now = Instant::now();
            if next > now {
                tokio::time::sleep(next - now).await;
            }
        }
        memory.push((outage_start.elapsed().as_secs(), hole.memory()?.rss_kib));
        anyhow::Ok(Report {
            rows: MODES
                .iter()
                .zip(&samples)
                .map(|(mode, (none, one))| (*mode, none.summary(), one.summary()))
                .collect(),
            outage: (memory, outage_start.elapsed(), events),
            elapsed: Duration::ZERO,
        })
    })?;
    for (daemon, _) in daemons {
        daemon.stop()?;
    }
    Ok(Report {
        elapsed: started.elapsed(),
        ..report
    })
}

/// The report as a table: p50 and p99 per row and mode, and each mode's medians as a ratio
/// of export off.
pub fn table(report: &Report) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(out, "OpenTelemetry export: what a decision costs\n");
    let _ = writeln!(
        out,
        "{:<28} {:>12} {:>12} {:>9} {:>12} {:>12} {:>9}",
        "mode", "no-hook p50", "no-hook p99", "ratio", "1-hook p50", "1-hook p99", "ratio"
    );
    let (off_none, off_one) = report
        .rows
        .first()
        .map(|(_, none, one)| (micros(none.p50), micros(one.p50)))
        .unwrap_or((1.0, 1.0));
    for (mode, none, one) in &report.rows {
        let _ = writeln!(
            out,
            "{:<28} {:>9.1} µs {:>9.1} µs {:>9.3} {:>9.3} ms {:>9.3} ms {:>9.3}",
            mode,
            micros(none.p50),
            micros(none.p99),
            micros(none.p50) / off_none,
            micros(one.p50) / 1000.0,
            micros(one.p99) / 1000.0,
            micros(one.p50) / off_one,
        );
    }
    let (memory, length, events) = &report.outage;
    let mib = |kib: u64| kib as f64 / 1024.0;
    let at = |fraction: f64| {
        let second = (length.as_secs_f64() * fraction) as u64;
        memory
            .iter()
            .find(|(elapsed, _)| *elapsed >= second)
            .or(memory.last())
            .map_or(0.0, |(_, kib)| mib(*kib))
    };
    let peak = memory.iter().map(|(_, kib)| *kib).max().unwrap_or(0);
    let _ = writeln!(
        out,
        "\noutage: {events} one-hook events in {:.0} s against a black-holed collector",
        length.as_secs_f64()
    );
    let _ = writeln!(
        out,
        "daemon RSS: {:.1} MiB at start, {:.1} MiB at 10 %, {:.1} MiB at 50 %, {:.1} MiB at the \
         end, peak {:.1} MiB",
        at(0.0),
        at(0.1),
        at(0.5),
        at(1.0),
        mib(peak)
    );
    let _ = writeln!(out, "run took {:.0} s", report.elapsed.as_secs_f64());
    out
}
