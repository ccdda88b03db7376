//! `hookd-bench`: measures hookd against its floors.
//!
//! Without a subcommand it runs the benchmark ([`bench::run`]) and prints the table
//! ([`report::table`]). `hookd-bench reload` measures how long a settings save takes to reach
//! the next event ([`reload::run`]); `hookd-bench load` holds many connections firing events
//! for a minute and reports throughput, errors, memory and leftover processes
//! ([`load::run`]). The hidden subcommands are the helper processes it
//! starts: the daemon under test and the echo server of the raw ping-pong.

mod bench;
mod breakdown;
mod child;
mod daemon;
mod echo;
mod fallback;
mod fixture;
mod frame;
mod lean;
mod load;
mod placement;
mod policy;
mod relay;
mod reload;
mod report;
mod spawn;
mod state;
mod stats;
mod stream;
mod telemetry;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// Measures hookd: a no-hook event against a raw socket ping-pong, a `true` hook against a
/// direct `bash -c true`, five parallel hooks against one, and the daemon's memory.
#[derive(Debug, Parser)]
#[command(name = "hookd-bench", version)]
struct Cli {
    #[command(subcommand)]
    helper: Option<Helper>,
    /// Measured iterations of each hook row (the socket rows take 100 times more); warm-up
    /// comes on top [default: 2000, about 1–2 minutes on a 2-core machine].
    #[arg(long)]
    iterations: Option<usize>,
    /// A run of a few seconds, to check that everything works.
    #[arg(long)]
    quick: bool,
    /// Print the results as JSON on stdout; the table then goes to stderr.
    #[arg(long)]
    json: bool,
    /// The daemon's tokio runtime, to compare flavors; `hookd` uses current-thread unless
    /// started with `--threads N`.
    #[arg(long, value_enum, default_value = "current-thread")]
    daemon_runtime: daemon::RuntimeFlavor,
    /// Pin the benchmark to CPU 0 and its helper processes (echo servers, the daemon and the
    /// hooks it runs) to CPU 1, so that every round trip crosses cores. That is the floor the
    /// socket rows are compared with when the two sides of a real client/daemon pair run on
    /// different cores; unpinned, the scheduler often keeps both on one core.
    #[arg(long)]
    cross_core: bool,
}

/// Helper processes started by the benchmark itself.
#[derive(Debug, Subcommand)]
enum Helper {
    /// Measures the time from a settings save (renamed over, or rewritten in place) to the
    /// first event that runs the new hooks, debounce included.
    Reload {
        /// Saves measured for each way of saving.
        #[arg(long, default_value_t = reload::DEFAULT_EDITS)]
        edits: usize,
    },
    /// Holds many connections, each firing events in a loop (most match no hook, some run
    /// `true`, a few print 4 KB), and reports events/s per 5 s window, errors, the daemon's
    /// memory and the processes left after; fails if any request failed or anything was left.
    Load {
        /// How long to fire events, in seconds.
        #[arg(long, default_value_t = load::DEFAULT_SECONDS)]
        seconds: u64,
        /// How many connections fire events at once.
        #[arg(long, default_value_t = load::DEFAULT_CONNECTIONS)]
        connections: usize,
    },
    /// Streams AfterModel chunks through one-shot, persistent, pre-warmed and builtin hooks
    /// and through no hook, next to a raw ping-pong of the same frame sizes.
    Stream {
        /// Another build's hookd-bench binary: measure the fast rows (workers, builtin filter,
        /// no hook) of this build's daemon and of that one's in alternating rounds, and print
        /// an A/B table of the medians.
        #[arg(long, value_name = "OTHER_HOOKD_BENCH")]
        against: Option<PathBuf>,
        /// Rounds of each build with --against.
        #[arg(long, default_value_t = 4, requires = "against")]
        rounds: usize,
    },
    /// Times `hookctl relay` from exec to exit, next to a Node one-shot hook and `bash -c
    /// true` (needs `hookctl` built next to this binary).
    Relay,
    /// Times what a project install's shared wiring costs per event where hookd is
    /// installed: the relay entry's shared form against the bare one, and one guarded copy,
    /// under `/bin/sh` and `bash` (needs `hookd-relay` built next to this binary).
    Fallback,
    /// No-hook and one-hook events with OpenTelemetry export off, on with a live receiver
    /// and on with a black-holed one (accepts, never answers), interleaved; then the
    /// black-holed daemon's memory over an outage of `--outage-seconds`.
    Telemetry {
        /// How long the outage phase fires events at the black-holed daemon.
        #[arg(long, default_value_t = telemetry::DEFAULT_OUTAGE_SECONDS)]
        outage_seconds: u64,
    },
    /// Times `hookctl state get/set`: the protocol round trip through hookd-client and the
    /// whole `hookctl state` process (needs `hookctl` built next to this binary).
    State,
    /// Times policy hooks: each starter policy's evaluation, and an event through the daemon
    /// with no hook, a policy hook, a Python persistent worker and a one-shot `sh` hook
    /// (needs `hookd` built next to this binary).
    Policy,
    /// Answers every frame on a socket with a fixed frame (the ping-pong floor).
    #[command(hide = true)]
    EchoServer {
        /// The socket to listen on.
        socket: PathBuf,
        /// The size of the reply body.
        #[arg(long)]
        reply_bytes: usize,
        /// Serve with tokio and the protocol's codec on this runtime instead of blocking std.
        #[arg(long, value_enum)]
        tokio: Option<daemon::RuntimeFlavor>,
    },
    /// Runs the daemon under test.
    #[command(hide = true)]
    Daemon(daemon::DaemonArgs),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    placement::apply(cli.cross_core)?;
    match cli.helper {
        Some(Helper::EchoServer {
            socket,
            reply_bytes,
            tokio: None,
        }) => echo::serve(&socket, reply_bytes),
        Some(Helper::EchoServer {
            socket,
            reply_bytes,
            tokio: Some(flavor),
        }) => echo::serve_tokio(&socket, reply_bytes, flavor),
        Some(Helper::Daemon(args)) => daemon::serve(args),
        Some(Helper::Load {
            seconds,
            connections,
        }) => {
            let report = load::run(load::Options {
                duration: std::time::Duration::from_secs(seconds),
                connections,
                daemon_runtime: cli.daemon_runtime,
            })?;
            print!("{}", load::text(&report));
            load::check(&report)
        }
        Some(Helper::Stream {
            against: None,
            rounds: _,
        }) => {
            let report = stream::run(stream::Options::new(cli.quick, cli.daemon_runtime))?;
            print!("{}", stream::table(&report));
            Ok(())
        }
        Some(Helper::Stream {
            against: Some(other),
            rounds,
        }) => {
            let options = stream::Options::new(cli.quick, cli.daemon_runtime);
            let comparison = stream::compare(&options, &other, rounds)?;
            print!("{}", stream::comparison_table(&comparison));
            Ok(())
        }
        Some(Helper::Relay) => {
            let samples = cli.iterations.unwrap_or_else(|| relay::samples(cli.quick));
            let report = relay::run(samples, cli.daemon_runtime)?;
            print!("{}", relay::table(&report));
            Ok(())
        }
        Some(Helper::Fallback) => {
            let samples = cli.iterations.unwrap_or_else(|| relay::samples(cli.quick));
            let report = fallback::run(samples, cli.daemon_runtime)?;
            print!("{}", fallback::table(&report));
            Ok(())
        }
        Some(Helper::Telemetry { outage_seconds }) => {
            let report = telemetry::run(
                cli.quick,
                cli.iterations,
                outage_seconds,
                cli.daemon_runtime,
            )?;
            print!("{}", telemetry::table(&report));
            Ok(())
        }
        Some(Helper::State) => {
            let report = state::run(cli.quick, cli.iterations, cli.daemon_runtime)?;
            print!("{}", state::table(&report));
            Ok(())
        }
        Some(Helper::Policy) => {
            let samples = cli.iterations.unwrap_or(if cli.quick {
                200
            } else {
                policy::DEFAULT_SAMPLES
            });
            print!("{}", policy::table(&policy::run(samples)?));
            Ok(())
        }
        Some(Helper::Reload { edits }) => {
            print!("{}", reload::run(edits)?);
            Ok(())
        }
        None => {
            let options =
                bench::Options::new(cli.iterations, cli.quick, cli.json, cli.daemon_runtime);
            let report = bench::run(options)?;
            let table = report::table(&report);
            if report.options.json {
                eprint!("{table}");
                println!(
                    "{}",
                    serde_json::to_string_pretty(&report::to_json(&report))?
                );
            } else {
                print!("{table}");
            }
            Ok(())
        }
    }
}
