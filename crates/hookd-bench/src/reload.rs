//! `hookd-bench reload`: how long a settings save takes to reach the next event.
//!
//! A daemon (the real [`hookd_server::run`], on its own thread with a current-thread runtime,
//! as the `hookd` binary runs by default) serves one project. Each round writes a new version of the project's `.gemini/settings.json` and
//! fires events until one runs the new version; the sample is the time from the write to the
//! answer of that first event. Version `n` registers one hook whose matcher is `^v<n>$`, and
//! the events name tool `v<n>`: an event against the old registry matches nothing and is
//! answered at once, so polling is cheap, and the hook is a `runtime` hook, which hookd
//! answers without spawning a process, so the samples measure the reload (file event,
//! debounce, rebuild, swap) and not a process spawn.
//!
//! Two ways of saving are measured: renaming a new file over the old one (what editors do)
//! and rewriting the file in place. Between rounds the daemon is left idle for a moment, so
//! each round starts from a quiet watcher.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use hookd_client::{Client, ConnectOptions, EventRequest};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// How many saves of each kind are measured by default.
pub const DEFAULT_EDITS: usize = 200;

/// How long one save may take to be seen before the benchmark gives up.
const GIVE_UP_AFTER: Duration = Duration::from_secs(10);

/// The pause between two events while waiting for a save to be seen.
const POLL_EVERY: Duration = Duration::from_micros(250);

/// The quiet time between rounds.
const BETWEEN_ROUNDS: Duration = Duration::from_millis(40);

/// The latencies of one way of saving.
#[derive(Debug, Clone)]
pub struct Latencies {
    /// How the file was saved.
    pub label: &'static str,
    /// One sample per save, sorted.
    pub sorted: Vec<Duration>,
}

impl Latencies {
    /// The `p`th percentile (nearest rank).
    pub fn percentile(&self, p: f64) -> Duration {
        if self.sorted.is_empty() {
            return Duration::ZERO;
        }
        let rank = ((p / 100.0) * self.sorted.len() as f64).ceil() as usize;
        self.sorted[rank.clamp(1, self.sorted.len()) - 1]
    }
}

/// Runs the measurement and returns a printable report.
pub fn run(edits: usize) -> anyhow::Result<String> {
    let edits = edits.max(1);
    let dir = tempfile::Builder::new()
        .prefix("hookd-reload")
        .tempdir()
        .context("cannot create a temp dir")?;
    let home = dir.path().join("home");
    let project = dir.path().join("project");
    std::fs::create_dir_all(home.join(".gemini")).context("cannot create the home")?;
    std::fs::create_dir_all(project.join(".gemini")).context("cannot create the project")?;
    let settings = project.join(".gemini/settings.json");
    std::fs::write(&settings, version(0)).context("cannot write the settings")?;
    let socket = dir.path().join("hookd.sock");

    let cancel = CancellationToken::new();
    let config = hookd_server::ServerConfig::new(environment(dir.path(), &home));
    let (bound, is_bound) = std::sync::mpsc::channel();
    let daemon = std::thread::spawn({
        let socket = socket.clone();
        let cancel = cancel.clone();
        move || -> anyhow::Result<()> {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .context("cannot start the daemon's runtime")?;
            runtime.block_on(async {
                let listener = hookd_server::bind_socket(&socket)
                    .await
                    .context("cannot bind the daemon's socket")?;
                // The client may connect from now on.
                let _ = bound.send(());
                hookd_server::run(listener, config, cancel)
                    .await
                    .context("the daemon failed")
            })
        }
    });
    if is_bound.recv().is_err() {
        return match daemon.join() {
            Ok(Err(err)) => Err(err),
            _ => bail!("the daemon stopped before binding its socket"),
        };
    }

    let client_runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the client's runtime")?;
    let result = client_runtime.block_on(async {
        let client = Client::connect(&socket, ConnectOptions::new("hookd-bench/reload"))
            .await
            .context("cannot connect to the daemon")?;
        let cwd = project.display().to_string();
        // The first event loads the project (and sets up its watches).
        wait_for_version(&client, &cwd, 0).await?;
        let mut next = 1;
        let mut rows = Vec::new();
        for (label, save) in [
            (
                "rename over",
                save_by_rename as fn(&Path, &str) -> anyhow::Result<()>,
            ),
            ("write in place", save_in_place),
        ] {
            let mut samples = Vec::with_capacity(edits);
            for _ in 0..edits {
                tokio::time::sleep(BETWEEN_ROUNDS).await;
                let started = Instant::now();
                save(&settings, &version(next))?;
                wait_for_version(&client, &cwd, next).await?;
                samples.push(started.elapsed());
                next += 1;
            }
            samples.sort_unstable();
            rows.push(Latencies {
                label,
                sorted: samples,
            });
        }
        anyhow::Ok(rows)
    });
    cancel.cancel();
    match daemon.join() {
        Ok(outcome) => outcome?,
        Err(_) => bail!("the daemon thread panicked"),
    }
    let rows = result?;
    Ok(report(&rows, edits))
}

/// The daemon's environment: a private home and system paths that do not exist.
fn environment(root: &Path, home: &Path) -> HashMap<String, String> {
    let mut env = HashMap::new();
    env.insert("HOME".to_owned(), home.display().to_string());
    env.insert(
        "PATH".to_owned(),
        std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".to_owned()),
    );
    for (name, file) in [
        ("GEMINI_CLI_SYSTEM_SETTINGS_PATH", "etc/settings.json"),
        (
            "GEMINI_CLI_SYSTEM_DEFAULTS_PATH",
            "etc/system-defaults.json",
        ),
    ] {
        env.insert(name.to_owned(), root.join(file).display().to_string());
    }
    env
}

/// Version `n` of the settings: one runtime hook for tool `v<n>` only.
fn version(n: usize) -> String {
    let settings = json!({"hooks": {"BeforeTool": [{
        "matcher": format!("^v{n}$"),
        "hooks": [{"name": format!("v{n}"), "type": "runtime"}]
    }]}});
    settings.to_string()
}

fn save_by_rename(path: &Path, text: &str) -> anyhow::Result<()> {
    let temp: PathBuf = path.with_extension("json.new");
    std::fs::write(&temp, text).context("cannot write the new settings")?;
    std::fs::rename(&temp, path).context("cannot rename the new settings over the old")
}

fn save_in_place(path: &Path, text: &str) -> anyhow::Result<()> {
    std::fs::write(path, text).context("cannot rewrite the settings")
}

/// Fires events for tool `v<n>` until one runs the hook of version `n`.
async fn wait_for_version(client: &Client, cwd: &str, n: usize) -> anyhow::Result<()> {
    let deadline = Instant::now() + GIVE_UP_AFTER;
    let mut input = serde_json::Map::new();
    input.insert("tool_name".to_owned(), json!(format!("v{n}")));
    loop {
        let request = EventRequest::new("BeforeTool", cwd).with_input(input.clone());
        let answer = client.event(request).await.context("an event failed")?;
        if answer.result.hooks.len() == 1 {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("version {n} was not seen within {GIVE_UP_AFTER:?}");
        }
        tokio::time::sleep(POLL_EVERY).await;
    }
}

/// The report: one line per way of saving.
fn report(rows: &[Latencies], edits: usize) -> String {
    let mut out = format!(
        "settings save → first event that sees it ({edits} saves each, debounce included)\n"
    );
    out.push_str(&format!(
        "{:<16} {:>10} {:>10} {:>10} {:>10}\n",
        "save", "p50", "p90", "p99", "max"
    ));
    for row in rows {
        let ms = |d: Duration| format!("{:.1} ms", d.as_secs_f64() * 1000.0);
        out.push_str(&format!(
            "{:<16} {:>10} {:>10} {:>10} {:>10}\n",
            row.label,
            ms(row.percentile(50.0)),
            ms(row.percentile(90.0)),
            ms(row.percentile(99.0)),
            ms(row.percentile(100.0)),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_use_the_nearest_rank() {
        let latencies = Latencies {
            label: "x",
            sorted: (1..=100).map(Duration::from_millis).collect(),
        };
        for (p, expected) in [(50.0, 50), (99.0, 99), (100.0, 100), (0.0, 1)] {
            assert_eq!(
                latencies.percentile(p),
                Duration::from_millis(expected),
                "{p}"
            );
        }
    }
}
