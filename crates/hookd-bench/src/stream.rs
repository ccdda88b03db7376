//! `hookd-bench stream`: per-chunk AfterModel filtering, measured side by side.
//!
//! Every row streams the same model response chunks through an AfterModel stream session of
//! the daemon, one project per row (AfterModel ignores matchers, so a project's AfterModel
//! hooks all run on every chunk):
//!
//! - **one-shot bash**: a bash script per chunk that replaces `foo` with `bar` in the chunk,
//!   the way Gemini CLI runs a hook (a process per hook per chunk);
//! - **persistent worker**: the same replacement by a Python worker started once, answering
//!   one JSON line per chunk, with its whole input and with `drop_fields` leaving out
//!   `llm_request` and `full_content`;
//! - **builtin filter**: hookd's `redact` filter with its default secret patterns, in the
//!   daemon;
//! - **no hook**: a project with no AfterModel hook;
//! - **Node one-shot / pre-warmed / worker**: one Node script (the same replacement) run as a
//!   one-shot hook, as a pre-warmed one-shot hook, and as a persistent worker;
//! - **raw ping-pong**: two processes exchanging frames of the chunk request's and the
//!   no-hook answer's sizes over a Unix socket, the floor.
//!
//! The fast rows are measured in interleaved batches whose order rotates, so noise on the
//! machine hits them alike. The pre-warmed row leaves time between chunks for the spare
//! process to start, as a real agent does between tool calls; the one-shot Node row is paced
//! the same way so the two compare like for like.

use std::io::Write as _;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use hookd_client::blocking::FrameReader;
use hookd_protocol::{ClientHello, ClientMessage, encode};
use serde_json::{Value, json};

use crate::child::Helper;
use crate::daemon::RuntimeFlavor;
use crate::echo::PingPong;
use crate::frame::frame;
use crate::stats::{Samples, Summary, micros};

/// The text of every chunk: about 200 bytes, as a streamed model answer's chunk is.
const CHUNK_TEXT: &str = "The quick brown fox jumps over the lazy dog while foo counts the \
                          seconds between two tool calls, and the model keeps streaming its \
                          answer one small chunk at a time to the terminal of the user.";

/// The stream id every row uses: one stream per connection.
const STREAM_ID: u64 = 7;

/// Chunks of one model response: after this many the stream is closed and the next response
/// opens a new one (untimed), as an agent does. hookd's chunk text `full_content` grows with every chunk of
/// a response, so a stream that never ends would measure an ever larger payload.
const RESPONSE_CHUNKS: u64 = 100;

/// The rows, in the order the table lists them.
const ROWS: [Row; 8] = [
    Row::OneShotBash,
    Row::Worker,
    Row::WorkerTrimmed,
    Row::Builtin,
    Row::NoHook,
    Row::NodeOneShot,
    Row::NodePrewarmed,
    Row::NodeWorker,
];

/// One measured configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Row {
    OneShotBash,
    Worker,
    WorkerTrimmed,
    Builtin,
    NoHook,
    NodeOneShot,
    NodePrewarmed,
    NodeWorker,
}

impl Row {
    /// The row's label in the table.
    fn label(self) -> &'static str {
        match self {
            Row::OneShotBash => "(a) one-shot bash hook per chunk",
            Row::Worker => "(b) persistent worker (python)",
            Row::WorkerTrimmed => "(b') the same, drop_fields",
            Row::Builtin => "(c) builtin redact filter",
            Row::NoHook => "(d) no hook",
            Row::NodeOneShot => "node one-shot hook",
            Row::NodePrewarmed => "node pre-warmed one-shot hook",
            Row::NodeWorker => "node persistent worker",
        }
    }

    /// The project directory name of the row.
    fn project(self) -> &'static str {
        match self {
            Row::OneShotBash => "bash",
            Row::Worker => "worker",
            Row::WorkerTrimmed => "worker-trimmed",
            Row::Builtin => "builtin",
            Row::NoHook => "none",
            Row::NodeOneShot => "node-oneshot",
            Row::NodePrewarmed => "node-prewarm",
            Row::NodeWorker => "node-worker",
        }
    }

    /// The row's AfterModel hook entry, if it has one.
    fn hook(self, scripts: &Path) -> Option<Value> {
        let script = |name: &str| scripts.join(name).display().to_string();
        let node = format!("node {}", script("filter.js"));
        match self {
            Row::OneShotBash => Some(json!({
                "name": "bash-filter", "type": "command", "command": script("filter.sh"),
            })),
            Row::Worker => Some(json!({
                "name": "py-worker", "type": "command", "mode": "persistent",
                "command": format!("python3 {}", script("filter.py")),
            })),
            Row::WorkerTrimmed => Some(json!({
                "name": "py-worker", "type": "command", "mode": "persistent",
                "drop_fields": ["llm_request", "full_content"],
                "command": format!("python3 {}", script("filter.py")),
            })),
            Row::Builtin => Some(json!({
                "name": "redact", "type": "builtin", "builtin": "redact",
            })),
            Row::NoHook => None,
            Row::NodeOneShot => Some(json!({
                "name": "node-oneshot", "type": "command", "command": node,
            })),
            Row::NodePrewarmed => Some(json!({
                "name": "node-prewarm", "type": "command", "prewarm": true, "command": node,
            })),
            Row::NodeWorker => Some(json!({
                "name": "node-worker", "type": "command", "mode": "persistent", "command": node,
            })),
        }
    }

    /// Whether the row's answers carry the `foo` → `bar` replacement.
    fn replaces(self) -> bool {
        !matches!(self, Row::Builtin | Row::NoHook)
    }
}

/// The one-shot bash filter: plain shell, no `jq`, as many users' hooks are written.
const FILTER_SH: &str = r#"#!/usr/bin/env bash
# Replaces foo with bar in the chunk's text (the payload's "content").
payload=$(cat)
# The chunk's text follows llm_response (llm_request's messages have a "content" too).
content=${payload#*\"llm_response\"}
content=${content#*\"content\":\"}
content=${content%%\"*}
printf '{"content":"%s"}\n' "${content//foo/bar}"
"#;

/// The same replacement as a Python worker: one JSON line in, one JSON line out.
const FILTER_PY: &str = r#"import json, sys
for line in sys.stdin:
    payload = json.loads(line)
    text = payload.get("content", "")
    sys.stdout.write(json.dumps({"content": text.replace("foo", "bar")}) + "\n")
    sys.stdout.flush()
"#;

/// The same replacement in Node, line by line: as a one-shot hook it reads the single
/// payload (the last line, without a newline) and exits at end of input.
const FILTER_JS: &str = r#"const readline = require("readline");
const lines = readline.createInterface({ input: process.stdin });
lines.on("line", (line) => {
  const payload = JSON.parse(line);
  const text = String(payload.content || "").split("foo").join("bar");
  process.stdout.write(JSON.stringify({ content: text }) + "\n");
});
"#;

/// How much to measure.
#[derive(Debug, Clone)]
pub struct Options {
    /// Samples of each fast row (builtin, no hook, raw, workers).
    pub fast_samples: usize,
    /// Samples of the one-shot bash row.
    pub oneshot_samples: usize,
    /// Samples of each paced Node one-shot row.
    pub node_samples: usize,
    /// Chunks of the pipelined throughput run.
    pub pipelined_chunks: usize,
    /// The daemon's runtime.
    pub runtime: RuntimeFlavor,
    /// Which rows to measure.
    pub rows: RowSet,
    /// The benchmark binary whose `daemon` helper is measured; `None` for this one.
    pub daemon_binary: Option<PathBuf>,
}

/// Which rows a run measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowSet {
    /// Every row.
    All,
    /// Only the interleaved fast rows (workers, builtin filter, no hook) and the floors: what
    /// an A/B comparison of two builds looks at, a fraction of the time.
    Fast,
}

impl Options {
    /// The default run (a few minutes), or a quick one.
    pub fn new(quick: bool, runtime: RuntimeFlavor) -> Options {
        if quick {
            Options {
                fast_samples: 500,
                oneshot_samples: 20,
                node_samples: 4,
                pipelined_chunks: 20_000,
                runtime,
                rows: RowSet::All,
                daemon_binary: None,
            }
        } else {
            Options {
                fast_samples: 20_000,
                oneshot_samples: 300,
                node_samples: 30,
                pipelined_chunks: 500_000,
                runtime,
                rows: RowSet::All,
                daemon_binary: None,
            }
        }
    }
}

/// What one run measured.
#[derive(Debug, Clone)]
pub struct Report {
    /// Per-chunk latency of each row, in [`ROWS`] order.
    rows: Vec<(Row, Summary)>,
    /// The daemon's CPU time per chunk of each fast row (its threads' scheduler time over
    /// the row's batches, divided by their chunks), in [`ROWS`] order.
    daemon_cpu: Vec<(Row, Duration)>,
    /// The raw ping-pong floor with the chunk's and the no-hook answer's frame sizes.
    raw: Summary,
    /// The raw ping-pong floor with the builtin filter's answer size.
    raw_builtin: Summary,
    /// The builtin filter's typical answer size.
    builtin_response_bytes: usize,
    /// Chunks per second of a no-hook stream, pipelined on one connection.
    pipelined_per_second: f64,
    /// The chunk request's body size.
    request_bytes: usize,
    /// The no-hook answer's body size.
    response_bytes: usize,
    /// How long the run took.
    elapsed: Duration,
}

impl Report {
    /// The daemon's CPU time per chunk of `row`, when it was measured.
    fn daemon_cpu(&self, row: Row) -> Option<Duration> {
        self.daemon_cpu
            .iter()
            .find(|(r, _)| *r == row)
            .map(|(_, cpu)| *cpu)
    }

    /// The median latency of `row`, when it was measured.
    fn p50(&self, row: Row) -> Option<Duration> {
        self.rows
            .iter()
            .find(|(r, _)| *r == row)
            .map(|(_, summary)| summary.p50)
    }

    /// The builtin filter's daemon CPU per chunk over the no-hook chunk's: what the filter
    /// adds, independent of how fast the machine is at the moment.
    fn filter_cpu_ratio(&self) -> Option<f64> {
        let builtin = self.daemon_cpu(Row::Builtin)?;
        let none = self.daemon_cpu(Row::NoHook)?;
        (!none.is_zero()).then(|| builtin.as_secs_f64() / none.as_secs_f64())
    }
}

/// The most the builtin filter's daemon CPU per chunk may be, as a multiple of the no-hook
/// chunk's (`(c) / (d)`): what it was before streams and filters gained holdback across relayed
/// chunks, limits and large-chunk filtering (1.3 to 1.5 measured across cores, depending on
/// the sitting; see `docs/benchmarks.md`), which none of them needs on a small chunk.
pub const FILTER_CPU_RATIO_TARGET: f64 = 1.5;

/// The rows an A/B comparison shows: the in-daemon rows and the Python worker's.
const AB_ROWS: [Row; 3] = [Row::Builtin, Row::NoHook, Row::Worker];

/// Two builds' fast rows, measured in alternating rounds of one sitting.
#[derive(Debug, Clone)]
pub struct Comparison {
    /// The other build's binary.
    pub other: PathBuf,
    /// This build's runs, one per round.
    pub this_runs: Vec<Report>,
    /// The other build's runs, one per round.
    pub other_runs: Vec<Report>,
}

/// Runs the fast rows of this build and of `other` (another build's `hookd-bench`, whose
/// daemon helper is then measured) in `rounds` alternating rounds, the order flipped every
/// round (A B, B A, ...) so that a slow drift of the machine hits both alike.
pub fn compare(options: &Options, other: &Path, rounds: usize) -> anyhow::Result<Comparison> {
    anyhow::ensure!(
        other.is_file(),
        "{} is not a file: --against takes another build's hookd-bench binary",
        other.display()
    );
    let mut comparison = Comparison {
        other: other.to_path_buf(),
        this_runs: Vec::new(),
        other_runs: Vec::new(),
    };
    for round in 0..rounds.max(1) {
        for turn in 0..2 {
            let other_turn = (round + turn) % 2 == 1;
            let mut run_options = options.clone();
            run_options.rows = RowSet::Fast;
            run_options.daemon_binary = other_turn.then(|| other.to_path_buf());
            let which = if other_turn { "other" } else { "this" };
            eprintln!(
                "hookd-bench stream: round {} of {rounds}, {which} build",
                round + 1
            );
            let report = run(run_options)?;
            if other_turn {
                comparison.other_runs.push(report);
            } else {
                comparison.this_runs.push(report);
            }
        }
    }
    Ok(comparison)
}

/// The median of some durations (the lower middle one of an even count).
fn median(mut values: Vec<Duration>) -> Option<Duration> {
    values.sort_unstable();
    values.get(values.len().saturating_sub(1) / 2).copied()
}

/// The median of some ratios.
fn median_f64(mut values: Vec<f64>) -> Option<f64> {
    values.retain(|value| value.is_finite());
    values.sort_unstable_by(f64::total_cmp);
    values.get(values.len().saturating_sub(1) / 2).copied()
}

/// The comparison as a table: each row's medians over the rounds for both builds, and the
/// filter's CPU ratio of each with its target.
pub fn comparison_table(comparison: &Comparison) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let rounds = comparison.this_runs.len();
    let _ = writeln!(
        out,
        "A/B, one sitting, {rounds} alternating rounds; medians over the rounds\n\
         A = this build, B = {}\n",
        comparison.other.display()
    );
    let _ = writeln!(
        out,
        "{:<32} {:>9} {:>9} {:>14} {:>14} {:>7}",
        "row", "A p50 µs", "B p50 µs", "A CPU/chunk µs", "B CPU/chunk µs", "A/B CPU"
    );
    let cell = |value: Option<Duration>| {
        value.map_or_else(|| "-".to_owned(), |v| format!("{:.1}", micros(v)))
    };
    for row in AB_ROWS {
        let p50 = |runs: &[Report]| median(runs.iter().filter_map(|r| r.p50(row)).collect());
        let cpu = |runs: &[Report]| median(runs.iter().filter_map(|r| r.daemon_cpu(row)).collect());
        let (a_cpu, b_cpu) = (cpu(&comparison.this_runs), cpu(&comparison.other_runs));
        let ratio = match (a_cpu, b_cpu) {
            (Some(a), Some(b)) if !b.is_zero() => {
                format!("{:.2}", a.as_secs_f64() / b.as_secs_f64())
            }
            _ => "-".to_owned(),
        };
        let _ = writeln!(
            out,
            "{:<32} {:>9} {:>9} {:>14} {:>14} {:>7}",
            row.label(),
            cell(p50(&comparison.this_runs)),
            cell(p50(&comparison.other_runs)),
            cell(a_cpu),
            cell(b_cpu),
            ratio
        );
    }
    let _ = writeln!(
        out,
        "
(c) builtin / (d) no hook, daemon CPU per chunk (median of the rounds' ratios; \
         target <= {FILTER_CPU_RATIO_TARGET}):"
    );
    for (name, runs) in [("A", &comparison.this_runs), ("B", &comparison.other_runs)] {
        let per_round: Vec<f64> = runs.iter().filter_map(Report::filter_cpu_ratio).collect();
        let rounds_text: Vec<String> = per_round.iter().map(|r| format!("{r:.2}")).collect();
        match median_f64(per_round) {
            Some(value) => {
                let verdict = if value <= FILTER_CPU_RATIO_TARGET {
                    "PASS"
                } else {
                    "MISS"
                };
                let _ = writeln!(
                    out,
                    "  {name}: {value:.2} {verdict} (rounds: {})",
                    rounds_text.join(", ")
                );
            }
            None => {
                let _ = writeln!(out, "  {name}: not measured");
            }
        }
    }
    out
}

/// Runs the stream benchmark.
pub fn run(options: Options) -> anyhow::Result<Report> {
    let started = Instant::now();
    let dir = tempfile::Builder::new()
        .prefix("hookd-bench-stream-")
        .tempdir()
        .context("cannot create a temp dir")?;
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join(".gemini"))?;
    let scripts = dir.path().join("scripts");
    std::fs::create_dir_all(&scripts)?;
    write_script(&scripts.join("filter.sh"), FILTER_SH)?;
    write_script(&scripts.join("filter.py"), FILTER_PY)?;
    write_script(&scripts.join("filter.js"), FILTER_JS)?;
    for row in ROWS {
        let settings_dir = dir.path().join(row.project()).join(".gemini");
        std::fs::create_dir_all(&settings_dir)?;
        let hooks = match row.hook(&scripts) {
            Some(hook) => json!({"AfterModel": [{"hooks": [hook]}]}),
            None => json!({"BeforeTool": [{"matcher": "nothing_matches_this", "hooks": [
                {"type": "command", "command": "true"}]}]}),
        };
        std::fs::write(
            settings_dir.join("settings.json"),
            serde_json::to_vec_pretty(&json!({ "hooks": hooks }))?,
        )?;
    }
    let env = vec![
        (
            "PATH".to_owned(),
            std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".to_owned()),
        ),
        ("HOME".to_owned(), home.display().to_string()),
    ];

    progress("starting the daemon");
    let socket = dir.path().join("hookd.sock");
    let daemon_args =
        crate::daemon::helper_args(&socket, &home, dir.path(), options.runtime.as_arg());
    let daemon_log = dir.path().join("daemon.log");
    let daemon = match &options.daemon_binary {
        Some(exe) => Helper::start_exe(exe, "daemon", &daemon_args, &env, &daemon_log)?,
        None => Helper::start("daemon", &daemon_args, &env, &daemon_log)?,
    };

    let cwd = |row: Row| dir.path().join(row.project()).display().to_string();
    let mut streams = Vec::new();
    for row in ROWS {
        let stream = ChunkStream::open(&socket, &cwd(row), row)
            .with_context(|| format!("{}: {}", row.label(), daemon.log_tail()))?;
        streams.push((row, stream));
    }
    let request_bytes = streams
        .first()
        .map_or(0, |(_, stream)| stream.chunk_body_len());
    let response_bytes = streams
        .iter_mut()
        .find(|(row, _)| *row == Row::NoHook)
        .context("no no-hook stream")?
        .1
        .chunk()?
        .len();

    // The builtin filter's answers carry the hook's record: its floor is a ping-pong with
    // answers of that size (the median of a response's worth of answers).
    let builtin_response_bytes = {
        let stream = &mut streams[row_index(Row::Builtin)].1;
        let mut sizes = Vec::new();
        for _ in 0..RESPONSE_CHUNKS {
            stream.roll()?;
            sizes.push(stream.chunk()?.len());
        }
        sizes.sort_unstable();
        sizes
            .get(sizes.len() / 2)
            .copied()
            .unwrap_or(response_bytes)
    };

    progress("starting the echo servers");
    let mut body = b"{".to_vec();
    body.extend_from_slice(&vec![b' '; request_bytes.saturating_sub(2)]);
    body.push(b'}');
    let mut echoes = Vec::new();
    let mut floors = Vec::new();
    for (name, reply_bytes) in [
        ("echo", response_bytes),
        ("echo-builtin", builtin_response_bytes),
    ] {
        let socket = dir.path().join(format!("{name}.sock"));
        echoes.push(Helper::start(
            "echo server",
            &[
                "echo-server".into(),
                socket.clone().into(),
                "--reply-bytes".into(),
                reply_bytes.to_string().into(),
            ],
            &env,
            &dir.path().join(format!("{name}.log")),
        )?);
        floors.push(PingPong::connect(&socket, &body, reply_bytes)?);
    }

    // Warm every row once more (workers started, spares spawned, caches filled).
    for (_, stream) in &mut streams {
        for _ in 0..3 {
            stream.roll()?;
            stream.chunk()?;
        }
    }

    progress("measuring the fast rows, interleaved");
    let fast = [
        Row::Worker,
        Row::WorkerTrimmed,
        Row::Builtin,
        Row::NoHook,
        Row::NodeWorker,
    ];
    let mut samples: Vec<Samples> = vec![Samples::default(); ROWS.len()];
    let mut floor_samples: Vec<Samples> = vec![Samples::default(); floors.len()];
    let mut daemon_cpu: Vec<Duration> = vec![Duration::ZERO; ROWS.len()];
    let batch = 500.min(options.fast_samples);
    let rounds = options.fast_samples.div_ceil(batch.max(1));
    let turns = fast.len() + floors.len();
    for round in 0..rounds {
        for turn in 0..turns {
            let which = (round + turn) % turns;
            if let Some(floor) = which.checked_sub(fast.len()) {
                for _ in 0..batch {
                    let start = Instant::now();
                    floors[floor].round_trip()?;
                    floor_samples[floor].push(start.elapsed());
                }
                continue;
            }
            let row = fast[which];
            let index = row_index(row);
            let stream = &mut streams[index].1;
            let cpu_before = daemon.thread_cpu_time()?;
            for _ in 0..batch {
                stream.roll()?;
                let start = Instant::now();
                stream.chunk()?;
                samples[index].push(start.elapsed());
            }
            daemon_cpu[index] += daemon.thread_cpu_time()?.saturating_sub(cpu_before);
        }
    }

    let mut pipelined_per_second = f64::NAN;
    if options.rows == RowSet::All {
        progress("measuring the one-shot bash row");
        let index = row_index(Row::OneShotBash);
        for _ in 0..options.oneshot_samples {
            streams[index].1.roll()?;
            let start = Instant::now();
            streams[index].1.chunk()?;
            samples[index].push(start.elapsed());
        }

        progress("measuring the Node one-shot and pre-warmed rows, paced");
        // Enough time for a spare Node process to start between two chunks.
        let pace = Duration::from_millis(300);
        for _ in 0..options.node_samples {
            for row in [Row::NodeOneShot, Row::NodePrewarmed] {
                std::thread::sleep(pace);
                let index = row_index(row);
                streams[index].1.roll()?;
                let start = Instant::now();
                streams[index].1.chunk()?;
                samples[index].push(start.elapsed());
            }
        }

        progress("measuring pipelined no-hook chunks");
        pipelined_per_second = pipelined(&socket, &cwd(Row::NoHook), options.pipelined_chunks)?;
    }

    for (_, stream) in streams {
        stream.close()?;
    }
    for echo in echoes {
        echo.stop()?;
    }
    daemon.stop()?;
    Ok(Report {
        rows: ROWS
            .iter()
            .map(|&row| (row, samples[row_index(row)].summary()))
            .filter(|(_, summary)| summary.count > 0)
            .collect(),
        daemon_cpu: fast
            .iter()
            .map(|&row| {
                let index = row_index(row);
                let chunks =
                    u32::try_from(samples[index].summary().count.max(1)).unwrap_or(u32::MAX);
                (row, daemon_cpu[index] / chunks)
            })
            .collect(),
        raw: floor_samples[0].summary(),
        raw_builtin: floor_samples[1].summary(),
        builtin_response_bytes,
        pipelined_per_second,
        request_bytes,
        response_bytes,
        elapsed: started.elapsed(),
    })
}

/// The position of `row` in [`ROWS`].
fn row_index(row: Row) -> usize {
    ROWS.iter().position(|&r| r == row).unwrap_or(0)
}

/// Writes an executable script.
fn write_script(path: &Path, text: &str) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))?;
    Ok(())
}

/// A blocking connection with one open AfterModel stream.
struct ChunkStream {
    stream: UnixStream,
    reader: FrameReader,
    row: Row,
    /// The project directory of the stream.
    cwd: String,
    /// The `seq` of the next chunk of the current response.
    seq: u64,
}

/// The `llm_request` of every stream: a short conversation.
fn llm_request() -> Value {
    json!({
        "model": "gemini-2.5-flash",
        "messages": [
            {"role": "user", "content": "Explain what a hook daemon is, briefly."}
        ],
        "config": {"temperature": 0.2}
    })
}

/// The body of chunk `seq` of stream [`STREAM_ID`].
fn chunk_body(seq: u64) -> Vec<u8> {
    let message = json!({
        "type": "chunk",
        "id": STREAM_ID,
        "seq": seq,
        "llm_response": {
            "candidates": [{"content": {"role": "model", "parts": [CHUNK_TEXT]}}]
        }
    });
    serde_json::to_vec(&message).unwrap_or_default()
}

impl ChunkStream {
    /// Connects, says hello and opens the stream.
    fn open(socket: &Path, cwd: &str, row: Row) -> anyhow::Result<ChunkStream> {
        let stream = UnixStream::connect(socket)
            .with_context(|| format!("cannot connect to {}", socket.display()))?;
        let mut this = ChunkStream {
            stream,
            reader: crate::frame::reader(),
            row,
            cwd: cwd.to_owned(),
            seq: 0,
        };
        let hello = encode(&ClientMessage::Hello(ClientHello::new("hookd-bench", None)));
        let answer = this.round_trip(&hello)?;
        anyhow::ensure!(answer.contains("\"hello\""), "no hello: {answer}");
        this.open_response()?;
        // The first chunk shows whether the row's hook does what the row says.
        let first = this.chunk()?;
        if row.replaces() {
            anyhow::ensure!(
                first.contains("bar counts"),
                "{}: the chunk was not replaced: {first}",
                row.label()
            );
        }
        Ok(this)
    }

    /// One request, one answer, as text.
    fn round_trip(&mut self, body: &[u8]) -> anyhow::Result<String> {
        self.stream.write_all(&frame(body)?)?;
        let answer = self.reader.read_frame(&mut self.stream)?;
        Ok(String::from_utf8_lossy(answer).into_owned())
    }

    /// The size of a chunk request's body.
    fn chunk_body_len(&self) -> usize {
        chunk_body(self.seq).len()
    }

    /// Opens the stream of the next model response.
    fn open_response(&mut self) -> anyhow::Result<()> {
        let open = json!({
            "type": "stream_open",
            "id": STREAM_ID,
            "event": "AfterModel",
            "cwd": self.cwd,
            "session_id": "bench-session",
            "input": {"llm_request": llm_request()}
        });
        let answer = self.round_trip(&serde_json::to_vec(&open)?)?;
        anyhow::ensure!(
            answer.contains("\"stream_opened\""),
            "the stream did not open: {answer}"
        );
        self.seq = 0;
        Ok(())
    }

    /// Ends the current response and opens the next one when it has all its chunks; called
    /// outside the timed section.
    fn roll(&mut self) -> anyhow::Result<()> {
        if self.seq >= RESPONSE_CHUNKS {
            self.close_response()?;
            self.open_response()?;
        }
        Ok(())
    }

    /// Sends the next chunk and returns its result.
    fn chunk(&mut self) -> anyhow::Result<String> {
        let body = chunk_body(self.seq);
        self.seq += 1;
        let answer = self.round_trip(&body)?;
        anyhow::ensure!(
            answer.contains("\"chunk_result\""),
            "{}: unexpected answer to a chunk: {answer}",
            self.row.label()
        );
        Ok(answer)
    }

    /// Closes the current response's stream.
    fn close_response(&mut self) -> anyhow::Result<()> {
        let close = json!({"type": "stream_close", "id": STREAM_ID});
        let answer = self.round_trip(&serde_json::to_vec(&close)?)?;
        anyhow::ensure!(answer.contains("\"stream_closed\""), "not closed: {answer}");
        Ok(())
    }

    /// Closes the stream and the connection.
    fn close(mut self) -> anyhow::Result<()> {
        self.close_response()
    }
}

/// Sends `chunks` no-hook chunks back to back on one connection from one thread while
/// another reads the results, and returns chunks per second.
fn pipelined(socket: &Path, cwd: &str, chunks: usize) -> anyhow::Result<f64> {
    let mut stream = ChunkStream::open(socket, cwd, Row::NoHook)?;
    // Frames are written in batches of this many, as a client's buffered writer would.
    const WRITE_BATCH: usize = 256;
    let mut writer = stream.stream.try_clone()?;
    let first_seq = stream.seq;
    let started = Instant::now();
    let sender = std::thread::spawn(move || -> anyhow::Result<()> {
        let mut buffer = Vec::with_capacity(WRITE_BATCH * 256);
        let mut seq = first_seq;
        let mut left = chunks;
        while left > 0 {
            buffer.clear();
            for _ in 0..WRITE_BATCH.min(left) {
                buffer.extend_from_slice(&frame(&chunk_body(seq))?);
                seq += 1;
                left -= 1;
            }
            writer.write_all(&buffer)?;
        }
        Ok(())
    });
    for _ in 0..chunks {
        let answer = stream.reader.read_frame(&mut stream.stream)?;
        anyhow::ensure!(
            answer.windows(14).any(|w| w == b"\"chunk_result\""),
            "unexpected pipelined answer: {}",
            String::from_utf8_lossy(answer)
        );
    }
    let elapsed = started.elapsed();
    sender
        .join()
        .map_err(|_| anyhow::anyhow!("the sending thread panicked"))??;
    stream.seq += chunks as u64;
    stream.close()?;
    Ok(chunks as f64 / elapsed.as_secs_f64())
}

/// Prints what the run is doing to stderr.
fn progress(step: &str) {
    eprintln!("hookd-bench stream: {step}...");
}

/// The report as a table, with the issue's targets.
pub fn table(report: &Report) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "AfterModel per-chunk latency (chunk request {} B, no-hook answer {} B, builtin \
         answer {} B; {RESPONSE_CHUNKS} chunks per response)\n",
        report.request_bytes, report.response_bytes, report.builtin_response_bytes
    );
    let _ = writeln!(
        out,
        "{:<36} {:>8} {:>10} {:>10} {:>12} {:>14}",
        "row", "samples", "p50 µs", "p99 µs", "chunks/s", "daemon CPU µs"
    );
    let line = |out: &mut String, label: &str, summary: &Summary, cpu: Option<Duration>| {
        let per_second = if summary.p50.is_zero() {
            0.0
        } else {
            1.0 / summary.p50.as_secs_f64()
        };
        let cpu = cpu.map_or_else(String::new, |cpu| format!("{:.1}", micros(cpu)));
        let _ = writeln!(
            out,
            "{:<36} {:>8} {:>10.1} {:>10.1} {:>12.0} {:>14}",
            label,
            summary.count,
            micros(summary.p50),
            micros(summary.p99),
            per_second,
            cpu
        );
    };
    line(
        &mut out,
        "raw ping-pong, no-hook sizes (floor)",
        &report.raw,
        None,
    );
    line(
        &mut out,
        "raw ping-pong, builtin sizes (floor)",
        &report.raw_builtin,
        None,
    );
    for (row, summary) in &report.rows {
        let cpu = report
            .daemon_cpu
            .iter()
            .find(|(r, _)| r == row)
            .map(|(_, cpu)| *cpu);
        line(&mut out, row.label(), summary, cpu);
    }
    if report.pipelined_per_second.is_finite() {
        let _ = writeln!(
            out,
            "{:<36} {:>8} {:>10} {:>10} {:>12.0}",
            "(d) no hook, pipelined", "", "", "", report.pipelined_per_second
        );
    }
    let _ = writeln!(out, "\nratios (targets from the issue):");
    let get = |row: Row| {
        report
            .rows
            .iter()
            .find(|(r, _)| *r == row)
            .map(|(_, summary)| *summary)
    };
    let ratio = |a: Duration, b: Duration| {
        if b.is_zero() {
            f64::NAN
        } else {
            a.as_secs_f64() / b.as_secs_f64()
        }
    };
    let verdict = |ok: bool| if ok { "PASS" } else { "MISS" };
    let check = |out: &mut String, name: &str, value: f64, target: f64, at_most: bool| {
        let ok = if at_most {
            value <= target
        } else {
            value >= target
        };
        let bound = if at_most { "<=" } else { ">=" };
        let _ = writeln!(
            out,
            "  {name:<48} {value:>8.2}  target {bound} {target:<6} {}",
            verdict(ok)
        );
    };
    for (row, floor, name_p50, name_p99) in [
        (
            Row::Builtin,
            &report.raw_builtin,
            "(c) builtin / raw ping-pong, p50",
            "(c) builtin / raw ping-pong, p99",
        ),
        (
            Row::NoHook,
            &report.raw,
            "(d) no hook / raw ping-pong, p50",
            "(d) no hook / raw ping-pong, p99",
        ),
    ] {
        if let Some(summary) = get(row) {
            check(&mut out, name_p50, ratio(summary.p50, floor.p50), 1.3, true);
            check(&mut out, name_p99, ratio(summary.p99, floor.p99), 1.3, true);
        }
    }
    if let Some(worker) = get(Row::Worker) {
        check(
            &mut out,
            "(b) worker / raw ping-pong, p50",
            ratio(worker.p50, report.raw.p50),
            2.5,
            true,
        );
        check(
            &mut out,
            "(b) worker / raw ping-pong, p99",
            ratio(worker.p99, report.raw.p99),
            2.5,
            true,
        );
        if let Some(trimmed) = get(Row::WorkerTrimmed) {
            check(
                &mut out,
                "(b') worker with drop_fields / raw ping-pong, p50",
                ratio(trimmed.p50, report.raw.p50),
                2.5,
                true,
            );
            check(
                &mut out,
                "(b') worker with drop_fields / raw ping-pong, p99",
                ratio(trimmed.p99, report.raw.p99),
                2.5,
                true,
            );
        }
        if let Some(bash) = get(Row::OneShotBash) {
            check(
                &mut out,
                "(a) one-shot bash / (b) worker, p50 (speed-up)",
                ratio(bash.p50, worker.p50),
                20.0,
                false,
            );
        }
    }
    if let Some(cpu_ratio) = report.filter_cpu_ratio() {
        check(
            &mut out,
            "(c) builtin / (d) no hook, daemon CPU per chunk",
            cpu_ratio,
            FILTER_CPU_RATIO_TARGET,
            true,
        );
    }
    if report.pipelined_per_second.is_finite() {
        check(
            &mut out,
            "(d) pipelined chunks/s on one connection",
            report.pipelined_per_second,
            100_000.0,
            false,
        );
    }
    if let (Some(oneshot), Some(prewarmed)) = (get(Row::NodeOneShot), get(Row::NodePrewarmed)) {
        check(
            &mut out,
            "node one-shot / node pre-warmed, p50 (speed-up)",
            ratio(oneshot.p50, prewarmed.p50),
            5.0,
            false,
        );
    }
    if let (Some(oneshot), Some(worker)) = (get(Row::NodeOneShot), get(Row::NodeWorker)) {
        let _ = writeln!(
            out,
            "  {:<48} {:>8.2}  (context, no target)",
            "node one-shot / node worker, p50 (speed-up)",
            ratio(oneshot.p50, worker.p50)
        );
    }
    let _ = writeln!(out, "\nrun took {:.0} s", report.elapsed.as_secs_f64());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_bodies_are_json_with_the_seq() {
        let body = chunk_body(42);
        let value: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(value["seq"], 42);
        assert_eq!(value["type"], "chunk");
        assert_eq!(
            value["llm_response"]["candidates"][0]["content"]["parts"][0],
            CHUNK_TEXT
        );
    }

    #[test]
    fn every_row_has_its_own_project() {
        let mut projects: Vec<&str> = ROWS.iter().map(|row| row.project()).collect();
        projects.sort_unstable();
        projects.dedup();
        assert_eq!(projects.len(), ROWS.len());
        let scripts = Path::new("/srv/scripts");
        assert!(Row::NoHook.hook(scripts).is_none());
        for row in ROWS.iter().filter(|row| **row != Row::NoHook) {
            assert!(row.hook(scripts).is_some(), "{row:?}");
        }
    }

    #[test]
    fn paths_in_commands_come_from_the_scripts_dir() {
        let scripts = std::path::PathBuf::from("/srv/scripts");
        let hook = Row::Worker.hook(&scripts).unwrap();
        assert_eq!(hook["command"], "python3 /srv/scripts/filter.py");
        assert_eq!(hook["mode"], "persistent");
    }
}
