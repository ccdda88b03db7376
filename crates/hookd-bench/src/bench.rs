//! The benchmark run: starts the helpers, measures every row in interleaved rounds, and
//! collects a [`Report`].
//!
//! Rows that are compared with each other are measured in the same rounds, in an order that
//! rotates from round to round (A B C, B C A, C A B, ...), so that a burst of noise on the
//! machine hits every variant alike instead of skewing one of them.

use std::path::Path;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use anyhow::Context;
use hookd_client::{Client, ConnectOptions};
use hookd_protocol::{EventResult, ServerMessage, parse_server_message};

use crate::breakdown::Breakdown;
use crate::child::{Helper, Memory};
use crate::daemon::RuntimeFlavor;
use crate::echo::PingPong;
use crate::fixture::{
    Fixture, PARALLEL_HOOKS, TOOL_FIVE_HOOKS, TOOL_NO_HOOK, TOOL_ONE_HOOK, TOOL_SLEEP_FIVE,
    TOOL_SLEEP_ONE,
};
use crate::frame::frame;
use crate::lean::LeanConnection;
use crate::spawn::DirectSpawn;
use crate::stats::{Samples, Summary};

/// Measured iterations of the hook rows by default: about a minute and a half in all on a
/// busy two-core machine.
pub const DEFAULT_ITERATIONS: usize = 2000;

/// Measured iterations of the hook rows with `--quick`.
const QUICK_ITERATIONS: usize = 40;

/// Socket round trips are about a hundred times cheaper than spawns, so the socket rows
/// take this many samples per hook-row iteration.
const SOCKET_SAMPLES_PER_ITERATION: usize = 100;

/// Socket samples are taken in batches of this many per variant and round.
const SOCKET_BATCH: usize = 500;

/// Connections of the concurrent throughput rows.
pub const CONCURRENT_CONNECTIONS: usize = 8;

/// Rounds of the concurrent throughput rows.
const CONCURRENT_ROUNDS: usize = 6;

/// What to measure, and how much.
#[derive(Debug, Clone)]
pub struct Options {
    /// Measured iterations of each hook row; the socket rows take a hundred times more.
    pub iterations: usize,
    /// Print the report as JSON on stdout (the table then goes to stderr).
    pub json: bool,
    /// The daemon's tokio runtime.
    pub daemon_runtime: RuntimeFlavor,
}

impl Options {
    /// Options from the command line: `--iterations` wins, then `--quick`, then the default.
    pub fn new(iterations: Option<usize>, quick: bool, json: bool, runtime: RuntimeFlavor) -> Self {
        let default = if quick {
            QUICK_ITERATIONS
        } else {
            DEFAULT_ITERATIONS
        };
        Options {
            iterations: iterations.unwrap_or(default).max(1),
            json,
            daemon_runtime: runtime,
        }
    }

    fn warmup_iterations(&self) -> usize {
        (self.iterations / 20).max(5)
    }

    fn socket_samples(&self) -> usize {
        self.iterations * SOCKET_SAMPLES_PER_ITERATION
    }

    fn concurrent_rounds(&self) -> usize {
        if self.iterations < 200 {
            2
        } else {
            CONCURRENT_ROUNDS
        }
    }

    /// Rounds of the in-process parse and encode timings.
    fn breakdown_rounds(&self) -> usize {
        (self.iterations / 20).clamp(5, 100)
    }

    /// Events each connection sends per concurrent round.
    fn concurrent_events_per_connection(&self) -> usize {
        (self.iterations * 2).max(50)
    }
}

/// Everything one run measured.
#[derive(Debug, Clone)]
pub struct Report {
    /// The machine it ran on.
    pub machine: Machine,
    /// The options it ran with.
    pub options: Options,
    /// Body sizes of the no-hook event request and its answer, which the ping-pong copies.
    pub request_bytes: usize,
    /// See `request_bytes`.
    pub response_bytes: usize,
    /// Raw Unix-socket ping-pong between two processes: the floor.
    pub raw: Summary,
    /// The same ping-pong answered by a tokio server built like the daemon, without parsing.
    pub tokio_echo: Summary,
    /// No-hook event through the daemon, lean blocking client.
    pub no_hook_lean: Summary,
    /// No-hook event through the daemon, the async `hookd-client`.
    pub no_hook_async: Summary,
    /// CPU the echo server spent per round trip, and the daemon per no-hook event, over the
    /// measured socket rounds.
    pub socket_cpu: SocketCpu,
    /// The daemon's parsing and encoding of a no-hook event, timed in this process.
    pub breakdown: Breakdown,
    /// Raw ping-pong on several connections at once.
    pub raw_concurrent: Throughput,
    /// No-hook events on several connections at once, lean client.
    pub no_hook_concurrent: Throughput,
    /// The hook rows.
    pub hooks: HookRows,
    /// The daemon's memory right after it started.
    pub memory_idle: Memory,
    /// The daemon's memory after the runs, connections closed.
    pub memory_after: Memory,
    /// How long the whole run took.
    pub elapsed: Duration,
}

/// CPU time per request of the servers of the socket rows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SocketCpu {
    /// The echo server's CPU time per round trip.
    pub echo_per_round_trip: Duration,
    /// The tokio echo server's CPU time per round trip.
    pub tokio_echo_per_round_trip: Duration,
    /// The daemon's CPU time per no-hook event.
    pub daemon_per_event: Duration,
}

/// Throughput of many connections working at once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Throughput {
    /// Connections.
    pub connections: usize,
    /// Operations completed in all rounds.
    pub operations: usize,
    /// Wall time of all rounds.
    pub wall: Duration,
}

impl Throughput {
    /// Operations per second.
    pub fn per_second(&self) -> f64 {
        let secs = self.wall.as_secs_f64();
        if secs > 0.0 {
            self.operations as f64 / secs
        } else {
            0.0
        }
    }
}

/// What the benchmark ran on.
#[derive(Debug, Clone, PartialEq)]
pub struct Machine {
    /// CPUs available to the process.
    pub cpus: usize,
    /// The CPU model, from `/proc/cpuinfo`.
    pub cpu_model: String,
    /// The kernel release.
    pub kernel: String,
}

impl Machine {
    fn detect() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find_map(|line| line.strip_prefix("model name")?.split_once(':'))
            .map_or_else(
                || "unknown".to_owned(),
                |(_, model)| model.trim().to_owned(),
            );
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").map_or_else(
            |_| "unknown".to_owned(),
            |release| release.trim().to_owned(),
        );
        Machine {
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            cpu_model,
            kernel,
        }
    }
}

/// One round trip of some kind, repeated by the measurement loops.
trait RoundTrip {
    fn round_trip(&mut self) -> anyhow::Result<()>;
}

impl RoundTrip for PingPong {
    fn round_trip(&mut self) -> anyhow::Result<()> {
        PingPong::round_trip(self)
    }
}

/// A no-hook event on a lean connection, checked byte for byte against the first answer.
struct NoHookEvent<'a> {
    connection: LeanConnection,
    request: &'a [u8],
    expected: &'a [u8],
}

impl RoundTrip for NoHookEvent<'_> {
    fn round_trip(&mut self) -> anyhow::Result<()> {
        let answer = self.connection.round_trip(self.request)?;
        // Same id, same registry generation, no hooks: the answer never changes, so a byte
        // comparison checks it without parsing in the timed loop.
        anyhow::ensure!(
            answer == self.expected,
            "unexpected answer to a no-hook event: {}",
            String::from_utf8_lossy(answer)
        );
        Ok(())
    }
}

/// Runs the benchmark. Helpers and the temp dir are cleaned up on every path out.
pub fn run(options: Options) -> anyhow::Result<Report> {
    let started = Instant::now();
    let fixture = Fixture::create()?;
    let env = fixture.helper_env();

    progress("starting the daemon");
    let daemon_socket = fixture.path("hookd.sock");
    let daemon = Helper::start(
        "daemon",
        &fixture.daemon_args(&daemon_socket, options.daemon_runtime.as_arg()),
        &env,
        &fixture.path("daemon.log"),
    )?;
    let memory_idle = daemon.memory()?;

    let requests = Requests::new(&fixture)?;
    let mut lean = LeanConnection::connect(&daemon_socket)?;
    let probe = probe(&mut lean, &requests).with_context(|| daemon.log_tail())?;

    progress("starting the echo server");
    let echo_socket = fixture.path("echo.sock");
    let echo = Helper::start(
        "echo server",
        &[
            "echo-server".into(),
            echo_socket.clone().into(),
            "--reply-bytes".into(),
            probe.response.len().to_string().into(),
        ],
        &env,
        &fixture.path("echo.log"),
    )?;

    let tokio_echo_socket = fixture.path("tokio-echo.sock");
    let tokio_echo = Helper::start(
        "tokio echo server",
        &[
            "echo-server".into(),
            tokio_echo_socket.clone().into(),
            "--reply-bytes".into(),
            probe.response.len().to_string().into(),
            "--tokio".into(),
            options.daemon_runtime.as_arg().into(),
        ],
        &env,
        &fixture.path("tokio-echo.log"),
    )?;

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let client = runtime
        .block_on(Client::connect(&daemon_socket, ConnectOptions::default()))
        .context("the async client cannot connect")?;

    let mut socket_rows = SocketRows {
        raw: PingPong::connect(&echo_socket, &requests.no_hook_body, probe.response.len())?,
        tokio_echo: PingPong::connect(
            &tokio_echo_socket,
            &requests.no_hook_body,
            probe.response.len(),
        )?,
        lean: NoHookEvent {
            connection: lean,
            request: &requests.no_hook,
            expected: &probe.response,
        },
        client: &client,
        runtime: &runtime,
        client_request: fixture.client_event(TOOL_NO_HOOK),
    };
    progress("measuring socket round trips");
    let ([raw, tokio_echo_row, no_hook_lean, no_hook_async], socket_cpu) =
        socket_rows.measure(&options, [&echo, &tokio_echo, &daemon])?;
    let lean = socket_rows.lean.connection;
    drop(client);

    progress("timing parsing and encoding in process");
    let breakdown = crate::breakdown::measure(
        &requests.no_hook_body,
        &probe.response,
        options.breakdown_rounds(),
    )?;

    progress("measuring concurrent throughput");
    let (raw_concurrent, no_hook_concurrent) = measure_concurrent(
        &options,
        &echo_socket,
        &daemon_socket,
        &requests,
        &probe.response,
    )?;

    progress("measuring hooks");
    let direct = DirectSpawn::new(
        &fixture.project,
        direct_spawn_env(&fixture),
        fixture.hook_stdin(TOOL_ONE_HOOK),
    )?;
    let hooks = measure_hooks(&options, lean, &requests, &direct)?;

    // Idle again: every connection of this process is closed. A ping on a fresh connection
    // makes sure the daemon has run since the last of them closed.
    let mut last = LeanConnection::connect(&daemon_socket)?;
    last.round_trip(&requests.ping)?;
    drop(last);
    let memory_after = daemon.memory()?;

    echo.stop()?;
    tokio_echo.stop()?;
    daemon.stop()?;
    drop(fixture);
    Ok(Report {
        machine: Machine::detect(),
        options,
        request_bytes: requests.no_hook_body.len(),
        response_bytes: probe.response.len(),
        raw,
        tokio_echo: tokio_echo_row,
        no_hook_lean,
        no_hook_async,
        socket_cpu,
        breakdown,
        raw_concurrent,
        no_hook_concurrent,
        hooks,
        memory_idle,
        memory_after,
        elapsed: started.elapsed(),
    })
}

/// The pre-framed requests of the lean client.
struct Requests {
    /// The no-hook event's body, unframed, for the ping-pong.
    no_hook_body: Vec<u8>,
    no_hook: Vec<u8>,
    one_hook: Vec<u8>,
    five_hooks: Vec<u8>,
    sleep_one: Vec<u8>,
    sleep_five: Vec<u8>,
    ping: Vec<u8>,
}

impl Requests {
    fn new(fixture: &Fixture) -> anyhow::Result<Requests> {
        let no_hook_body = fixture.event_body(TOOL_NO_HOOK);
        let ping = hookd_protocol::encode(&hookd_protocol::ClientMessage::Ping(
            hookd_protocol::PingRequest {
                id: hookd_protocol::RequestId::Number(2),
            },
        ));
        Ok(Requests {
            no_hook: frame(&no_hook_body)?,
            no_hook_body,
            one_hook: frame(&fixture.event_body(TOOL_ONE_HOOK))?,
            five_hooks: frame(&fixture.event_body(TOOL_FIVE_HOOKS))?,
            sleep_one: frame(&fixture.event_body(TOOL_SLEEP_ONE))?,
            sleep_five: frame(&fixture.event_body(TOOL_SLEEP_FIVE))?,
            ping: frame(&ping)?,
        })
    }
}

/// What the first round of requests showed.
struct Probe {
    /// The answer to the no-hook event, which every later answer must equal.
    response: Vec<u8>,
}

/// Fires each kind of event once and checks that the daemon runs what the row expects.
fn probe(lean: &mut LeanConnection, requests: &Requests) -> anyhow::Result<Probe> {
    let response = lean.round_trip(&requests.no_hook)?.to_vec();
    check_event_answer(&response, 0).context("the no-hook event")?;
    let answer = lean.round_trip(&requests.one_hook)?.to_vec();
    check_event_answer(&answer, 1).context("the one-hook event")?;
    let answer = lean.round_trip(&requests.five_hooks)?.to_vec();
    check_event_answer(&answer, PARALLEL_HOOKS).context("the five-hook event")?;
    Ok(Probe { response })
}

/// Checks that `body` is a successful `result` with `hooks` hook records, and returns it.
fn check_event_answer(body: &[u8], hooks: usize) -> anyhow::Result<EventResult> {
    let message = parse_server_message(body).with_context(|| {
        format!(
            "the daemon's answer is not readable: {}",
            String::from_utf8_lossy(body)
        )
    })?;
    let ServerMessage::Result(result) = message else {
        anyhow::bail!("the daemon answered {}", String::from_utf8_lossy(body));
    };
    anyhow::ensure!(
        result.result.success && result.result.hooks.len() == hooks,
        "expected {hooks} successful hooks, got: {}",
        String::from_utf8_lossy(body)
    );
    Ok(result.result)
}

/// The rows compared at socket scale.
struct SocketRows<'a> {
    raw: PingPong,
    tokio_echo: PingPong,
    lean: NoHookEvent<'a>,
    client: &'a Client,
    runtime: &'a tokio::runtime::Runtime,
    client_request: hookd_client::EventRequest,
}

impl SocketRows<'_> {
    /// Measures the raw ping-pong, the tokio ping-pong, the lean no-hook event and the
    /// async-client no-hook event in rotating batches, and what each server's CPU time was
    /// meanwhile. `servers` are the echo server, the tokio echo server and the daemon.
    fn measure(
        &mut self,
        options: &Options,
        servers: [&Helper; 3],
    ) -> anyhow::Result<([Summary; 4], SocketCpu)> {
        let warmup = options.warmup_iterations() * SOCKET_SAMPLES_PER_ITERATION;
        let mut discard: [Samples; 4] = Default::default();
        for (variant, samples) in discard.iter_mut().enumerate() {
            self.batch(variant, warmup, samples)?;
        }
        let mut measured: [Samples; 4] = Default::default();
        let rounds = options.socket_samples().div_ceil(SOCKET_BATCH);
        let mut cpu_before = [Duration::ZERO; 3];
        for (before, server) in cpu_before.iter_mut().zip(servers) {
            *before = server.cpu_time()?;
        }
        for round in 0..rounds {
            for step in 0..measured.len() {
                let variant = (round + step) % measured.len();
                self.batch(variant, SOCKET_BATCH, &mut measured[variant])?;
            }
        }
        let round_trips = u32::try_from(rounds * SOCKET_BATCH).unwrap_or(u32::MAX);
        let mut used = [Duration::ZERO; 3];
        for ((used, before), server) in used.iter_mut().zip(cpu_before).zip(servers) {
            *used = server.cpu_time()?.saturating_sub(before);
        }
        // Both daemon rows send the same event, so the daemon's share is per event of either.
        let socket_cpu = SocketCpu {
            echo_per_round_trip: used[0] / round_trips,
            tokio_echo_per_round_trip: used[1] / round_trips,
            daemon_per_event: used[2] / round_trips.saturating_mul(2),
        };
        Ok((measured.map(|samples| samples.summary()), socket_cpu))
    }

    /// Runs `count` round trips of one variant, recording each.
    fn batch(&mut self, variant: usize, count: usize, samples: &mut Samples) -> anyhow::Result<()> {
        let started = Instant::now();
        match variant {
            0 => timed_loop(&mut self.raw, count, samples)?,
            1 => timed_loop(&mut self.tokio_echo, count, samples)?,
            2 => timed_loop(&mut self.lean, count, samples)?,
            _ => {
                let client = self.client;
                let request = &self.client_request;
                self.runtime.block_on(async {
                    for _ in 0..count {
                        let request = request.clone();
                        let sent = Instant::now();
                        let response = client.event(request).await?;
                        samples.push(sent.elapsed());
                        anyhow::ensure!(
                            response.result.success && response.result.hooks.is_empty(),
                            "unexpected answer to a no-hook event: {response:?}"
                        );
                    }
                    anyhow::Ok(())
                })?;
            }
        }
        samples.add_wall(started.elapsed());
        Ok(())
    }
}

/// Runs `count` round trips, recording the latency of each.
fn timed_loop(
    target: &mut impl RoundTrip,
    count: usize,
    samples: &mut Samples,
) -> anyhow::Result<()> {
    for _ in 0..count {
        let sent = Instant::now();
        target.round_trip()?;
        samples.push(sent.elapsed());
    }
    Ok(())
}

/// Measures throughput on [`CONCURRENT_CONNECTIONS`] connections at once, alternating rounds
/// of raw ping-pong and of no-hook events.
fn measure_concurrent(
    options: &Options,
    echo_socket: &Path,
    daemon_socket: &Path,
    requests: &Requests,
    expected: &[u8],
) -> anyhow::Result<(Throughput, Throughput)> {
    let mut raw = Vec::with_capacity(CONCURRENT_CONNECTIONS);
    let mut lean = Vec::with_capacity(CONCURRENT_CONNECTIONS);
    for _ in 0..CONCURRENT_CONNECTIONS {
        raw.push(PingPong::connect(
            echo_socket,
            &requests.no_hook_body,
            expected.len(),
        )?);
        lean.push(NoHookEvent {
            connection: LeanConnection::connect(daemon_socket)?,
            request: &requests.no_hook,
            expected,
        });
    }
    let per_connection = options.concurrent_events_per_connection();
    // One short round of each first, not counted.
    concurrent_round(&mut raw, per_connection / 4)?;
    concurrent_round(&mut lean, per_connection / 4)?;
    let mut raw_wall = Duration::ZERO;
    let mut lean_wall = Duration::ZERO;
    for round in 0..options.concurrent_rounds() {
        if round % 2 == 0 {
            raw_wall += concurrent_round(&mut raw, per_connection)?;
            lean_wall += concurrent_round(&mut lean, per_connection)?;
        } else {
            lean_wall += concurrent_round(&mut lean, per_connection)?;
            raw_wall += concurrent_round(&mut raw, per_connection)?;
        }
    }
    let operations = options.concurrent_rounds() * per_connection * CONCURRENT_CONNECTIONS;
    Ok((
        Throughput {
            connections: CONCURRENT_CONNECTIONS,
            operations,
            wall: raw_wall,
        },
        Throughput {
            connections: CONCURRENT_CONNECTIONS,
            operations,
            wall: lean_wall,
        },
    ))
}

/// Runs `count` round trips on every connection at once; returns the wall time from the
/// common start to the last connection's finish.
fn concurrent_round<T: RoundTrip + Send>(
    connections: &mut [T],
    count: usize,
) -> anyhow::Result<Duration> {
    let start = Barrier::new(connections.len() + 1);
    std::thread::scope(|scope| {
        let workers: Vec<_> = connections
            .iter_mut()
            .map(|connection| {
                let start = &start;
                scope.spawn(move || {
                    start.wait();
                    for _ in 0..count {
                        connection.round_trip()?;
                    }
                    anyhow::Ok(())
                })
            })
            .collect();
        start.wait();
        let started = Instant::now();
        for worker in workers {
            worker
                .join()
                .map_err(|_| anyhow::anyhow!("a client thread panicked"))??;
        }
        Ok(started.elapsed())
    })
}

/// The hook rows, and the one-hook row split at the runner's own timing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HookRows {
    /// One `true` hook through the daemon.
    pub one_hook: Summary,
    /// `bash -c true` spawned directly.
    pub direct_spawn: Summary,
    /// Five parallel `true` hooks through the daemon.
    pub five_hooks: Summary,
    /// Five `bash -c true` spawned directly at once.
    pub five_direct: Summary,
    /// The one hook's `duration_ms` as the daemon's runner reports it: from just before the
    /// spawn until the process is reaped and its output read.
    pub one_hook_runner: Summary,
    /// The one-hook round trip minus the runner's duration: the socket both ways, parsing,
    /// planning, building the payload and environment, and the result.
    pub one_hook_outside_runner: Summary,
    /// One waiting hook (`sleep 0.02`) through the daemon.
    pub sleep_one: Summary,
    /// Five waiting hooks in parallel through the daemon.
    pub sleep_five: Summary,
}

/// Measures one hook through the daemon, the same hook spawned directly, five hooks through
/// the daemon and five spawned directly, one of each per round in rotating order.
fn measure_hooks(
    options: &Options,
    mut lean: LeanConnection,
    requests: &Requests,
    direct: &DirectSpawn,
) -> anyhow::Result<HookRows> {
    let mut discard: [Samples; 4] = Default::default();
    let mut measured: [Samples; 4] = Default::default();
    let mut runner = Samples::default();
    let mut outside_runner = Samples::default();
    let warmup = options.warmup_iterations();
    for round in 0..warmup + options.iterations {
        let samples = if round < warmup {
            &mut discard
        } else {
            &mut measured
        };
        for step in 0..samples.len() {
            let variant = (round + step) % samples.len();
            let started = Instant::now();
            match variant {
                0 => {
                    let answer = lean.round_trip(&requests.one_hook)?;
                    let round_trip = started.elapsed();
                    samples[variant].push(round_trip);
                    let result = check_event_answer(answer, 1)?;
                    if round >= warmup {
                        let hook_ms = result.hooks.first().map_or(0.0, |hook| hook.duration_ms);
                        let hook = Duration::try_from_secs_f64(hook_ms / 1e3).unwrap_or_default();
                        runner.push(hook);
                        outside_runner.push(round_trip.saturating_sub(hook));
                    }
                }
                1 => {
                    direct.run_once()?;
                    samples[variant].push(started.elapsed());
                }
                2 => {
                    let answer = lean.round_trip(&requests.five_hooks)?;
                    samples[variant].push(started.elapsed());
                    check_event_answer(answer, PARALLEL_HOOKS)?;
                }
                _ => {
                    direct.run_parallel(PARALLEL_HOOKS)?;
                    samples[variant].push(started.elapsed());
                }
            }
        }
    }
    let [one_hook, direct_spawn, five_hooks, five_direct] =
        measured.map(|samples| samples.summary());
    let [sleep_one, sleep_five] = measure_sleeping_hooks(options, &mut lean, requests)?;
    Ok(HookRows {
        sleep_one,
        sleep_five,
        one_hook,
        direct_spawn,
        five_hooks,
        five_direct,
        one_hook_runner: runner.summary(),
        one_hook_outside_runner: outside_runner.summary(),
    })
}

/// Measures one waiting hook against five in parallel, alternating, for a tenth of the
/// iterations (each round trip waits at least 20 ms).
fn measure_sleeping_hooks(
    options: &Options,
    lean: &mut LeanConnection,
    requests: &Requests,
) -> anyhow::Result<[Summary; 2]> {
    let mut measured: [Samples; 2] = Default::default();
    let rounds = (options.iterations / 10).max(5);
    for round in 0..rounds + 2 {
        for step in 0..2 {
            let variant = (round + step) % 2;
            let (request, hooks) = if variant == 0 {
                (&requests.sleep_one, 1)
            } else {
                (&requests.sleep_five, PARALLEL_HOOKS)
            };
            let started = Instant::now();
            let answer = lean.round_trip(request)?;
            let elapsed = started.elapsed();
            check_event_answer(answer, hooks)?;
            // The first two rounds warm up.
            if round >= 2 {
                measured[variant].push(elapsed);
            }
        }
    }
    Ok(measured.map(|samples| samples.summary()))
}

/// The environment of the directly spawned hook: what the daemon's hooks get (its own
/// environment plus the project variables it adds).
fn direct_spawn_env(fixture: &Fixture) -> Vec<(String, String)> {
    let mut env = fixture.helper_env();
    let project = fixture.cwd();
    for (name, value) in [
        (
            "GEMINI_CLI_SYSTEM_SETTINGS_PATH",
            fixture.system_settings_path(),
        ),
        (
            "GEMINI_CLI_SYSTEM_DEFAULTS_PATH",
            fixture.system_defaults_path(),
        ),
        ("GEMINI_PROJECT_DIR", project.clone()),
        ("GEMINI_PLANS_DIR", format!("{project}/.gemini/plans")),
        ("GEMINI_CWD", project.clone()),
        ("GEMINI_SESSION_ID", String::new()),
        ("CLAUDE_PROJECT_DIR", project.clone()),
    ] {
        env.push((name.to_owned(), value));
    }
    env
}

/// Says on stderr what the benchmark is doing, so a long run does not look stuck.
fn progress(step: &str) {
    eprintln!("hookd-bench: {step}...");
}
