//! `hookctl relay EVENT`: stand in for an agent CLI's command hook and let hookd answer.
//!
//! An agent CLI (Gemini CLI, or Claude Code with `--dialect claude`) runs this command as one
//! of its hooks. It reads the event's JSON payload from stdin, sends it to the daemon as an
//! `event` request and turns the aggregate result into the host's own hook answer: stdout,
//! stderr and exit code, written by [`hookd_core::dialect::answer_for_gemini`] or
//! [`hookd_core::dialect::answer_for_claude`]. For Claude Code the event and payload are first
//! translated into Gemini's ([`hookd_core::dialect::claude_input_to_gemini`]).
//!
//! The request carries `cwd` from the payload (else this process's working directory),
//! `session_id` and `transcript_path` from the payload, this process's environment as the
//! hooks' environment, `relayed_by` (the dialect: the daemon then skips hooks in files the
//! host runs itself) and `project_dir` from the host ([`host_project_dir`]: Claude Code's
//! `CLAUDE_PROJECT_DIR`, Gemini CLI's `GEMINI_PROJECT_DIR`), never from the payload's `cwd`,
//! which a `cd` in the shell tool moves. A `SessionEnd` event is sent with `detach`: the
//! daemon answers at once (an empty result, which both hosts ignore for `SessionEnd`
//! anyway) and finishes the hooks after the host has killed the relay and exited.
//!
//! It runs once per event, so it must start and finish fast: no async runtime, no clap on the
//! hot path (the arguments are read by hand), one blocking Unix socket, and the `hello` and the
//! `event` written together without waiting for the daemon's `hello` in between.
//!
//! # A daemon that is not there
//!
//! A missing socket and a refused connection mean nobody listens (under systemd the socket is
//! held and accepts while the daemon starts): under the default policy the relay does not
//! wait, and hookd's engine answers at once (below). A connection closed before the result and
//! a `shutting_down` refusal may be a daemon coming back: they are tried again after a pause
//! (5 ms, doubling up to 200 ms) until the retry budget is spent ([`RETRY_BUDGET`],
//! `--retry-ms`, `HOOKD_RELAY_RETRY_MS`). An event whose connection was lost after it was sent
//! is sent again, so a hook may run twice when the daemon dies in the middle of a run. Under
//! `allow` and `deny` every case is tried again, and a relay that gives up leaves a mark in
//! the state directory; for the next minute other relays try for at most
//! [`DOWN_RETRY_BUDGET`].
//!
//! # A daemon that has the event and does not answer
//!
//! Hosts let a call through when a hook times out, so the relay never waits on a wedged
//! daemon until then. No `hello` within [`HELLO_TIMEOUT`] counts as not there, and neither does
//! a daemon that is a stopped process ([`peer_is_stopped`]) once the hello is 50 ms late.
//! After the hello, a result that takes longer than one second makes the relay look again (a
//! stopped daemon is given up on at once) and send a `ping` on the same connection; a daemon whose hooks are running answers it at once (each hook has its own
//! timeout there), and one that does not answer within [`PING_WAIT`] is stopped or wedged. The
//! event is then decided by the hooks' failure policies (the engine in plan-only mode: the
//! hooks may be running in the daemon, so they are not run again). `--deadline-ms` (else
//! `HOOKD_RELAY_DEADLINE_MS`) adds a fixed time from the relay's start.
//!
//! # When hookd cannot answer
//!
//! Under the default policy, `run`, the relay runs the event through hookd's own engine:
//! `hookd --oneshot` ([`find_engine`]: `HOOKD_ENGINE`, else beside this executable, else on
//! `PATH`), given one end of a socket pair as its stdin and sent the same frames as the
//! daemon, which answers with the daemon's own code (`hookd_server::serve_one`). When nothing
//! can decide (no engine, a payload or event the relay cannot translate, a payload over
//! [`MAX_STDIN_BYTES`] or deeper than [`MAX_DEPTH`]), the relay answers by its policy
//! (`--unreachable`, else `HOOKD_RELAY_UNREACHABLE`, else `run`):
//!
//! - `run` and `deny`: the host's blocking answer with the reason. For the events where
//!   blocking would make the agent keep going rather than stop something (Gemini's
//!   `AfterAgent`, Claude's `Stop` and `SubagentStop`), the answer stops the agent instead
//!   (`continue: false`), so it cannot loop. `deny` skips the engine.
//! - `allow`: exit 0 and nothing on stdout or stderr, exactly what a hook that has nothing to
//!   say answers, so the host goes on as if it had no hooks (Gemini CLI would show any stderr
//!   as a system message and turn it into a decision; for `BeforeToolSelection`, into a tool
//!   configuration). It skips the engine too.
//!
//! Every fallback is appended to `relay.log` in the state directory (`$XDG_STATE_HOME/hookd`,
//! else `~/.local/state/hookd`), at most one line a minute; `hookctl doctor` counts them.

use std::ffi::{OsStr, OsString};
use std::io::{self, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use hookd_client::blocking::{self, ConnectError, FrameError, FrameReader};
use hookd_core::HookEventName;
use hookd_core::dialect::{Dialect, DialectError, HostAnswer, RelayInput};
use hookd_protocol::{
    ClientHello, ClientMessage, EventRequest, EventResult, RequestId, ServerMessage, WireEnv,
};
use serde_json::{Map, Value, json};

/// How long the daemon has to answer the `hello` (from the start of the connection attempt).
pub const HELLO_TIMEOUT: Duration = Duration::from_secs(2);

/// The environment variable holding the default unreachable policy.
pub const UNREACHABLE_ENV_VAR: &str = "HOOKD_RELAY_UNREACHABLE";

/// The largest frame the relay reads: the protocol's default maximum.
const MAX_FRAME_BYTES: usize = hookd_protocol::DEFAULT_MAX_FRAME_BYTES;

/// The frame reader's first buffer: the answers to an event (hello, result) fit, so it does
/// not grow on the usual path.
const READ_BUFFER_BYTES: usize = 16 * 1024;

/// The id of the relay's one request.
const REQUEST_ID: u64 = 1;

/// What the relay answers when hookd cannot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Unreachable {
    /// Run the event's hooks with hookd's own engine in a process of its own
    /// (`hookd --oneshot`) and answer as the daemon would (the default); when that engine
    /// cannot be run either, give the host's blocking answer with the reason.
    #[default]
    Run,
    /// Let the host go on as if it had no hooks.
    Allow,
    /// Give the host's blocking answer, with a reason naming hookd.
    Deny,
}

impl Unreachable {
    /// Parses `run`, `allow` or `deny` (any case, surrounding blanks ignored).
    pub fn parse(text: &str) -> Option<Unreachable> {
        match text.trim().to_ascii_lowercase().as_str() {
            "run" => Some(Unreachable::Run),
            "allow" => Some(Unreachable::Allow),
            "deny" => Some(Unreachable::Deny),
            _ => None,
        }
    }
}

/// The arguments of `hookctl relay`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RelayArgs {
    /// The event name in the host's language (`BeforeTool`, or `PreToolUse` for Claude).
    pub event: String,
    /// The host's language.
    pub dialect: Dialect,
    /// `--unreachable`, when given.
    pub unreachable: Option<Unreachable>,
    /// `--socket`, when given.
    pub socket: Option<PathBuf>,
    /// What was wrong with the arguments, if anything: the relay then answers by its policy.
    pub problem: Option<String>,
    /// `--retry-ms`, when given: how long to keep trying a daemon that is not there.
    pub retry: Option<Duration>,
    /// `--deadline-ms`, when given: the relay answers within this time of its start, whatever
    /// the daemon does.
    pub deadline: Option<Duration>,
    /// Where the relay log and the "daemon down" mark live ([`state_dir`]); `None`: nowhere
    /// (nothing is logged, no mark is kept). [`run`] fills it in from the environment.
    pub state_dir: Option<PathBuf>,
}

/// The usage line, for messages.
pub const USAGE: &str = "hookctl relay EVENT [--dialect HOST] [--unreachable run|allow|deny] \
                         [--socket PATH] [--retry-ms MS] [--deadline-ms MS]";

impl RelayArgs {
    /// Reads the arguments after the program name when they are a `relay` invocation
    /// (`--socket PATH` may come before `relay`); `None` when they are not, or when they ask
    /// for help (clap prints it).
    pub fn from_args(args: &[OsString]) -> Option<RelayArgs> {
        let mut relay = RelayArgs::default();
        let mut rest = args.iter();
        // Global options before the subcommand.
        loop {
            let arg = rest.next()?.to_str()?;
            if arg == "relay" {
                break;
            }
            if arg == "--socket" {
                relay.socket = Some(PathBuf::from(rest.next()?));
            } else if let Some(path) = arg.strip_prefix("--socket=") {
                relay.socket = Some(PathBuf::from(path));
            } else {
                return None;
            }
        }
        let mut problems: Vec<String> = Vec::new();
        let mut event: Option<String> = None;
        while let Some(arg) = rest.next() {
            let Some(text) = arg.to_str() else {
                problems.push(format!(
                    "an argument is not UTF-8: {}",
                    arg.to_string_lossy()
                ));
                continue;
            };
            if text == "-h" || text == "--help" {
                return None;
            }
            let (flag, inline) = match text.split_once('=') {
                Some((flag, value)) if flag.starts_with("--") => (flag, Some(value.to_owned())),
                _ => (text, None),
            };
            let mut value = |name: &str| -> Option<String> {
                if let Some(value) = inline.clone() {
                    return Some(value);
                }
                match rest
                    .next()
                    .map(|value| value.to_string_lossy().into_owned())
                {
                    Some(value) => Some(value),
                    None => {
                        problems.push(format!("{name} needs a value"));
                        None
                    }
                }
            };
            match flag {
                "--dialect" => {
                    if let Some(text) = value("--dialect") {
                        match Dialect::parse(text.trim()) {
                            Some(dialect) => relay.dialect = dialect,
                            None => problems.push(format!(
                                "--dialect must be one of {}, not {text:?}",
                                Dialect::names()
                            )),
                        }
                    }
                }
                "--unreachable" => {
                    if let Some(text) = value("--unreachable") {
                        match Unreachable::parse(&text) {
                            Some(policy) => relay.unreachable = Some(policy),
                            None => problems.push(format!(
                                "--unreachable must be run, allow or deny, not {text:?}"
                            )),
                        }
                    }
                }
                "--socket" => relay.socket = value("--socket").map(PathBuf::from),
                "--deadline-ms" => {
                    if let Some(text) = value("--deadline-ms") {
                        match text.trim().parse::<u64>() {
                            Ok(ms) => relay.deadline = Some(Duration::from_millis(ms)),
                            Err(_) => problems
                                .push(format!("--deadline-ms must be a number, not {text:?}")),
                        }
                    }
                }
                "--retry-ms" => {
                    if let Some(text) = value("--retry-ms") {
                        match text.trim().parse::<u64>() {
                            Ok(ms) => relay.retry = Some(Duration::from_millis(ms)),
                            Err(_) => {
                                problems.push(format!("--retry-ms must be a number, not {text:?}"))
                            }
                        }
                    }
                }
                _ if flag.starts_with('-') && flag.len() > 1 => {
                    problems.push(format!("unknown option {flag}"));
                }
                _ if event.is_none() => event = Some(text.to_owned()),
                _ => problems.push(format!("unexpected argument {text:?}")),
            }
        }
        match event {
            Some(event) => relay.event = event,
            None => problems.push("the event name is missing".to_owned()),
        }
        if !problems.is_empty() {
            relay.problem = Some(format!("{} (usage: {USAGE})", problems.join("; ")));
        }
        Some(relay)
    }

    /// The policy: `--unreachable`, else `HOOKD_RELAY_UNREACHABLE` (when valid), else run.
    pub fn policy(&self, env_value: Option<&OsStr>) -> Unreachable {
        self.unreachable
            .or_else(|| {
                env_value
                    .and_then(OsStr::to_str)
                    .and_then(Unreachable::parse)
            })
            .unwrap_or_default()
    }
}

/// `hookctl relay`'s arguments as clap reads them: only for `--help` and for callers of
/// [`crate::run`]; the binary reads them by hand ([`RelayArgs::from_args`]).
#[derive(Debug, Clone, clap::Args)]
pub struct RelayCommand {
    /// The event, as the agent CLI names it (BeforeTool, ...; with --dialect claude or codex:
    /// PreToolUse, ...).
    pub event: String,
    /// The agent CLI whose hook this stands in for.
    #[arg(long, default_value = "gemini", value_parser = dialect_name())]
    pub dialect: String,
    /// What to do when hookd cannot be reached or cannot answer: run (run the event's hooks
    /// with hookd's engine, `hookd --oneshot`, and answer as hookd would; when that cannot
    /// run, block), allow (go on as if there were no hooks) or deny (the host's blocking
    /// answer) [default: $HOOKD_RELAY_UNREACHABLE, else run].
    #[arg(long, value_name = "run|allow|deny", value_parser = ["run", "allow", "deny"])]
    pub unreachable: Option<String>,
    /// How long to keep trying a daemon that is not there (refused, no socket, connection
    /// lost) before answering by the policy [default: $HOOKD_RELAY_RETRY_MS, else 3000].
    #[arg(long, value_name = "MS")]
    pub retry_ms: Option<u64>,
    /// Answer within this many milliseconds of the start, whatever the daemon does: past it,
    /// the hooks' failure policies decide [default: $HOOKD_RELAY_DEADLINE_MS, else no fixed
    /// deadline: a daemon that stops answering pings for 2 s is given up on].
    #[arg(long, value_name = "MS")]
    pub deadline_ms: Option<u64>,
}

/// A registered dialect's name, for clap: its possible values are the registry's names.
fn dialect_name() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(Dialect::ALL.iter().map(|dialect| dialect.name()))
}

impl RelayCommand {
    /// The relay's arguments, with the global `--socket`.
    pub fn to_args(&self, socket: Option<PathBuf>) -> RelayArgs {
        RelayArgs {
            event: self.event.clone(),
            dialect: Dialect::parse(&self.dialect).unwrap_or_default(),
            unreachable: self.unreachable.as_deref().and_then(Unreachable::parse),
            socket,
            problem: None,
            retry: self.retry_ms.map(Duration::from_millis),
            deadline: self.deadline_ms.map(Duration::from_millis),
            state_dir: None,
        }
    }
}

/// The event in both languages: the host that relayed it and its translation (the host's
/// object shapes the answer).
#[derive(Debug, Clone)]
struct Event {
    dialect: Dialect,
    relayed: RelayInput,
}

/// Why hookd gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum RelayError {
    /// The arguments were wrong.
    #[error("{0}")]
    Usage(String),
    /// stdin was not a JSON object, or could not be translated.
    #[error("{0}")]
    Payload(String),
    /// The daemon could not be reached or stopped answering.
    #[error("hookd is not reachable at {socket}: {reason}")]
    Unreachable {
        /// The socket tried.
        socket: String,
        /// What went wrong.
        reason: String,
    },
    /// The daemon answered the request with an error.
    #[error("hookd refused the event: {0}")]
    Refused(String),
    /// The daemon has the event but did not answer in time.
    #[error("hookd at {socket} did not answer in time: {reason}")]
    Late {
        /// The socket used.
        socket: String,
        /// What happened.
        reason: String,
    },
    /// hookd could not answer and its engine could not be run in its place.
    #[error("{daemon}, and {engine}")]
    NoEngine {
        /// Why the daemon did not answer.
        daemon: String,
        /// Why the engine could not answer.
        engine: String,
    },
}

/// Runs one relay invocation: reads stdin, asks the daemon, writes the host's answer.
pub fn run(args: &RelayArgs) -> ExitCode {
    let mut args = args.clone();
    if args.state_dir.is_none() {
        args.state_dir = state_dir(|name| std::env::var_os(name));
    }
    if args.deadline.is_none() {
        args.deadline = std::env::var_os(DEADLINE_ENV_VAR)
            .and_then(|value| value.into_string().ok())
            .and_then(|text| text.trim().parse::<u64>().ok())
            .map(Duration::from_millis);
    }
    let args = &args;
    let policy = args.policy(std::env::var_os(UNREACHABLE_ENV_VAR).as_deref());
    let answer = match read_stdin(&mut io::stdin().lock(), MAX_STDIN_BYTES) {
        Ok(Stdin::Payload(stdin)) => relay(args, &stdin, policy),
        Ok(Stdin::TooLarge) => fallback_answer(
            args,
            &RelayError::Payload(format!(
                "the event payload is larger than {MAX_STDIN_BYTES} bytes, more than hookd \
                 accepts"
            )),
            policy,
            false,
        ),
        Err(err) => fallback_answer(
            args,
            &RelayError::Payload(format!("cannot read the event from stdin: {err}")),
            policy,
            false,
        ),
    };
    emit(&answer)
}

/// The largest event payload the relay reads from stdin: what the daemon accepts in one
/// frame, less room for the rest of the request. A larger one is read to its end (so the host
/// is not left writing into a closed pipe) without being kept, and answered by the policy.
pub const MAX_STDIN_BYTES: usize = MAX_FRAME_BYTES - 1024 * 1024;

/// What stdin held.
#[derive(Debug, PartialEq, Eq)]
pub enum Stdin {
    /// The payload's bytes.
    Payload(Vec<u8>),
    /// More than the cap: the bytes were read and dropped.
    TooLarge,
}

/// Reads `input` to its end, keeping at most `cap` bytes: past the cap the rest is read in
/// small pieces and dropped, so memory stays bounded whatever the host sends.
pub fn read_stdin(input: &mut impl Read, cap: usize) -> io::Result<Stdin> {
    // Room for a typical payload up front: reading starts with large reads, not tiny ones.
    let mut kept = Vec::with_capacity(64 * 1024);
    let read = input.take(cap as u64 + 1).read_to_end(&mut kept)?;
    if read <= cap {
        return Ok(Stdin::Payload(kept));
    }
    drop(kept);
    let mut scratch = vec![0u8; 64 * 1024];
    loop {
        match input.read(&mut scratch) {
            Ok(0) => return Ok(Stdin::TooLarge),
            Ok(_) => {}
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
}

/// The `main` of a binary that is only the relay (`hookd-relay`): its arguments are
/// `hookctl relay`'s, and `--version` alone prints the version (never an event name: hosts'
/// events are words; `hookctl doctor` asks it to compare the relay with hookctl).
pub fn relay_binary_main(name: &str) -> ExitCode {
    let mut given = std::env::args_os().skip(1);
    if let (Some(only), None) = (given.next(), given.next())
        && (only == "--version" || only == "-V")
    {
        println!("{name} {}", env!("CARGO_PKG_VERSION"));
        return ExitCode::SUCCESS;
    }
    let args: Vec<OsString> = std::iter::once(OsString::from("relay"))
        .chain(std::env::args_os().skip(1))
        .collect();
    match RelayArgs::from_args(&args) {
        Some(relay) => run(&relay),
        None => {
            eprintln!("usage: {USAGE}");
            ExitCode::from(2)
        }
    }
}

/// Writes the answer and returns its exit code.
fn emit(answer: &HostAnswer) -> ExitCode {
    // A host that stopped reading is gone; nothing better can be done with the error.
    let _ = io::stdout().lock().write_all(answer.stdout.as_bytes());
    let _ = io::stderr().lock().write_all(answer.stderr.as_bytes());
    ExitCode::from(u8::try_from(answer.exit_code).unwrap_or(1))
}

/// The host's answer for one event payload.
///
/// A payload nested deeper than [`SHALLOW_DEPTH`] is handled on a thread whose stack has
/// room for [`MAX_DEPTH`] levels in every step (parsing, translating, encoding, dropping);
/// one deeper than [`MAX_DEPTH`], which no host sends, is answered by the policy.
pub fn relay(args: &RelayArgs, stdin: &[u8], policy: Unreachable) -> HostAnswer {
    let started = Instant::now();
    let depth = hookd_protocol::json_depth(stdin);
    if depth > MAX_DEPTH {
        let error = RelayError::Payload(format!(
            "the event payload nests deeper than {MAX_DEPTH} levels, more than hookd accepts"
        ));
        return fallback_answer(args, &error, policy, false);
    }
    if depth <= SHALLOW_DEPTH {
        return relay_parsed(args, stdin, policy, started);
    }
    let outcome = std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("relay-deep".to_owned())
            .stack_size(hookd_protocol::DEEP_STACK_BYTES)
            .spawn_scoped(scope, || relay_parsed(args, stdin, policy, started))
            .map(|handle| handle.join())
    });
    match outcome {
        Ok(Ok(answer)) => answer,
        Ok(Err(_)) | Err(_) => {
            let error = RelayError::Payload(
                "cannot set up a thread for a deeply nested payload".to_owned(),
            );
            fallback_answer(args, &error, policy, false)
        }
    }
}

/// The payload nesting up to which the relay works on its own thread.
pub const SHALLOW_DEPTH: usize = 256;

/// The deepest payload the relay and the daemon evaluate (`hookd_protocol::MAX_JSON_DEPTH`).
pub const MAX_DEPTH: usize = hookd_protocol::MAX_JSON_DEPTH;

/// [`relay`] once the depth is known to fit the thread.
fn relay_parsed(
    args: &RelayArgs,
    stdin: &[u8],
    policy: Unreachable,
    started: Instant,
) -> HostAnswer {
    let payload = match parse_payload(stdin) {
        Ok(payload) => payload,
        Err(err) => return fallback_answer(args, &err, policy, false),
    };
    let stop_hook_active = payload.get("stop_hook_active") == Some(&Value::Bool(true));
    let prepared = match prepare(args, payload) {
        Ok(prepared) => prepared,
        Err(err) => return fallback_answer(args, &err, policy, stop_hook_active),
    };
    let deadline = args.deadline.map(|deadline| started + deadline);
    match ask_daemon(args, &prepared, policy, deadline) {
        Ok(result) => answer(&prepared.event, Some(&result)),
        Err(err) if policy == Unreachable::Run => {
            let plan_only = matches!(err, RelayError::Late { .. });
            match run_engine(args, &prepared, plan_only, deadline) {
                Ok(result) => {
                    if let Some(dir) = &args.state_dir {
                        let how = if plan_only {
                            "decided by the hooks' failure policies (hookd --oneshot --plan-only)"
                        } else {
                            "ran the hooks with hookd --oneshot"
                        };
                        log_warning(
                            dir,
                            &format!("{} {}: {err}; {how}", args.dialect.as_str(), args.event),
                        );
                    }
                    answer(&prepared.event, Some(&result))
                }
                Err(engine) => {
                    let error = RelayError::NoEngine {
                        daemon: err.to_string(),
                        engine,
                    };
                    fallback_answer(args, &error, policy, stop_hook_active)
                }
            }
        }
        Err(err) => fallback_answer(args, &err, policy, stop_hook_active),
    }
}

/// An event ready to send: the translated event and its encoded hello and request frames.
struct Prepared {
    event: Event,
    frames: Vec<u8>,
}

/// Translates the payload and encodes the request.
fn prepare(args: &RelayArgs, payload: Map<String, Value>) -> Result<Prepared, RelayError> {
    if let Some(problem) = &args.problem {
        return Err(RelayError::Usage(problem.clone()));
    }
    let text = |key: &str| {
        payload
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let session_id = text("session_id");
    let transcript_path = text("transcript_path");
    let cwd = match payload.get("cwd").and_then(Value::as_str) {
        Some(cwd) if Path::new(cwd).is_absolute() => cwd.to_owned(),
        _ => std::env::current_dir()
            .map_err(|err| {
                RelayError::Payload(format!("cannot determine the current directory: {err}"))
            })?
            .display()
            .to_string(),
    };
    let (event, input) = translate(args, payload)?;
    // A host that spells them otherwise (Copilot CLI's `sessionId`, `transcriptPath`) has them
    // in hookd's spelling once translated.
    let translated = |key: &str, given: String| {
        if given.is_empty() {
            event
                .relayed
                .input
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        } else {
            given
        }
    };
    let session_id = translated("session_id", session_id);
    let transcript_path = translated("transcript_path", transcript_path);
    let mut request = EventRequest::new(REQUEST_ID, event.relayed.event.as_str(), cwd);
    request.input = input;
    request.session_id = session_id;
    request.transcript_path = transcript_path;
    request.env = Some(process_env());
    request.project_dir = host_project_dir(args.dialect, |name| std::env::var_os(name));
    if request.project_dir.is_none() && args.dialect.relay().project_dir_is_hook_cwd() {
        request.project_dir = std::env::current_dir()
            .ok()
            .map(|dir| dir.display().to_string());
    }
    request.relayed_by = Some(
        relaying_host(args.dialect, |name| std::env::var_os(name))
            .as_str()
            .to_owned(),
    );
    // The host kills a SessionEnd hook after a second or two (Claude Code ~1.5 s) and ignores
    // its answer: the daemon answers at once and finishes the hooks on its own.
    request.detach = event.relayed.event == HookEventName::SessionEnd;
    // The hello and the event, encoded once and written together on every attempt.
    let hello = ClientMessage::Hello(ClientHello::new(
        format!("hookctl-relay/{}", env!("CARGO_PKG_VERSION")),
        None,
    ));
    let mut frames = Vec::new();
    let too_large = |err: Exchange| RelayError::Payload(err.to_string());
    push_frame(&mut frames, &hookd_protocol::encode(&hello)).map_err(too_large)?;
    push_frame(
        &mut frames,
        &hookd_protocol::encode(&ClientMessage::Event(request)),
    )
    .map_err(too_large)?;
    Ok(Prepared { event, frames })
}

/// The daemon's socket: `--socket`, else the default path.
fn daemon_socket(args: &RelayArgs) -> PathBuf {
    args.socket
        .clone()
        .unwrap_or_else(hookd_protocol::default_socket_path)
}

/// Sends the event to the daemon and waits for the result.
fn ask_daemon(
    args: &RelayArgs,
    prepared: &Prepared,
    policy: Unreachable,
    deadline: Option<Instant>,
) -> Result<EventResult, RelayError> {
    let socket = daemon_socket(args);
    // The "daemon down" mark matters only once an attempt has failed: it is looked at then,
    // not on every event.
    let budget = || {
        let known_down = args
            .state_dir
            .as_deref()
            .is_some_and(|dir| modified_recently(&dir.join(DOWN_MARK)));
        retry_budget(
            args.retry,
            std::env::var_os(RETRY_ENV_VAR).as_deref(),
            known_down,
        )
    };
    // With the engine to fall back on, a daemon that is not coming (no socket, or a socket
    // nobody listens on) is not waited for; only one that may be coming back (a connection
    // lost, a daemon stopping) is.
    let wait_for_absent = policy != Unreachable::Run;
    exchange_with_retries(
        &socket,
        &prepared.frames,
        budget,
        args.state_dir.as_deref(),
        wait_for_absent,
        deadline,
    )
    .map_err(|err| match err {
        Exchange::Gone(reason) | Exchange::Lost(reason) | Exchange::NotComing(reason) => {
            RelayError::Unreachable {
                socket: socket.display().to_string(),
                reason,
            }
        }
        Exchange::Late(reason) => RelayError::Late {
            socket: socket.display().to_string(),
            reason,
        },
        Exchange::Refused(message) => RelayError::Refused(message),
    })
}

/// The project root the host gives its hooks: Claude Code's `CLAUDE_PROJECT_DIR`, Gemini
/// CLI's `GEMINI_PROJECT_DIR`, when it is an absolute path. Never the payload's `cwd`, which a
/// `cd` in the shell tool moves; without it the daemon uses `cwd`.
pub fn host_project_dir(
    dialect: Dialect,
    var: impl Fn(&str) -> Option<OsString>,
) -> Option<String> {
    var(dialect.relay().project_dir_var()?)
        .and_then(|value| value.into_string().ok())
        .filter(|dir| Path::new(dir).is_absolute())
}

/// The CLI that ran this relay: the dialect's, except for a Claude Code entry that Copilot CLI
/// ran from a repository's `.claude/settings.json`. Copilot sets `COPILOT_PROJECT_DIR` for its
/// hooks only (not for its shell tool's commands, so not for a Claude Code started there), and
/// has run that file's hooks and its own files' itself: the daemon must skip those, not the
/// hooks of Claude Code's user settings, which Copilot does not run.
pub fn relaying_host(dialect: Dialect, var: impl Fn(&str) -> Option<OsString>) -> Dialect {
    let copilot = Dialect::COPILOT;
    let copilot_hook = copilot
        .relay()
        .project_dir_var()
        .and_then(var)
        .is_some_and(|dir| !dir.is_empty());
    if dialect == Dialect::CLAUDE && copilot_hook {
        copilot
    } else {
        dialect
    }
}

/// The payload as a JSON object.
fn parse_payload(stdin: &[u8]) -> Result<Map<String, Value>, RelayError> {
    let text = String::from_utf8_lossy(stdin);
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    // Without serde_json's recursion limit: [`relay`] has checked the depth and given a deep
    // payload a thread with the stack for it.
    match hookd_protocol::from_slice_deep::<Value>(text.as_bytes()) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(RelayError::Payload(
            "the event payload on stdin is not a JSON object".to_owned(),
        )),
        Err(err) => Err(RelayError::Payload(format!(
            "the event payload on stdin is not JSON: {err}"
        ))),
    }
}

/// The host's event in hookd's terms, and the event's own input fields.
fn translate(
    args: &RelayArgs,
    payload: Map<String, Value>,
) -> Result<(Event, Map<String, Value>), RelayError> {
    let dialect = args.dialect;
    let relayed = dialect
        .relay()
        .relay_input(&args.event, payload)
        .map_err(|err| match err {
            DialectError::UnknownEvent { .. } => RelayError::Usage(format!(
                "{:?} is not a {} hook event hookd can run (--dialect names the host: {})",
                args.event,
                dialect.product(),
                Dialect::names()
            )),
            other => RelayError::Payload(format!(
                "cannot translate the {} payload: {other}",
                dialect.product()
            )),
        })?;
    let input = relayed.event_input();
    Ok((Event { dialect, relayed }, input))
}

/// The host's answer for a result (or for a decision the relay makes itself).
fn answer(event: &Event, result: Option<&EventResult>) -> HostAnswer {
    let final_output = result.and_then(|result| result.final_output.as_ref());
    let errors = result.map_or(&[][..], |result| result.errors.as_slice());
    event
        .dialect
        .relay()
        .relay_answer(&event.relayed, final_output, errors)
}

/// The answer when no engine gave one, by policy. The reason goes to the relay log
/// ([`log_warning`]); with `allow` nothing else is said, so the host goes on exactly as with
/// no hooks (Gemini CLI shows a hook's stderr as a system message, and for
/// `BeforeToolSelection` any text at all becomes a tool configuration). Under `run` (the
/// engine could not decide either) and `deny` the host gets its blocking answer with the
/// reason: the CLI alone would have run its hooks, so letting the call through would be
/// weaker.
fn fallback_answer(
    args: &RelayArgs,
    error: &RelayError,
    policy: Unreachable,
    stop_hook_active: bool,
) -> HostAnswer {
    let event = known_event(args);
    let note = match policy {
        Unreachable::Allow => "allowing without hooks (--unreachable allow)",
        Unreachable::Deny => "denying (--unreachable deny)",
        Unreachable::Run => "blocking: no engine could decide",
    };
    if let Some(dir) = &args.state_dir {
        log_warning(
            dir,
            &format!("{} {}: {error}; {note}", args.dialect.as_str(), args.event),
        );
    }
    let allow = || HostAnswer {
        stdout: String::new(),
        stderr: String::new(),
        exit_code: 0,
    };
    if policy == Unreachable::Allow {
        return allow();
    }
    let Some(event) = event else {
        // No event to shape a blocking answer for: a non-zero exit that is not 2 is an error
        // both hosts show; 2 blocks where blocking is possible.
        return HostAnswer {
            stdout: String::new(),
            stderr: format!("hookctl relay: {error}; {note}\n"),
            exit_code: 2,
        };
    };
    let reason = match policy {
        Unreachable::Deny => {
            format!("hookd could not decide ({error}); denied by hookctl relay --unreachable deny")
        }
        _ => format!("hookd could not decide ({error}); blocked so that no hook is skipped"),
    };
    let keeps_going = matches!(event.relayed.event, HookEventName::AfterAgent);
    if keeps_going && stop_hook_active {
        // The agent is already continuing because of a stop hook: let it stop.
        return allow();
    }
    let decision = if keeps_going {
        json!({"continue": false, "stopReason": reason})
    } else {
        json!({"decision": "deny", "reason": reason})
    };
    let result = EventResult {
        success: false,
        final_output: Some(decision),
        all_outputs: Vec::new(),
        errors: Vec::new(),
        total_duration_ms: 0.0,
        hooks: Vec::new(),
    };
    answer(&event, Some(&result))
}

/// The environment variable naming the engine `hookd` binary (else the one beside the relay,
/// else on `PATH`).
pub const ENGINE_ENV_VAR: &str = "HOOKD_ENGINE";

/// The environment variable holding the relay's deadline in milliseconds (`--deadline-ms`).
pub const DEADLINE_ENV_VAR: &str = "HOOKD_RELAY_DEADLINE_MS";

/// How long the engine has to answer its hello: it is a fresh process reading nothing yet.
const ENGINE_HELLO_TIMEOUT: Duration = Duration::from_secs(5);

/// The `hookd` binary that runs the hooks when the daemon cannot: `$HOOKD_ENGINE` when it is
/// an absolute path, else `hookd` beside this executable, else `hookd` on `PATH`.
pub fn find_engine(
    var: impl Fn(&str) -> Option<OsString>,
    current_exe: Option<PathBuf>,
) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |path: &Path| {
        std::fs::metadata(path)
            .is_ok_and(|metadata| metadata.is_file() && metadata.permissions().mode() & 0o111 != 0)
    };
    if let Some(path) = var(ENGINE_ENV_VAR).map(PathBuf::from) {
        return (path.is_absolute() && runnable(&path)).then_some(path);
    }
    let beside = current_exe
        .and_then(|exe| exe.parent().map(|dir| dir.join("hookd")))
        .filter(|path| runnable(path));
    beside.or_else(|| {
        let path = var("PATH")?;
        std::env::split_paths(&path)
            .filter(|dir| dir.is_absolute())
            .map(|dir| dir.join("hookd"))
            .find(|path| runnable(path))
    })
}

/// Runs the event through hookd's own engine in a process of its own (`hookd --oneshot`,
/// given one end of a socket pair as its stdin) and reads its result: the same frames as from
/// the daemon. `plan_only` asks it to run nothing and let each hook's failure policy decide.
fn run_engine(
    args: &RelayArgs,
    prepared: &Prepared,
    plan_only: bool,
    deadline: Option<Instant>,
) -> Result<EventResult, String> {
    use std::os::unix::process::CommandExt;
    let engine = find_engine(|name| std::env::var_os(name), std::env::current_exe().ok())
        .ok_or_else(|| {
            "hookd's engine was not found (no hookd beside hookd-relay or on PATH)".to_owned()
        })?;
    let (ours, theirs) =
        UnixStream::pair().map_err(|err| format!("cannot make a socket pair: {err}"))?;
    let mut command = std::process::Command::new(&engine);
    command
        .arg("--oneshot")
        .arg("--socket")
        .arg(daemon_socket(args))
        .stdin(std::process::Stdio::from(std::os::fd::OwnedFd::from(
            theirs,
        )))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        // Its own process group: a host that kills the relay's group after answering (a
        // SessionEnd) leaves the engine to finish its background work.
        .process_group(0);
    if plan_only {
        command.arg("--plan-only");
    }
    // The child is not waited for: it exits once the relay closes its end, and the relay's
    // own exit hands it to init.
    let _child = command
        .spawn()
        .map_err(|err| format!("cannot start hookd's engine {}: {err}", engine.display()))?;
    let hello_by = Instant::now() + ENGINE_HELLO_TIMEOUT;
    converse(ours, &prepared.frames, hello_by, deadline, false).map_err(|err| {
        format!(
            "hookd's engine {} gave no answer: {}",
            engine.display(),
            err
        )
    })
}

/// The directory of the relay's log and its "daemon down" mark:
/// `$XDG_STATE_HOME/hookd` (else `~/.local/state/hookd`).
pub fn state_dir(var: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let absolute = |name: &str| var(name).map(PathBuf::from).filter(|dir| dir.is_absolute());
    absolute("XDG_STATE_HOME")
        .or_else(|| absolute("HOME").map(|home| home.join(".local/state")))
        .map(|dir| dir.join("hookd"))
}

/// The relay log's file name in [`state_dir`].
pub const LOG_FILE: &str = "relay.log";

/// The "daemon down" mark's file name in [`state_dir`]: its modification time is when a
/// relay last gave up on the daemon.
const DOWN_MARK: &str = "relay.down";

/// The size at which the relay log is moved to `relay.log.1` (the previous one is dropped).
const LOG_MAX_BYTES: u64 = 1024 * 1024;

/// Whether `path` was modified within [`DOWN_WINDOW`].
fn modified_recently(path: &Path) -> bool {
    std::fs::metadata(path)
        .and_then(|metadata| metadata.modified())
        .ok()
        .and_then(|modified| modified.elapsed().ok())
        .is_some_and(|age| age < DOWN_WINDOW)
}

/// Marks the daemon as down (best effort: a relay must answer even where it cannot write).
fn note_unreachable(dir: &Path) {
    let _ = std::fs::create_dir_all(dir);
    let _ = std::fs::write(dir.join(DOWN_MARK), b"");
}

/// Appends one line to the relay log in `dir`, at most one a minute (while the log was
/// written within [`DOWN_WINDOW`], the line is dropped), starting with the UTC time. The log
/// is readable by its owner only. Best effort, like [`note_unreachable`].
fn log_warning(dir: &Path, message: &str) {
    use std::os::unix::fs::OpenOptionsExt;
    let path = dir.join(LOG_FILE);
    if modified_recently(&path) {
        return;
    }
    let _ = std::fs::create_dir_all(dir);
    if std::fs::metadata(&path).is_ok_and(|metadata| metadata.len() > LOG_MAX_BYTES) {
        let _ = std::fs::rename(&path, dir.join(format!("{LOG_FILE}.1")));
    }
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_secs());
    let line = format!(
        "{} hookctl relay: {message} (further warnings within a minute are not logged)\n",
        utc_timestamp(seconds)
    );
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(&path);
    if let Ok(mut file) = file {
        let _ = file.write_all(line.as_bytes());
    }
}

/// `YYYY-MM-DDTHH:MM:SSZ` for seconds since the Unix epoch (the proleptic Gregorian calendar,
/// by counting 400-year eras of 146097 days).
pub fn utc_timestamp(seconds: u64) -> String {
    let days = seconds / 86_400;
    let of_day = seconds % 86_400;
    // Days since 0000-03-01, so that the leap day ends a year.
    let shifted = days + 719_468;
    let era = shifted / 146_097;
    let day_of_era = shifted % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = era * 400 + year_of_era + u64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        of_day / 3600,
        of_day % 3600 / 60,
        of_day % 60
    )
}

/// The event of the arguments, when it is one the dialect knows.
fn known_event(args: &RelayArgs) -> Option<Event> {
    let event = args.dialect.relay().event_to_hookd(&args.event)?;
    Some(Event {
        dialect: args.dialect,
        relayed: RelayInput {
            host_event: args.event.clone(),
            event,
            input: Map::new(),
            host_input: Map::new(),
        },
    })
}

/// This process's environment, for the hooks (variables that are not UTF-8 are left out).
fn process_env() -> WireEnv {
    std::env::vars_os()
        .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
        .collect()
}

/// Why an exchange ended without a result.
#[derive(Debug)]
enum Exchange {
    /// The daemon is not there right now: the connection closed before the result, or the
    /// daemon is stopping. Worth trying again within the budget (a daemon restarting).
    Gone(String),
    /// No daemon is coming: no socket, or nobody listens on it (refused). Under systemd the
    /// socket is held and accepts while the daemon (re)starts, so neither happens there.
    NotComing(String),
    /// The daemon could not be reached in time, or sent something the relay cannot read.
    Lost(String),
    /// The daemon has the event but did not answer in time (it stopped answering pings, or
    /// the deadline passed): its hooks may be running, so they must not be run again.
    Late(String),
    /// The daemon answered with an error frame.
    Refused(String),
}

impl std::fmt::Display for Exchange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exchange::Gone(reason)
            | Exchange::NotComing(reason)
            | Exchange::Lost(reason)
            | Exchange::Late(reason)
            | Exchange::Refused(reason) => f.write_str(reason),
        }
    }
}

impl From<io::Error> for Exchange {
    fn from(err: io::Error) -> Exchange {
        match err.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
                Exchange::Lost("no answer in time".to_owned())
            }
            io::ErrorKind::UnexpectedEof => Exchange::Gone("the connection closed".to_owned()),
            io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe => Exchange::Gone(err.to_string()),
            _ => Exchange::Lost(err.to_string()),
        }
    }
}

/// The environment variable that sets the retry budget in milliseconds.
pub const RETRY_ENV_VAR: &str = "HOOKD_RELAY_RETRY_MS";

/// How long the relay keeps trying a daemon that is not there (refused, no socket, connection
/// lost before the result) before it answers by its policy: long enough for a restart by hand
/// or by systemd.
pub const RETRY_BUDGET: Duration = Duration::from_millis(3000);

/// The budget while the daemon is known to be down (a relay gave up on it within
/// [`DOWN_WINDOW`]): one quick second look, so a stopped daemon does not slow every event.
pub const DOWN_RETRY_BUDGET: Duration = Duration::from_millis(250);

/// How long a give-up counts as "the daemon is down", and the least time between two warnings
/// in the relay log.
pub const DOWN_WINDOW: Duration = Duration::from_secs(60);

/// The first pause between two attempts; each next one doubles, up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(5);

/// The longest pause between two attempts.
const MAX_BACKOFF: Duration = Duration::from_millis(200);

/// The retry budget: `--retry-ms`, else `HOOKD_RELAY_RETRY_MS` when it is a number, else
/// [`RETRY_BUDGET`]; at most [`DOWN_RETRY_BUDGET`] while the daemon is known to be down.
pub fn retry_budget(
    flag: Option<Duration>,
    env_value: Option<&OsStr>,
    known_down: bool,
) -> Duration {
    let budget = flag.unwrap_or_else(|| {
        env_value
            .and_then(OsStr::to_str)
            .and_then(|text| text.trim().parse::<u64>().ok())
            .map_or(RETRY_BUDGET, Duration::from_millis)
    });
    if known_down {
        budget.min(DOWN_RETRY_BUDGET)
    } else {
        budget
    }
}

/// The pauses between attempts within `budget`: 5, 10, 20, ... ms up to 200 ms each.
pub fn backoff_schedule(budget: Duration) -> Vec<Duration> {
    let mut pauses = Vec::new();
    let mut total = Duration::ZERO;
    let mut pause = FIRST_BACKOFF;
    while total + pause <= budget {
        pauses.push(pause);
        total += pause;
        pause = (pause * 2).min(MAX_BACKOFF);
    }
    if total < budget {
        pauses.push(budget - total);
    }
    pauses
}

/// Runs the exchange, trying again after a pause while the daemon is not there, until the
/// budget is spent.
///
/// An event whose connection was lost after it was sent is sent again: the daemon may have run
/// some of its hooks before it went away, so a hook can run twice when the daemon dies in the
/// middle of a run. A gate that is never asked is the worse failure (the call would go through
/// unchecked); a daemon that stops gracefully finishes what it has read, so this happens only
/// when it crashes or is killed.
fn exchange_with_retries(
    socket: &Path,
    frames: &[u8],
    budget: impl FnOnce() -> Duration,
    state_dir: Option<&Path>,
    wait_for_absent: bool,
    deadline: Option<Instant>,
) -> Result<EventResult, Exchange> {
    let mut budget = Some(budget);
    let mut pauses = Vec::new().into_iter();
    loop {
        match exchange(socket, frames, deadline) {
            Err(Exchange::NotComing(reason)) if !wait_for_absent => {
                return Err(Exchange::NotComing(reason));
            }
            Err(Exchange::Gone(reason) | Exchange::NotComing(reason)) => {
                if let Some(budget) = budget.take() {
                    pauses = backoff_schedule(budget()).into_iter();
                }
                let past_deadline =
                    |pause: Duration| deadline.is_some_and(|at| Instant::now() + pause >= at);
                match pauses.next() {
                    Some(pause) if !past_deadline(pause) => std::thread::sleep(pause),
                    _ => {
                        if let Some(dir) = state_dir {
                            note_unreachable(dir);
                        }
                        return Err(Exchange::Lost(reason));
                    }
                }
            }
            other => return other,
        }
    }
}

/// How long the relay waits for a result before it checks that the daemon still answers (a
/// `ping` on the same connection): a result within it costs nothing more.
const PING_AFTER: Duration = Duration::from_secs(1);

/// How long a daemon has to answer that `ping`. A daemon whose hooks are still running
/// answers at once (each hook has its own timeout there); one that does not is stopped or
/// wedged, and the hooks' failure policies decide instead of the host's timeout.
pub const PING_WAIT: Duration = Duration::from_secs(2);

/// The id of the relay's liveness pings.
const PING_ID: u64 = 2;

/// How long the relay waits for the daemon's hello before it looks whether the daemon is a
/// stopped process (which would never answer).
const STOPPED_CHECK_AFTER: Duration = Duration::from_millis(50);

/// Whether the process on the other end of `stream` is stopped (state `T` or `t` in
/// `/proc/PID/stat`: SIGSTOP, SIGTSTP or a debugger). Anything that cannot be read counts as
/// not stopped: the ordinary deadlines then apply.
fn peer_is_stopped(stream: &UnixStream) -> bool {
    let Ok(credentials) =
        nix::sys::socket::getsockopt(stream, nix::sys::socket::sockopt::PeerCredentials)
    else {
        return false;
    };
    std::fs::read_to_string(format!("/proc/{}/stat", credentials.pid()))
        .ok()
        .as_deref()
        .and_then(process_state)
        .is_some_and(|state| matches!(state, 'T' | 't'))
}

/// The state letter of a `/proc/PID/stat` line: the first field after the command name, which
/// is in parentheses and may itself hold spaces and parentheses.
fn process_state(stat: &str) -> Option<char> {
    let (_, after) = stat.rsplit_once(')')?;
    after.split_whitespace().next()?.chars().next()
}

/// Connects and converses with the daemon.
fn exchange(
    socket: &Path,
    frames: &[u8],
    deadline: Option<Instant>,
) -> Result<EventResult, Exchange> {
    let started = Instant::now();
    let hello_by = started + HELLO_TIMEOUT;
    let stream = connect(socket, hello_by)?;
    converse(stream, frames, hello_by, deadline, true)
}

/// Writes `frames` (the hello and the event) and reads frames until the event's result.
///
/// The hello must come by `hello_by`; the result by `deadline`, when there is one. With
/// `ping`, a result that takes longer than [`PING_AFTER`] makes the relay ask whether the
/// peer still answers; no answer within [`PING_WAIT`] ends the exchange as late.
fn converse(
    mut stream: UnixStream,
    frames: &[u8],
    hello_by: Instant,
    deadline: Option<Instant>,
    ping: bool,
) -> Result<EventResult, Exchange> {
    let hello_by = deadline.map_or(hello_by, |deadline| deadline.min(hello_by));
    let remaining = hello_by
        .saturating_duration_since(Instant::now())
        .max(Duration::from_millis(1));
    stream.set_write_timeout(Some(remaining))?;
    stream.write_all(frames)?;
    let mut reader = FrameReader::new(MAX_FRAME_BYTES, READ_BUFFER_BYTES);
    // A daemon says hello within a millisecond or two. One that has not after
    // [`STOPPED_CHECK_AFTER`] is looked at: a stopped process (SIGSTOP, a debugger) will not
    // answer, so it is given up on at once rather than at the hello deadline.
    let first_look = (Instant::now() + STOPPED_CHECK_AFTER).min(hello_by);
    let first = match next_message(&mut reader, &stream, ping.then_some(first_look))? {
        None if peer_is_stopped(&stream) => {
            return Err(Exchange::Lost(
                "the daemon is stopped (SIGSTOP or a debugger)".to_owned(),
            ));
        }
        None => next_message(&mut reader, &stream, Some(hello_by))?,
        message => message,
    };
    match first {
        Some(ServerMessage::Hello(_)) => {}
        Some(ServerMessage::Error(error)) => return Err(Exchange::Refused(error.message)),
        Some(other) => {
            return Err(Exchange::Lost(format!(
                "the daemon answered the hello with {}",
                other.type_name()
            )));
        }
        None => return Err(Exchange::Lost("no hello in time".to_owned())),
    }
    let id = RequestId::from(REQUEST_ID);
    // When the last sign of life came, and when a ping went out that is not answered yet.
    let mut alive = Instant::now();
    let mut ping_sent: Option<Instant> = None;
    loop {
        let check = if !ping {
            None
        } else {
            Some(ping_sent.map_or(alive + PING_AFTER, |sent| sent + PING_WAIT))
        };
        let wake = match (check, deadline) {
            (Some(check), Some(deadline)) => Some(check.min(deadline)),
            (check, deadline) => check.or(deadline),
        };
        match next_message(&mut reader, &stream, wake)? {
            Some(ServerMessage::Result(result)) if result.id == id => return Ok(result.result),
            Some(ServerMessage::Error(error)) if error.id.as_ref().is_none_or(|got| *got == id) => {
                // A daemon that is stopping refuses new work: the next one will take it.
                if error.code == hookd_protocol::ErrorCode::ShuttingDown {
                    return Err(Exchange::Gone(error.message));
                }
                return Err(Exchange::Refused(format!(
                    "{}: {}",
                    error.code.as_str(),
                    error.message
                )));
            }
            Some(_) => {
                alive = Instant::now();
                ping_sent = None;
            }
            None => {
                let now = Instant::now();
                if deadline.is_some_and(|deadline| now >= deadline) {
                    return Err(Exchange::Late(
                        "no answer within the relay's deadline".to_owned(),
                    ));
                }
                // A stopped daemon answers nothing: no need to wait for the pong.
                if ping && peer_is_stopped(&stream) {
                    return Err(Exchange::Late(
                        "the daemon has the event but is stopped (SIGSTOP or a debugger)"
                            .to_owned(),
                    ));
                }
                match ping_sent {
                    Some(sent) if now >= sent + PING_WAIT => {
                        return Err(Exchange::Late(format!(
                            "the daemon has the event but stopped answering (no pong within \
                             {} s)",
                            PING_WAIT.as_secs()
                        )));
                    }
                    Some(_) => {}
                    None if now >= alive + PING_AFTER => {
                        let request = ClientMessage::Ping(hookd_protocol::PingRequest {
                            id: RequestId::from(PING_ID),
                        });
                        let mut frame = Vec::new();
                        push_frame(&mut frame, &hookd_protocol::encode(&request))?;
                        stream.set_write_timeout(Some(PING_WAIT))?;
                        stream.write_all(&frame)?;
                        ping_sent = Some(now);
                    }
                    None => {}
                }
            }
        }
    }
}

/// Connects within `deadline` ([`blocking::connect`]: non-blocking while connecting, so a
/// daemon whose backlog is full cannot hold the relay past it).
///
/// The socket is checked first (its directory and the socket are the user's own, not
/// symbolic links, and nobody else can write to the directory) and the process that listens
/// on it must run as the user (`SO_PEERCRED`), so that the hello, the environment and the
/// event never reach another user's fake daemon; a failed check is a lost daemon, answered
/// with the unreachable policy and the reason on stderr.
fn connect(socket: &Path, deadline: Instant) -> Result<UnixStream, Exchange> {
    blocking::connect(socket, deadline).map_err(|err| match err {
        ConnectError::Io(err) => Exchange::from(err),
        err if err.is_absent() => Exchange::NotComing(err.to_string()),
        err => Exchange::Lost(err.to_string()),
    })
}

/// Appends one frame (length prefix and body) to `out`.
fn push_frame(out: &mut Vec<u8>, body: &[u8]) -> Result<(), Exchange> {
    blocking::push_frame(out, body, MAX_FRAME_BYTES).map_err(|_| {
        Exchange::Lost(format!(
            "the event is too large to send ({} bytes)",
            body.len()
        ))
    })
}

/// The next daemon message; `None` when `until` passes first (what was received of a frame
/// is kept for the next call).
fn next_message(
    reader: &mut FrameReader,
    stream: &UnixStream,
    until: Option<Instant>,
) -> Result<Option<ServerMessage>, Exchange> {
    match reader.read_frame_until(stream, until) {
        Ok(Some(body)) => parse_server_frame(body).map(Some),
        Ok(None) => Ok(None),
        Err(FrameError::TooLarge { length, .. }) => Err(Exchange::Lost(format!(
            "the daemon sent a frame of {length} bytes, more than {MAX_FRAME_BYTES}"
        ))),
        Err(FrameError::Closed) => Err(Exchange::Gone("the connection closed".to_owned())),
        Err(FrameError::Io(err)) => Err(err.into()),
    }
}

/// Parses one frame's body as a daemon message.
fn parse_server_frame(body: &[u8]) -> Result<ServerMessage, Exchange> {
    hookd_protocol::parse_server_message(body).map_err(|err| {
        Exchange::Lost(format!(
            "the daemon sent a message hookctl cannot read: {err}"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Option<RelayArgs> {
        let list: Vec<OsString> = list.iter().map(OsString::from).collect();
        RelayArgs::from_args(&list)
    }

    #[test]
    fn arguments_are_read_by_hand() {
        // (arguments, event, dialect, unreachable, socket, problem?)
        type Case<'a> = (
            &'a [&'a str],
            &'a str,
            Dialect,
            Option<Unreachable>,
            Option<&'a str>,
            bool,
        );
        let cases: [Case<'_>; 8] = [
            (
                &["relay", "BeforeTool"],
                "BeforeTool",
                Dialect::GEMINI,
                None,
                None,
                false,
            ),
            (
                &[
                    "--socket",
                    "/s",
                    "relay",
                    "PreToolUse",
                    "--dialect",
                    "claude",
                ],
                "PreToolUse",
                Dialect::CLAUDE,
                None,
                Some("/s"),
                false,
            ),
            (
                &["relay", "AfterTool", "--unreachable=deny", "--socket=/t"],
                "AfterTool",
                Dialect::GEMINI,
                Some(Unreachable::Deny),
                Some("/t"),
                false,
            ),
            (
                &[
                    "relay",
                    "--dialect=claude",
                    "Stop",
                    "--unreachable",
                    "ALLOW",
                ],
                "Stop",
                Dialect::CLAUDE,
                Some(Unreachable::Allow),
                None,
                false,
            ),
            (&["relay"], "", Dialect::GEMINI, None, None, true),
            (&["relay", "A", "B"], "A", Dialect::GEMINI, None, None, true),
            (
                &["relay", "A", "--dialect", "cursor"],
                "A",
                Dialect::GEMINI,
                None,
                None,
                true,
            ),
            (
                &["relay", "A", "--frobnicate"],
                "A",
                Dialect::GEMINI,
                None,
                None,
                true,
            ),
        ];
        for (list, event, dialect, unreachable, socket, problem) in cases {
            let parsed = args(list).unwrap_or_else(|| panic!("{list:?} is a relay"));
            assert_eq!(parsed.event, event, "{list:?}");
            assert_eq!(parsed.dialect, dialect, "{list:?}");
            assert_eq!(parsed.unreachable, unreachable, "{list:?}");
            assert_eq!(parsed.socket.as_deref(), socket.map(Path::new), "{list:?}");
            assert_eq!(
                parsed.problem.is_some(),
                problem,
                "{list:?}: {:?}",
                parsed.problem
            );
        }
        for other in [
            &["list"][..],
            &["emit", "relay"],
            &["relay", "--help"],
            &["relay", "BeforeTool", "-h"],
            &[],
        ] {
            assert_eq!(args(other), None, "{other:?}");
        }
    }

    #[test]
    fn the_policy_comes_from_the_flag_then_the_environment() {
        let cases = [
            (None, None, Unreachable::Run),
            (None, Some("deny"), Unreachable::Deny),
            (None, Some(" Deny "), Unreachable::Deny),
            (None, Some("allow"), Unreachable::Allow),
            (None, Some("block"), Unreachable::Run),
            (Some(Unreachable::Run), Some("allow"), Unreachable::Run),
            (Some(Unreachable::Allow), Some("deny"), Unreachable::Allow),
            (Some(Unreachable::Deny), None, Unreachable::Deny),
        ];
        for (flag, env, expected) in cases {
            let relay = RelayArgs {
                unreachable: flag,
                ..RelayArgs::default()
            };
            assert_eq!(
                relay.policy(env.map(OsStr::new)),
                expected,
                "{flag:?} {env:?}"
            );
        }
    }

    #[test]
    fn payload_base_fields_are_not_input() {
        let relay = RelayArgs {
            event: "BeforeTool".to_owned(),
            ..RelayArgs::default()
        };
        let payload = parse_payload(
            br#"{"session_id":"s","transcript_path":"t","cwd":"/srv/p","hook_event_name":"BeforeTool","timestamp":"x","tool_name":"ls","tool_input":{}}"#,
        )
        .expect("payload");
        let (event, input) = translate(&relay, payload).expect("translated");
        assert_eq!(event.relayed.event, HookEventName::BeforeTool);
        let keys: Vec<&str> = input.keys().map(String::as_str).collect();
        assert_eq!(keys, ["tool_name", "tool_input"]);
        assert!(parse_payload(b"[1]").is_err());
        assert!(parse_payload(b"{").is_err());
        assert_eq!(parse_payload(b"  ").expect("empty").len(), 0);
    }

    #[test]
    fn a_claude_entry_run_by_copilot_is_relayed_by_copilot() {
        // (dialect, the project variable set for the hook, the host the daemon is told)
        let cases = [
            (Dialect::CLAUDE, "CLAUDE_PROJECT_DIR", Dialect::CLAUDE),
            (Dialect::CLAUDE, "COPILOT_PROJECT_DIR", Dialect::COPILOT),
            (Dialect::COPILOT, "COPILOT_PROJECT_DIR", Dialect::COPILOT),
            (Dialect::GEMINI, "COPILOT_PROJECT_DIR", Dialect::GEMINI),
            (Dialect::CODEX, "CLAUDE_PROJECT_DIR", Dialect::CODEX),
        ];
        for (dialect, set, expected) in cases {
            let env = |name: &str| (name == set).then(|| OsString::from("/srv/p"));
            assert_eq!(relaying_host(dialect, env), expected, "{dialect:?} {set}");
        }
    }

    #[test]
    fn every_host_names_its_session_and_transcript_to_the_daemon() {
        // (dialect, event, payload in the host's spelling)
        let cases = [
            (
                Dialect::CLAUDE,
                "Stop",
                r#"{"session_id":"s1","transcript_path":"/t/x.jsonl","cwd":"/srv/p","hook_event_name":"Stop"}"#,
            ),
            (
                Dialect::COPILOT,
                "agentStop",
                r#"{"sessionId":"s1","transcriptPath":"/t/x.jsonl","cwd":"/srv/p","stopReason":"end_turn"}"#,
            ),
        ];
        for (dialect, event, payload) in cases {
            let relay = RelayArgs {
                event: event.to_owned(),
                dialect,
                ..RelayArgs::default()
            };
            let payload = parse_payload(payload.as_bytes()).expect("payload");
            let prepared = prepare(&relay, payload).expect("prepared");
            let frames = String::from_utf8_lossy(&prepared.frames);
            assert!(
                frames.contains(r#""session_id":"s1""#),
                "{dialect:?}: {frames}"
            );
            assert!(
                frames.contains(r#""transcript_path":"/t/x.jsonl""#),
                "{dialect:?}: {frames}"
            );
        }
    }

    #[test]
    fn an_unreachable_daemon_is_answered_by_policy_and_logged_not_shown() {
        let dir = tempfile::tempdir().expect("tempdir");
        let state = dir.path().join("state");
        let relay = RelayArgs {
            event: "BeforeToolSelection".to_owned(),
            socket: Some(dir.path().join("none.sock")),
            retry: Some(Duration::from_millis(40)),
            state_dir: Some(state.clone()),
            ..RelayArgs::default()
        };
        let started = Instant::now();
        let allowed = super::relay(&relay, b"{}", Unreachable::Allow);
        // Exactly a hook that says nothing: Gemini CLI changes nothing for it.
        assert_eq!(
            allowed,
            HostAnswer {
                stdout: String::new(),
                stderr: String::new(),
                exit_code: 0
            }
        );
        // The budget was spent retrying, then the daemon was marked down and the reason
        // logged once.
        assert!(started.elapsed() >= Duration::from_millis(40));
        let log = std::fs::read_to_string(state.join(LOG_FILE)).expect("log");
        assert!(log.contains("not reachable"), "{log}");
        assert!(log.contains("allowing without hooks"), "{log}");
        assert!(state.join(DOWN_MARK).exists());
        let denied = super::relay(&relay, b"{}", Unreachable::Deny);
        assert!(
            denied.exit_code == 2 || denied.stdout.contains("deny"),
            "{denied:?}"
        );
        // Rate-limited: the second warning within a minute is not written.
        let again = std::fs::read_to_string(state.join(LOG_FILE)).expect("log");
        assert_eq!(again.lines().count(), 1, "{again}");
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn retries_back_off_within_the_budget() {
        let ms = Duration::from_millis;
        let cases: [(Duration, &[u64]); 4] = [
            (ms(0), &[]),
            (ms(12), &[5, 7]),
            (ms(100), &[5, 10, 20, 40, 25]),
            (ms(700), &[5, 10, 20, 40, 80, 160, 200, 185]),
        ];
        for (budget, expected) in cases {
            let got: Vec<u64> = backoff_schedule(budget)
                .iter()
                .map(|pause| pause.as_millis() as u64)
                .collect();
            assert_eq!(got, expected, "{budget:?}");
            assert!(got.iter().sum::<u64>() <= budget.as_millis() as u64);
        }
        // (flag, environment, known down, budget)
        let budgets = [
            (None, None, false, RETRY_BUDGET),
            (None, Some("500"), false, ms(500)),
            (None, Some("soon"), false, RETRY_BUDGET),
            (Some(ms(10)), Some("500"), false, ms(10)),
            (None, None, true, DOWN_RETRY_BUDGET),
            (Some(ms(10)), None, true, ms(10)),
        ];
        for (flag, env, down, expected) in budgets {
            assert_eq!(
                retry_budget(flag, env.map(OsStr::new), down),
                expected,
                "{flag:?} {env:?} {down}"
            );
        }
    }

    #[test]
    fn the_project_comes_from_the_host_never_from_cwd() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(key, _)| *key == name)
                    .map(|(_, value)| OsString::from(value))
            }
        };
        let both: &[(&str, &str)] = &[
            ("CLAUDE_PROJECT_DIR", "/p/claude"),
            ("GEMINI_PROJECT_DIR", "/p/gemini"),
        ];
        assert_eq!(
            host_project_dir(Dialect::CLAUDE, env(both)).as_deref(),
            Some("/p/claude")
        );
        assert_eq!(
            host_project_dir(Dialect::GEMINI, env(both)).as_deref(),
            Some("/p/gemini")
        );
        assert_eq!(host_project_dir(Dialect::CLAUDE, env(&[])), None);
        assert_eq!(
            host_project_dir(Dialect::GEMINI, env(&[("GEMINI_PROJECT_DIR", "rel")])),
            None
        );
    }

    #[test]
    fn the_state_is_read_after_the_command_name() {
        let cases = [
            ("1234 (hookd) S 1 2 3", Some('S')),
            ("1234 (hookd) T 1 2 3", Some('T')),
            ("77 (a (b) c) t 1", Some('t')),
            ("77 (no state)", None),
            ("garbage", None),
        ];
        for (stat, expected) in cases {
            assert_eq!(process_state(stat), expected, "{stat}");
        }
    }

    #[test]
    fn stdin_is_kept_up_to_the_cap_and_read_to_its_end_past_it() {
        let cases: [(usize, usize, bool); 4] = [
            (0, 10, true),
            (10, 10, true),
            (11, 10, false),
            (1 << 20, 1000, false),
        ];
        for (size, cap, kept) in cases {
            let bytes = vec![b'x'; size];
            let mut input = io::Cursor::new(bytes.clone());
            let read = read_stdin(&mut input, cap).expect("read");
            assert_eq!(read == Stdin::Payload(bytes), kept, "{size} over {cap}");
            assert_eq!(read == Stdin::TooLarge, !kept, "{size} over {cap}");
            // Read to its end either way: the host is never left writing into a closed pipe.
            assert_eq!(input.position() as usize, size);
        }
    }

    #[test]
    fn the_engine_is_hookd_from_the_environment_beside_the_relay_or_on_path() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let make = |path: &Path, mode: u32| {
            std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
            std::fs::write(path, "#!/bin/sh\n").expect("write");
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
        };
        let beside = dir.path().join("bin/hookd");
        let on_path = dir.path().join("path/hookd");
        let named = dir.path().join("named/hookd");
        make(&on_path, 0o755);
        make(&named, 0o755);
        let relay = dir.path().join("bin/hookd-relay");
        let path_var = OsString::from(format!(
            "relative:{}",
            on_path.parent().expect("dir").display()
        ));
        let find = |engine: Option<&Path>| {
            find_engine(
                |name| match name {
                    "PATH" => Some(path_var.clone()),
                    ENGINE_ENV_VAR => engine.map(|path| path.as_os_str().to_owned()),
                    _ => None,
                },
                Some(relay.clone()),
            )
        };
        // Nothing beside the relay: the one on PATH (a relative PATH entry is skipped).
        assert_eq!(find(None), Some(on_path.clone()));
        // A hookd beside the relay wins over PATH; one that cannot run does not count.
        make(&beside, 0o644);
        assert_eq!(find(None), Some(on_path.clone()));
        make(&beside, 0o755);
        assert_eq!(find(None), Some(beside.clone()));
        // HOOKD_ENGINE wins, but only as an absolute path to a program: otherwise none.
        assert_eq!(find(Some(&named)), Some(named.clone()));
        assert_eq!(find(Some(Path::new("named/hookd"))), None);
        assert_eq!(find(Some(&dir.path().join("missing"))), None);
    }

    #[test]
    fn timestamps_are_utc_calendar_dates() {
        let cases = [
            (0, "1970-01-01T00:00:00Z"),
            (951_782_400, "2000-02-29T00:00:00Z"),
            (1_798_761_599, "2026-12-31T23:59:59Z"),
            (4_107_542_400, "2100-03-01T00:00:00Z"),
        ];
        for (seconds, expected) in cases {
            assert_eq!(utc_timestamp(seconds), expected, "{seconds}");
        }
    }
}
