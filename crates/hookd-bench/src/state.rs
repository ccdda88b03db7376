//! `hookd-bench state`: what `hookctl state` costs a hook (`docs/state.md`).
//!
//! Four rows against one daemon (a process of its own with its own `HOME`, so its store is a fresh
//! file in a temp dir):
//!
//! - **protocol get / set**: one `state` request's round trip through `hookd-client` on an
//!   open connection; a `set` includes its commit and fsync;
//! - **`hookctl state get` / `set` process**: one `hookctl` process, timed from just before it
//!   is spawned to just after it is reaped, as a hook runs it: exec, connect, hello, one
//!   round trip, exit.
//!
//! The process rows are interleaved (one sample of each per round); the protocol rows run
//! one after the other on one connection.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use hookd_protocol::StateOp;

use crate::child::Helper;
use crate::daemon::RuntimeFlavor;
use crate::stats::{Samples, Summary, micros};

/// What one run measured: a label and a summary per row.
#[derive(Debug, Clone)]
pub struct Report {
    rows: Vec<(&'static str, Summary)>,
    elapsed: Duration,
}

/// The sample counts: (protocol gets, protocol sets, processes of each kind).
pub fn samples(quick: bool, iterations: Option<usize>) -> (usize, usize, usize) {
    match (quick, iterations) {
        (_, Some(n)) => (n * 10, n, n),
        (true, None) => (200, 20, 10),
        (false, None) => (5000, 500, 300),
    }
}

/// Runs the state benchmark.
pub fn run(
    quick: bool,
    iterations: Option<usize>,
    runtime: RuntimeFlavor,
) -> anyhow::Result<Report> {
    let started = Instant::now();
    let (gets, sets, processes) = samples(quick, iterations);
    let hookctl = crate::relay::hookctl_path()?;
    let dir = tempfile::Builder::new()
        .prefix("hookd-bench-state-")
        .tempdir()
        .context("cannot create a temp dir")?;
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join(".gemini"))?;
    // Writes need the state token hookd gives each hook: a hook hands it over.
    let settings = serde_json::json!({"hooks": {"BeforeTool": [{"hooks": [{
        "type": "command", "name": "token",
        "command": "printf '{\"systemMessage\":\"%s\"}' \"$HOOKD_STATE_TOKEN\""
    }]}]}});
    std::fs::write(home.join(".gemini/settings.json"), settings.to_string())?;
    let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".to_owned());
    let env = vec![
        ("PATH".to_owned(), path.clone()),
        ("HOME".to_owned(), home.display().to_string()),
    ];
    let socket = dir.path().join("hookd.sock");
    let daemon_args = crate::daemon::helper_args(&socket, &home, dir.path(), runtime.as_arg());
    let daemon = Helper::start("daemon", &daemon_args, &env, &dir.path().join("daemon.log"))?;

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let cwd = dir.path().display().to_string();
    let (get_samples, set_samples, token) = runtime
        .block_on(protocol_rows(&socket, &cwd, gets, sets))
        .with_context(|| daemon.log_tail())?;

    let run_one = |args: &[&str]| -> anyhow::Result<Duration> {
        let start = Instant::now();
        let output = Command::new(&hookctl)
            .arg("--socket")
            .arg(&socket)
            .args(["state", "--session", "bench"])
            .args(args)
            .env_clear()
            .env("PATH", &path)
            .env(hookd_server::STATE_TOKEN_ENV_VAR, &token)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()
            .context("cannot run hookctl")?;
        let elapsed = start.elapsed();
        anyhow::ensure!(
            output.status.success(),
            "hookctl state {args:?} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        Ok(elapsed)
    };
    let variants: [&[&str]; 2] = [&["get", "key"], &["set", "key", "a value of some size"]];
    for variant in variants {
        for _ in 0..3 {
            run_one(variant).with_context(|| daemon.log_tail())?;
        }
    }
    eprintln!("hookd-bench state: {processes} hookctl processes of each kind...");
    let mut process_samples = [Samples::default(), Samples::default()];
    for round in 0..processes {
        for turn in 0..variants.len() {
            let index = (round + turn) % variants.len();
            process_samples[index].push(run_one(variants[index])?);
        }
    }
    daemon.stop()?;
    Ok(Report {
        rows: vec![
            ("protocol get (hookd-client)", get_samples.summary()),
            ("protocol set (hookd-client, fsync)", set_samples.summary()),
            ("hookctl state get, process", process_samples[0].summary()),
            ("hookctl state set, process", process_samples[1].summary()),
        ],
        elapsed: started.elapsed(),
    })
}

/// The round trips of `gets` gets and `sets` sets on one connection, and the state token of
/// the session `bench` (from a hook of an event in `cwd`).
async fn protocol_rows(
    socket: &Path,
    cwd: &str,
    gets: usize,
    sets: usize,
) -> anyhow::Result<(Samples, Samples, String)> {
    let client = hookd_client::Client::connect(socket, hookd_client::ConnectOptions::default())
        .await
        .context("cannot connect to the daemon")?;
    let mut request = hookd_client::EventRequest::new("BeforeTool", cwd);
    request.session_id = "bench".to_owned();
    request
        .input
        .insert("tool_name".to_owned(), serde_json::json!("bench"));
    let answer = client.event(request).await?;
    let token = answer
        .result
        .final_output
        .as_ref()
        .and_then(|output| output.get("systemMessage"))
        .and_then(serde_json::Value::as_str)
        .filter(|token| !token.is_empty())
        .context("the hook gave no state token")?
        .to_owned();
    let value = "a value of some size";
    client
        .state_with_token(
            StateOp::Set,
            "bench",
            Some("key"),
            Some(value),
            Some(&token),
        )
        .await?;
    eprintln!("hookd-bench state: {gets} protocol gets, {sets} sets...");
    let mut get_samples = Samples::default();
    for round in 0..gets + gets / 10 {
        let start = Instant::now();
        let answer = client
            .state(StateOp::Get, "bench", Some("key"), None)
            .await?;
        let elapsed = start.elapsed();
        anyhow::ensure!(answer.value.as_deref() == Some(value), "get lost the value");
        if round >= gets / 10 {
            get_samples.push(elapsed);
        }
    }
    let mut set_samples = Samples::default();
    for round in 0..sets + 10 {
        let start = Instant::now();
        client
            .state_with_token(
                StateOp::Set,
                "bench",
                Some("key"),
                Some(value),
                Some(&token),
            )
            .await?;
        let elapsed = start.elapsed();
        if round >= 10 {
            set_samples.push(elapsed);
        }
    }
    Ok((get_samples, set_samples, token))
}

/// The report as a table.
pub fn table(report: &Report) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(out, "hookctl state: round trips and whole processes\n");
    let _ = writeln!(
        out,
        "{:<40} {:>8} {:>10} {:>10}",
        "row", "samples", "p50 ms", "p99 ms"
    );
    for (label, summary) in &report.rows {
        let _ = writeln!(
            out,
            "{:<40} {:>8} {:>10.3} {:>10.3}",
            label,
            summary.count,
            micros(summary.p50) / 1000.0,
            micros(summary.p99) / 1000.0
        );
    }
    let _ = writeln!(out, "run took {:.0} s", report.elapsed.as_secs_f64());
    out
}
