//! `hookd-bench policy`: what a policy hook costs per decision.
//!
//! Two views, side by side in one run:
//! - **evaluation**: each starter policy of `docs/examples/policies` evaluated in this process
//!   for a representative input (the input built from a hook payload, then the decision): the
//!   work the evaluator does per event;
//! - **through the daemon**: the real `hookd` (built next to this binary) on a temp socket,
//!   one connection sending `BeforeTool` events one after another: with no hook, with the
//!   dangerous-shell starter as a policy hook (evaluated by hookd's evaluator, a persistent
//!   worker), and with the same rule as a Python persistent worker and as a one-shot `sh`
//!   script, for comparison. The policy row over the no-hook row is what a policy adds to an
//!   event.

use std::fmt::Write as _;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use hookd_policy::{Context, Policy, Sources, policy_input};
use serde_json::{Map, Value, json};

use crate::stats::{Samples, Summary, micros};

/// Decisions measured per row by default.
pub const DEFAULT_SAMPLES: usize = 2000;

/// One row of the report.
pub struct Row {
    /// What was measured.
    pub name: String,
    /// Its latencies.
    pub summary: Summary,
}

/// The starter policies and the payload each is measured on.
fn starters(root: &Path) -> Vec<(&'static str, PathBuf, Value)> {
    let dir = root.join("docs/examples/policies");
    let tool = |name: &str, input: Value| {
        json!({"hook_event_name": "BeforeTool", "session_id": "s", "cwd": "/p",
            "tool_name": name, "tool_input": input})
    };
    vec![
        (
            "dangerous_shell",
            dir.join("dangerous_shell.rego"),
            tool(
                "run_shell_command",
                json!({"command": "cargo build --release && ls -la target"}),
            ),
        ),
        (
            "secret_files",
            dir.join("secret_files.rego"),
            tool("read_file", json!({"file_path": "src/main.rs"})),
        ),
        (
            "outside_project",
            dir.join("outside_project.rego"),
            tool(
                "write_file",
                json!({"file_path": "src/lib.rs", "content": "fn main() {}"}),
            ),
        ),
        (
            "force_push",
            dir.join("force_push.rego"),
            tool(
                "run_shell_command",
                json!({"command": "git push origin feature/x"}),
            ),
        ),
    ]
}

/// The repository root (this binary is in `target/<profile>/`).
fn repository() -> anyhow::Result<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    if root.join("docs/examples/policies").is_dir() {
        return Ok(root);
    }
    bail!(
        "docs/examples/policies not found next to {}",
        root.display()
    )
}

/// Runs both views with `samples` decisions per row.
pub fn run(samples: usize) -> anyhow::Result<Vec<Row>> {
    let root = repository()?;
    let mut rows = Vec::new();
    for (name, file, payload) in starters(&root) {
        let mut policy = Policy::load(
            &Sources {
                policy: file,
                data: Vec::new(),
            },
            &[],
        )?;
        let payload: Map<String, Value> = serde_json::from_value(payload)?;
        let context = Context {
            host: "claude".to_owned(),
            project: "/p".to_owned(),
        };
        let mut measured = Samples::default();
        for round in 0..samples + samples / 10 {
            let started = Instant::now();
            let decision = policy.evaluate(policy_input(&payload, &context))?;
            let took = started.elapsed();
            if !decision.deny.is_empty() {
                bail!("{name} denied its allowed input");
            }
            if round >= samples / 10 {
                measured.push(took);
            }
        }
        rows.push(Row {
            name: format!("evaluate {name} (in process)"),
            summary: measured.summary(),
        });
    }
    rows.extend(through_daemon(&root, samples)?);
    Ok(rows)
}

/// The daemon rows.
fn through_daemon(root: &Path, samples: usize) -> anyhow::Result<Vec<Row>> {
    let hookd = std::env::current_exe()?
        .parent()
        .context("no directory")?
        .join("hookd");
    if !hookd.exists() {
        bail!(
            "{} is missing: build it first (cargo build --release -p hookd)",
            hookd.display()
        );
    }
    let dir = tempfile::tempdir()?;
    let python_guard = dir.path().join("guard.py");
    std::fs::write(
        &python_guard,
        "import json, re, sys\n\
         pattern = re.compile(r'(^|[;&|(\\s])(sudo\\s+)?rm\\s+-[a-zA-Z]*[rR][a-zA-Z]*[fF]')\n\
         for line in sys.stdin:\n\
         \x20   event = json.loads(line)\n\
         \x20   command = (event.get('tool_input') or {}).get('command', '')\n\
         \x20   if pattern.search(command):\n\
         \x20       print(json.dumps({'decision': 'deny', 'reason': 'rm -rf is not allowed'}), flush=True)\n\
         \x20   else:\n\
         \x20       print('{}', flush=True)\n",
    )?;
    let sh_guard = dir.path().join("guard.sh");
    std::fs::write(
        &sh_guard,
        "#!/bin/sh\ncase \"$(cat)\" in *'rm -rf'*) echo '{\"decision\":\"deny\"}' ;; esac\n",
    )?;
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&sh_guard, std::fs::Permissions::from_mode(0o755))?;
    let policy = root.join("docs/examples/policies/dangerous_shell.rego");
    let python = python3()?;
    let variants: Vec<(&str, Value)> = vec![
        ("event, no hook", json!({})),
        (
            "event, policy hook (dangerous_shell)",
            json!({"type": "policy", "name": "p", "policy": policy.display().to_string()}),
        ),
        (
            "event, Python persistent worker",
            json!({"type": "command", "name": "w", "mode": "persistent",
                "command": format!("{} {}", python.display(), python_guard.display())}),
        ),
        (
            "event, sh one-shot hook",
            json!({"type": "command", "name": "o", "command": sh_guard.display().to_string()}),
        ),
    ];
    let mut rows = Vec::new();
    for (index, (name, hook)) in variants.into_iter().enumerate() {
        let home = dir.path().join(format!("home{index}"));
        let config = home.join(".config");
        std::fs::create_dir_all(config.join("hookd"))?;
        let hooks = if hook.as_object().is_some_and(Map::is_empty) {
            json!({"hooks": {}})
        } else {
            json!({"hooks": {"BeforeTool": [{"matcher": "run_shell_command", "hooks": [hook]}]}})
        };
        std::fs::write(config.join("hookd/hooks.json"), hooks.to_string())?;
        let socket = dir.path().join(format!("hookd{index}.sock"));
        let mut daemon = Daemon(
            Command::new(&hookd)
                .arg("--socket")
                .arg(&socket)
                .env_clear()
                .env("HOME", &home)
                .env("XDG_CONFIG_HOME", &config)
                .env("PATH", "/usr/bin:/bin")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()?,
        );
        let mut stream = connect(&socket, &mut daemon.0)?;
        let mut measured = Samples::default();
        // Long enough a warm-up for the worker to start and regorus's caches to fill.
        let warmup = (samples / 10).max(20);
        let take = if name.contains("one-shot") {
            samples.min(500)
        } else {
            samples
        };
        for round in 0..warmup + take {
            let started = Instant::now();
            let answer = event(&mut stream, round + 1, "cargo build && ls")?;
            let took = started.elapsed();
            if answer["final_output"]["decision"] == "deny" {
                bail!("{name}: an allowed command was denied: {answer}");
            }
            if round >= warmup {
                measured.push(took);
            }
        }
        // The rule works through the daemon too.
        let denied = event(&mut stream, warmup + take + 1, "rm -rf /")?;
        if index > 0 && denied["final_output"]["decision"] != "deny" {
            bail!("{name}: rm -rf was not denied: {denied}");
        }
        rows.push(Row {
            name: name.to_owned(),
            summary: measured.summary(),
        });
    }
    Ok(rows)
}

/// `python3` on `PATH`.
fn python3() -> anyhow::Result<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("python3"))
        .find(|candidate| candidate.exists())
        .context("python3 is not on PATH")
}

/// A daemon killed when dropped.
struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Connects once the daemon listens, and says hello.
fn connect(socket: &Path, daemon: &mut Child) -> anyhow::Result<UnixStream> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut stream = loop {
        match UnixStream::connect(socket) {
            Ok(stream) => break stream,
            Err(_) if Instant::now() < deadline => {
                if let Some(status) = daemon.try_wait()? {
                    bail!("hookd exited with {status} before it listened");
                }
                std::thread::yield_now();
            }
            Err(err) => return Err(err.into()),
        }
    };
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    send(
        &mut stream,
        &json!({"type": "hello", "protocol": 1, "client": "hookd-bench"}),
    )?;
    receive(&mut stream)?;
    Ok(stream)
}

/// One relayed BeforeTool event for a shell `command`; its result.
fn event(stream: &mut UnixStream, id: usize, command: &str) -> anyhow::Result<Value> {
    send(
        stream,
        &json!({"type": "event", "id": id, "event": "BeforeTool", "cwd": "/tmp",
            "session_id": "bench", "relayed_by": "claude",
            "input": {"tool_name": "run_shell_command", "tool_input": {"command": command}}}),
    )?;
    receive(stream)
}

fn send(stream: &mut UnixStream, message: &Value) -> anyhow::Result<()> {
    let body = serde_json::to_vec(message)?;
    let mut frame = u32::try_from(body.len())?.to_be_bytes().to_vec();
    frame.extend_from_slice(&body);
    stream.write_all(&frame)?;
    Ok(())
}

fn receive(stream: &mut UnixStream) -> anyhow::Result<Value> {
    let mut len = [0u8; 4];
    stream.read_exact(&mut len)?;
    let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
    stream.read_exact(&mut body)?;
    Ok(serde_json::from_slice(&body)?)
}

/// The report as a table, with the policy's cost per event over no hook.
pub fn table(rows: &[Row]) -> String {
    let mut out = String::from("what a policy hook costs per decision\n\n");
    let _ = writeln!(
        out,
        "{:<46} {:>8} {:>10} {:>10}",
        "row", "samples", "p50 µs", "p99 µs"
    );
    for row in rows {
        let _ = writeln!(
            out,
            "{:<46} {:>8} {:>10.1} {:>10.1}",
            row.name,
            row.summary.count,
            micros(row.summary.p50),
            micros(row.summary.p99)
        );
    }
    let p50 = |prefix: &str| {
        rows.iter()
            .find(|row| row.name.starts_with(prefix))
            .map(|row| micros(row.summary.p50))
    };
    if let (Some(none), Some(policy)) = (p50("event, no hook"), p50("event, policy hook")) {
        let _ = writeln!(
            out,
            "\npolicy hook over no hook, p50: {:+.1} µs per event",
            policy - none
        );
        if let Some(python) = p50("event, Python persistent worker") {
            let _ = writeln!(
                out,
                "Python persistent worker over no hook, p50: {:+.1} µs per event",
                python - none
            );
        }
        if let Some(sh) = p50("event, sh one-shot hook") {
            let _ = writeln!(
                out,
                "sh one-shot hook over no hook, p50: {:+.1} µs per event ({:.0}x the policy)",
                sh - none,
                (sh - none) / (policy - none).max(1.0)
            );
        }
    }
    out
}
