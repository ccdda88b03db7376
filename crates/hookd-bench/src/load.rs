//! `hookd-bench load`: many connections firing events for a while, to show what the daemon
//! sustains and what it leaves behind.
//!
//! The daemon runs as a child process (`hookd-bench daemon`, as for the main benchmark), on
//! the runtime the `hookd` binary uses by default. The benchmark opens N connections and, on
//! each, fires events one after the other until the time is up. Events follow a fixed mix:
//! of every 50, 45 match no hook, 4 run a `true` hook and 1 runs a hook that prints a 4 KB
//! JSON answer. Every answer is checked (the number of hooks, their success, the printed
//! message); a wrong answer or a failed request counts as an error.
//!
//! What is reported: the connections held (and the daemon's own count of them at the start
//! and at the end), the events answered per second in each 5 s window (min, median, max),
//! the errors, the daemon's resident memory (idle before the load, peak, at the end, and at
//! the end of each window), and the processes left once the load stops (children of the
//! daemon, zombies among them, and hook processes still alive anywhere).

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use hookd_client::{Client, ConnectOptions, EventRequest};
use serde_json::{Map, Value, json};

use crate::child::{Helper, Memory};
use crate::daemon::RuntimeFlavor;
use crate::fixture::{EVENT, Fixture};

/// How long the load runs by default, in seconds.
pub const DEFAULT_SECONDS: u64 = 60;

/// How many connections fire events by default.
pub const DEFAULT_CONNECTIONS: usize = 200;

/// The length of one throughput window.
const WINDOW: Duration = Duration::from_secs(5);

/// How long the processes left after the load get to go away before they are counted.
const SETTLE: Duration = Duration::from_secs(10);

/// How often the processes are counted while they settle.
const SETTLE_POLL: Duration = Duration::from_millis(50);

/// Descriptors kept free for everything else the benchmark opens.
const FD_MARGIN: u64 = 64;

/// How many error messages the report keeps.
const KEPT_ERRORS: usize = 5;

/// The tool name that matches no hook.
const TOOL_NONE: &str = "load_none";

/// The tool name whose event runs a `true` hook.
const TOOL_TRUE: &str = "load_true";

/// The tool name whose event runs a hook that prints [`PRINT_DIGITS`] digits of JSON.
const TOOL_PRINT: &str = "load_print";

/// The length of the printing hook's `systemMessage`.
const PRINT_DIGITS: usize = 4096;

/// What to run.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// How long the load runs.
    pub duration: Duration,
    /// How many connections fire events.
    pub connections: usize,
    /// The daemon's tokio runtime.
    pub daemon_runtime: RuntimeFlavor,
}

/// Which hooks an event runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// No hook matches.
    None,
    /// One `true` hook.
    True,
    /// One hook that prints a 4 KB answer.
    Print,
}

impl Kind {
    /// The kind of a connection's `n`th event: 45 in 50 none, 4 true, 1 print. The
    /// connection's index shifts the pattern so that the connections do not fire the printing
    /// hook in step.
    fn of(connection: usize, n: u64) -> Kind {
        match (n + connection as u64) % 50 {
            0 => Kind::Print,
            1..=4 => Kind::True,
            _ => Kind::None,
        }
    }

    fn tool(self) -> &'static str {
        match self {
            Kind::None => TOOL_NONE,
            Kind::True => TOOL_TRUE,
            Kind::Print => TOOL_PRINT,
        }
    }
}

/// Counters shared by the connections.
#[derive(Debug, Default)]
struct Counters {
    answered: AtomicU64,
    none: AtomicU64,
    true_hook: AtomicU64,
    print_hook: AtomicU64,
    errors: AtomicU64,
    messages: std::sync::Mutex<Vec<String>>,
}

impl Counters {
    fn error(&self, message: String) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        let mut messages = self
            .messages
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if messages.len() < KEPT_ERRORS {
            messages.push(message);
        }
    }
}

/// One 5 s window.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    /// Events answered per second in the window.
    pub events_per_second: f64,
    /// The daemon's resident memory at the end of the window.
    pub rss_kib: u64,
}

/// The processes left once the load stopped.
#[derive(Debug, Clone, Copy, Default)]
pub struct Leftovers {
    /// Processes whose parent is the daemon.
    pub children: usize,
    /// Those of them that are zombies.
    pub zombies: usize,
    /// Hook processes still alive anywhere (found by the project directory in their
    /// environment, which every hook and its descendants inherit).
    pub hook_processes: usize,
}

/// What the load run measured.
#[derive(Debug, Clone)]
pub struct Report {
    /// What was run.
    pub options: Options,
    /// Connections open when the load started.
    pub connections_held: usize,
    /// The daemon's count of open connections when the load started and when it ended
    /// (the status client included).
    pub daemon_connections: (u64, u64),
    /// Events answered, all connections together.
    pub answered: u64,
    /// Of those, how many matched no hook, ran `true`, ran the printing hook.
    pub mix: (u64, u64, u64),
    /// One entry per whole window.
    pub windows: Vec<Window>,
    /// Failed requests and wrong answers.
    pub errors: u64,
    /// The first few errors.
    pub error_messages: Vec<String>,
    /// The daemon's memory before the load.
    pub idle: Memory,
    /// The daemon's memory at the end: `peak_rss_kib` is its peak over the whole run.
    pub end: Memory,
    /// The processes left after.
    pub leftovers: Leftovers,
}

/// Runs the load and returns what it measured; [`check`] says whether it passed.
pub fn run(options: Options) -> anyhow::Result<Report> {
    let fixture = Fixture::create()?;
    let settings = fixture.project.join(".gemini/settings.json");
    std::fs::write(
        &settings,
        serde_json::to_string_pretty(&project_settings())?,
    )
    .with_context(|| format!("cannot write {}", settings.display()))?;
    raise_open_files_limit(options.connections as u64 * 2 + FD_MARGIN);

    progress("starting the daemon");
    let socket = fixture.path("hookd.sock");
    let daemon = Helper::start(
        "daemon",
        &fixture.daemon_args(&socket, options.daemon_runtime.as_arg()),
        &fixture.helper_env(),
        &fixture.path("daemon.log"),
    )?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the client runtime")?;
    let report = runtime
        .block_on(drive(&fixture, &socket, &daemon, options))
        .with_context(|| format!("the daemon's log ends with:\n{}", daemon.log_tail()))?;
    daemon.stop()?;
    Ok(report)
}

/// Connects, fires the load, and collects the figures.
async fn drive(
    fixture: &Fixture,
    socket: &Path,
    daemon: &Helper,
    options: Options,
) -> anyhow::Result<Report> {
    let status_client = connect(socket).await?;
    // Load the project's registry before measuring anything.
    let warm_up = fire(&status_client, &fixture.cwd(), Kind::True).await;
    warm_up.map_err(anyhow::Error::msg)?;
    let idle = daemon.memory()?;

    progress(&format!("opening {} connections", options.connections));
    let mut clients = Vec::with_capacity(options.connections);
    for _ in 0..options.connections {
        clients.push(connect(socket).await?);
    }
    let connections_at_start = status_client.status().await?.connections;

    progress(&format!(
        "firing events for {} s",
        options.duration.as_secs()
    ));
    let counters = Arc::new(Counters::default());
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = tokio::task::JoinSet::new();
    for (index, client) in clients.iter().enumerate() {
        let client = client.clone();
        let counters = Arc::clone(&counters);
        let stop = Arc::clone(&stop);
        let cwd = fixture.cwd();
        tasks.spawn(async move {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let kind = Kind::of(index, n);
                n += 1;
                match fire(&client, &cwd, kind).await {
                    Ok(()) => {
                        counters.answered.fetch_add(1, Ordering::Relaxed);
                        let counter = match kind {
                            Kind::None => &counters.none,
                            Kind::True => &counters.true_hook,
                            Kind::Print => &counters.print_hook,
                        };
                        counter.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(message) => counters.error(message),
                }
            }
        });
    }

    let started = Instant::now();
    let mut windows = Vec::new();
    let mut previous = 0;
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + WINDOW, WINDOW);
    while started.elapsed() + WINDOW / 2 < options.duration {
        ticks.tick().await;
        let answered = counters.answered.load(Ordering::Relaxed);
        let window = Window {
            events_per_second: (answered - previous) as f64 / WINDOW.as_secs_f64(),
            rss_kib: daemon.memory()?.rss_kib,
        };
        previous = answered;
        eprintln!(
            "hookd-bench: {:>3} s: {:>8.0} events/s, daemon RSS {}",
            started.elapsed().as_secs(),
            window.events_per_second,
            mib(window.rss_kib)
        );
        windows.push(window);
    }
    let connections_at_end = status_client.status().await?.connections;
    stop.store(true, Ordering::Relaxed);
    while let Some(joined) = tasks.join_next().await {
        joined.context("a connection's task failed")?;
    }
    let end = daemon.memory()?;
    drop(clients);
    drop(status_client);

    progress("counting the processes left");
    let leftovers = settle(daemon.pid(), &fixture.cwd()).await;
    let errors = counters.errors.load(Ordering::Relaxed);
    let error_messages = counters
        .messages
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    Ok(Report {
        options,
        connections_held: options.connections,
        daemon_connections: (connections_at_start, connections_at_end),
        answered: counters.answered.load(Ordering::Relaxed),
        mix: (
            counters.none.load(Ordering::Relaxed),
            counters.true_hook.load(Ordering::Relaxed),
            counters.print_hook.load(Ordering::Relaxed),
        ),
        windows,
        errors,
        error_messages,
        idle,
        end,
        leftovers,
    })
}

/// Opens one connection.
async fn connect(socket: &Path) -> anyhow::Result<Client> {
    Client::connect(socket, ConnectOptions::new("hookd-bench/load"))
        .await
        .with_context(|| format!("cannot connect to {}", socket.display()))
}

/// Fires one event of `kind` and checks its answer; the error says what was wrong.
async fn fire(client: &Client, cwd: &str, kind: Kind) -> Result<(), String> {
    let mut input = Map::new();
    input.insert("tool_name".into(), Value::from(kind.tool()));
    input.insert("tool_input".into(), json!({ "command": "ls" }));
    let request = EventRequest::new(EVENT, cwd).with_input(input);
    let result = match client.event(request).await {
        Ok(response) => response.result,
        Err(err) => return Err(format!("{kind:?}: {err}")),
    };
    let expected_hooks = usize::from(kind != Kind::None);
    if result.hooks.len() != expected_hooks || !result.success {
        return Err(format!("{kind:?}: unexpected result {result:?}"));
    }
    if kind == Kind::Print {
        let message = result
            .final_output
            .as_ref()
            .and_then(|output| output.get("systemMessage"))
            .and_then(Value::as_str);
        if message.map(str::len) != Some(PRINT_DIGITS) {
            return Err(format!("{kind:?}: unexpected output {result:?}"));
        }
    }
    Ok(())
}

/// Waits (a bounded poll) until the daemon has no child and no hook process is alive, then
/// counts what is left.
async fn settle(daemon: u32, cwd: &str) -> Leftovers {
    let deadline = Instant::now() + SETTLE;
    loop {
        let leftovers = count_leftovers(daemon, cwd);
        if (leftovers.children == 0 && leftovers.hook_processes == 0) || Instant::now() > deadline {
            return leftovers;
        }
        tokio::time::sleep(SETTLE_POLL).await;
    }
}

/// Scans `/proc` for the daemon's children and for live processes started for the project.
fn count_leftovers(daemon: u32, cwd: &str) -> Leftovers {
    let marker = format!("GEMINI_PROJECT_DIR={cwd}");
    let mut leftovers = Leftovers::default();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return leftovers;
    };
    for pid in entries
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
    {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some((state, ppid)) = state_and_parent(&stat) else {
            continue;
        };
        let zombie = state == "Z" || state == "X";
        if ppid == daemon {
            leftovers.children += 1;
            leftovers.zombies += usize::from(zombie);
        }
        let hook = std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|environ| {
            environ
                .split(|&byte| byte == 0)
                .any(|entry| entry == marker.as_bytes())
        });
        if hook && !zombie {
            leftovers.hook_processes += 1;
        }
    }
    leftovers
}

/// The state and the parent's pid from the contents of `/proc/<pid>/stat`, counted from the
/// last `)` because the command name may contain spaces and parentheses.
fn state_and_parent(stat: &str) -> Option<(&str, u32)> {
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some((state, ppid))
}

/// Raises the soft limit on open files to at least `wanted` (at most the hard limit), so
/// that many connections do not run out of descriptors; the daemon child inherits it.
fn raise_open_files_limit(wanted: u64) {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};

    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE)
        && soft < wanted
    {
        let _ = setrlimit(Resource::RLIMIT_NOFILE, wanted.min(hard), hard);
    }
}

/// The project's `.gemini/settings.json`: a `true` hook and a printing hook, each behind its
/// own tool name; every other tool matches nothing.
fn project_settings() -> Value {
    let print = format!("printf '{{\"systemMessage\":\"%0{PRINT_DIGITS}d\"}}\\n' 0");
    json!({
        "hooks": {
            EVENT: [
                { "matcher": format!("^{TOOL_TRUE}$"),
                  "hooks": [{ "name": "true", "type": "command", "command": "true" }] },
                { "matcher": format!("^{TOOL_PRINT}$"),
                  "hooks": [{ "name": "print", "type": "command", "command": print }] },
            ]
        }
    })
}

/// The report as text.
pub fn text(report: &Report) -> String {
    let mut rates: Vec<f64> = report
        .windows
        .iter()
        .map(|window| window.events_per_second)
        .collect();
    rates.sort_by(f64::total_cmp);
    let (min, median, max) = match rates.len() {
        0 => (0.0, 0.0, 0.0),
        n => (rates[0], median_of(&rates), rates[n - 1]),
    };
    let seconds = report.options.duration.as_secs();
    let (none, true_hook, print_hook) = report.mix;
    let window_rss: Vec<String> = report
        .windows
        .iter()
        .map(|window| mib(window.rss_kib))
        .collect();
    let mut out = String::new();
    out.push_str(&format!(
        "hookd-bench load: {} connections for {seconds} s, daemon on the {} runtime\n",
        report.options.connections,
        report.options.daemon_runtime.as_arg()
    ));
    out.push_str(&format!(
        "connections held        {} (daemon's count with the status client: {} at the start, {} at the end)\n",
        report.connections_held, report.daemon_connections.0, report.daemon_connections.1
    ));
    out.push_str(&format!(
        "events answered         {} ({none} no hook, {true_hook} `true` hook, {print_hook} 4 KB printing hook)\n",
        report.answered
    ));
    out.push_str(&format!(
        "events/s per 5 s window min {min:.0}, median {median:.0}, max {max:.0} ({} windows)\n",
        rates.len()
    ));
    out.push_str(&format!("errors                  {}\n", report.errors));
    for message in &report.error_messages {
        out.push_str(&format!("  {message}\n"));
    }
    out.push_str(&format!(
        "daemon memory           idle {}, peak (VmHWM) {}, at the end {}\n",
        mib(report.idle.rss_kib),
        mib(report.end.peak_rss_kib),
        mib(report.end.rss_kib)
    ));
    out.push_str(&format!(
        "RSS at each window end  {}\n",
        window_rss.join(", ")
    ));
    out.push_str(&format!(
        "processes left after    {} children of the daemon ({} zombies), {} hook processes alive\n",
        report.leftovers.children, report.leftovers.zombies, report.leftovers.hook_processes
    ));
    out
}

/// Whether the run passed: no error, every connection held to the end, nothing left.
pub fn check(report: &Report) -> anyhow::Result<()> {
    if report.errors > 0 {
        bail!("{} requests failed or were answered wrongly", report.errors);
    }
    let held = report.connections_held as u64;
    if report.daemon_connections.1 < held + 1 {
        bail!(
            "the daemon counted {} connections at the end, not {}",
            report.daemon_connections.1,
            held + 1
        );
    }
    let left = report.leftovers;
    if left.children > 0 || left.hook_processes > 0 {
        bail!("processes were left after the load: {left:?}");
    }
    Ok(())
}

/// The median of sorted values.
fn median_of(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

/// KiB as MiB with one decimal.
fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

fn progress(step: &str) {
    eprintln!("hookd-bench: {step}...");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mix_is_45_none_4_true_1_print_in_every_50() {
        for connection in [0, 1, 7, 199] {
            let kinds: Vec<Kind> = (0..50).map(|n| Kind::of(connection, n)).collect();
            let count = |kind| kinds.iter().filter(|&&k| k == kind).count();
            assert_eq!(
                (count(Kind::None), count(Kind::True), count(Kind::Print)),
                (45, 4, 1),
                "connection {connection}"
            );
        }
    }

    #[test]
    fn stat_lines_give_state_and_parent() {
        let cases = [
            ("42 (bash) S 7 42 42 0", Some(("S", 7))),
            ("43 (a) b) Z 1 43 43", Some(("Z", 1))),
            ("44 (x) R", None),
            ("garbage", None),
        ];
        for (stat, expected) in cases {
            assert_eq!(state_and_parent(stat), expected, "{stat:?}");
        }
    }

    #[test]
    fn medians_of_odd_and_even_counts() {
        let cases: [(&[f64], f64); 3] =
            [(&[1.0], 1.0), (&[1.0, 2.0, 9.0], 2.0), (&[1.0, 3.0], 2.0)];
        for (values, expected) in cases {
            assert_eq!(median_of(values), expected, "{values:?}");
        }
    }
}
