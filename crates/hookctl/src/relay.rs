//! `hookctl relay EVENT`: stand in for an agent CLI's command hook and let hookd answer.
//!
//! An agent CLI (Gemini CLI, or Claude Code with `--dialect claude`) runs this command as one
//! of its hooks. It reads the event's JSON payload from stdin, sends it to the daemon as an
//! `event` request (the project directory from the payload's `cwd`, else this process's
//! working directory; `session_id` and `transcript_path` from the payload; this process's
//! environment as the hooks' environment), waits for the aggregate result and turns it into
//! the host's own hook answer: stdout, stderr and exit code, written by
//! [`hookd_core::dialect::answer_for_gemini`] or [`hookd_core::dialect::answer_for_claude`].
//! For Claude Code the event and payload are first translated into Gemini's
//! ([`hookd_core::dialect::claude_input_to_gemini`]).
//!
//! It runs once per event, so it must start and finish fast: no async runtime, no clap on the
//! hot path (the arguments are read by hand), one blocking Unix socket, and the `hello` and the
//! `event` written together without waiting for the daemon's `hello` in between.
//!
//! # When hookd cannot answer
//!
//! No socket, a refused connection, no `hello` within [`HELLO_TIMEOUT`], a connection lost
//! before the result, an `error` frame instead of a result, or a payload or event the relay
//! cannot translate: the relay answers by its policy (`--unreachable`, else
//! `HOOKD_RELAY_UNREACHABLE`, else `allow`), always within a bounded time:
//!
//! - `allow`: exit 0, nothing on stdout, one line on stderr saying why; the host goes on as if
//!   no hook were configured.
//! - `deny`: the host's blocking answer with a reason naming hookd. For the events where
//!   blocking would make the agent keep going rather than stop something (Gemini's
//!   `AfterAgent`, Claude's `Stop` and `SubagentStop`), the answer stops the agent instead
//!   (`continue: false`), so a stopped daemon cannot make it loop.

use std::ffi::{OsStr, OsString};
use std::io::{self, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use hookd_core::HookEventName;
use hookd_core::dialect::{self, HostAnswer};
use hookd_core::exec::Dialect;
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

/// The id of the relay's one request.
const REQUEST_ID: u64 = 1;

/// The payload fields every event has; the rest are the event's own input.
const BASE_FIELDS: [&str; 5] = [
    "session_id",
    "transcript_path",
    "cwd",
    "hook_event_name",
    "timestamp",
];

/// What the relay answers when hookd cannot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Unreachable {
    /// Let the host go on, with a warning on stderr (the default).
    #[default]
    Allow,
    /// Give the host's blocking answer, with a reason naming hookd.
    Deny,
}

impl Unreachable {
    /// Parses `allow` or `deny` (any case, surrounding blanks ignored).
    pub fn parse(text: &str) -> Option<Unreachable> {
        match text.trim().to_ascii_lowercase().as_str() {
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
}

/// The usage line, for messages.
pub const USAGE: &str = "hookctl relay EVENT [--dialect gemini|claude] [--unreachable allow|deny] \
                         [--socket PATH]";

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
                            None => problems
                                .push(format!("--dialect must be gemini or claude, not {text:?}")),
                        }
                    }
                }
                "--unreachable" => {
                    if let Some(text) = value("--unreachable") {
                        match Unreachable::parse(&text) {
                            Some(policy) => relay.unreachable = Some(policy),
                            None => problems
                                .push(format!("--unreachable must be allow or deny, not {text:?}")),
                        }
                    }
                }
                "--socket" => relay.socket = value("--socket").map(PathBuf::from),
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

    /// The policy: `--unreachable`, else `HOOKD_RELAY_UNREACHABLE` (when valid), else allow.
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
    /// The event, as the agent CLI names it (BeforeTool, ...; with --dialect claude:
    /// PreToolUse, ...).
    pub event: String,
    /// The agent CLI whose hook this stands in for.
    #[arg(long, default_value = "gemini", value_parser = ["gemini", "claude"])]
    pub dialect: String,
    /// What to answer when hookd cannot be reached or cannot answer: allow (the default: exit
    /// 0, a warning on stderr) or deny (the host's blocking answer) [default:
    /// $HOOKD_RELAY_UNREACHABLE, else allow].
    #[arg(long, value_name = "allow|deny", value_parser = ["allow", "deny"])]
    pub unreachable: Option<String>,
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
        }
    }
}

/// The event in both languages: the host's name, the Gemini event hookd runs, and for
/// Claude Code the stdin object it sent (its tool names shape the answer).
#[derive(Debug, Clone)]
struct Event {
    host_name: String,
    gemini: HookEventName,
    dialect: Dialect,
    claude_input: Map<String, Value>,
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
}

/// Runs one relay invocation: reads stdin, asks the daemon, writes the host's answer.
pub fn run(args: &RelayArgs) -> ExitCode {
    // Room for a typical payload up front: reading starts with large reads, not tiny ones.
    let mut stdin = Vec::with_capacity(64 * 1024);
    let read = io::stdin().lock().read_to_end(&mut stdin);
    let policy = args.policy(std::env::var_os(UNREACHABLE_ENV_VAR).as_deref());
    let answer = match read {
        Ok(_) => relay(args, &stdin, policy),
        Err(err) => fallback_answer(
            args,
            &RelayError::Payload(format!("cannot read the event from stdin: {err}")),
            policy,
            false,
        ),
    };
    emit(&answer)
}

/// Writes the answer and returns its exit code.
fn emit(answer: &HostAnswer) -> ExitCode {
    // A host that stopped reading is gone; nothing better can be done with the error.
    let _ = io::stdout().lock().write_all(answer.stdout.as_bytes());
    let _ = io::stderr().lock().write_all(answer.stderr.as_bytes());
    ExitCode::from(u8::try_from(answer.exit_code).unwrap_or(1))
}

/// The host's answer for one event payload.
pub fn relay(args: &RelayArgs, stdin: &[u8], policy: Unreachable) -> HostAnswer {
    let payload = match parse_payload(stdin) {
        Ok(payload) => payload,
        Err(err) => return fallback_answer(args, &err, policy, false),
    };
    let stop_hook_active = payload.get("stop_hook_active") == Some(&Value::Bool(true));
    match ask_daemon(args, payload) {
        Ok((event, result)) => answer(&event, Some(&result)),
        Err(err) => fallback_answer(args, &err, policy, stop_hook_active),
    }
}

/// Translates the payload, sends it and waits for the result.
fn ask_daemon(
    args: &RelayArgs,
    payload: Map<String, Value>,
) -> Result<(Event, EventResult), RelayError> {
    if let Some(problem) = &args.problem {
        return Err(RelayError::Usage(problem.clone()));
    }
    let (event, input) = translate(args, payload.clone())?;
    let text = |key: &str| {
        payload
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let cwd = match payload.get("cwd").and_then(Value::as_str) {
        Some(cwd) if Path::new(cwd).is_absolute() => cwd.to_owned(),
        _ => std::env::current_dir()
            .map_err(|err| {
                RelayError::Payload(format!("cannot determine the current directory: {err}"))
            })?
            .display()
            .to_string(),
    };
    let mut request = EventRequest::new(REQUEST_ID, event.gemini.as_str(), cwd);
    request.input = input;
    request.session_id = text("session_id");
    request.transcript_path = text("transcript_path");
    request.env = Some(process_env());
    let socket = args
        .socket
        .clone()
        .unwrap_or_else(hookd_protocol::default_socket_path);
    let result = exchange(&socket, request).map_err(|err| match err {
        Exchange::Lost(reason) => RelayError::Unreachable {
            socket: socket.display().to_string(),
            reason,
        },
        Exchange::Refused(message) => RelayError::Refused(message),
    })?;
    Ok((event, result))
}

/// The payload as a JSON object.
fn parse_payload(stdin: &[u8]) -> Result<Map<String, Value>, RelayError> {
    let text = String::from_utf8_lossy(stdin);
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(RelayError::Payload(
            "the event payload on stdin is not a JSON object".to_owned(),
        )),
        Err(err) => Err(RelayError::Payload(format!(
            "the event payload on stdin is not JSON: {err}"
        ))),
    }
}

/// The host's event in Gemini's terms, and the event's own input fields.
fn translate(
    args: &RelayArgs,
    mut payload: Map<String, Value>,
) -> Result<(Event, Map<String, Value>), RelayError> {
    let mut claude_input = Map::new();
    let (gemini, input) = match args.dialect {
        Dialect::Gemini => {
            let gemini = args.event.parse::<HookEventName>().map_err(|_| {
                RelayError::Usage(format!(
                    "{:?} is not a Gemini CLI hook event (use --dialect claude for Claude \
                     Code's events)",
                    args.event
                ))
            })?;
            (gemini, payload)
        }
        Dialect::Claude => {
            if dialect::claude_event_to_gemini(&args.event).is_none() {
                return Err(RelayError::Usage(format!(
                    "{:?} is not a Claude Code hook event hookd can run",
                    args.event
                )));
            }
            // The event named on the command line is the one being answered.
            payload.insert(
                "hook_event_name".to_owned(),
                Value::String(args.event.clone()),
            );
            let translated = dialect::claude_input_to_gemini(&payload).map_err(|err| {
                RelayError::Payload(format!("cannot translate the Claude Code payload: {err}"))
            })?;
            claude_input = payload;
            translated
        }
    };
    // Kept in order (`Map::remove` would swap the last field into the gap).
    let input: Map<String, Value> = input
        .into_iter()
        .filter(|(key, _)| !BASE_FIELDS.contains(&key.as_str()))
        .collect();
    let event = Event {
        host_name: args.event.clone(),
        gemini,
        dialect: args.dialect,
        claude_input,
    };
    Ok((event, input))
}

/// The host's answer for a result (or for a decision the relay makes itself).
fn answer(event: &Event, result: Option<&EventResult>) -> HostAnswer {
    let final_output = result.and_then(|result| result.final_output.as_ref());
    let errors = result.map_or(&[][..], |result| result.errors.as_slice());
    match event.dialect {
        Dialect::Gemini => dialect::answer_for_gemini(event.gemini, final_output, errors),
        Dialect::Claude if event.claude_input.is_empty() => {
            dialect::answer_for_claude(&event.host_name, final_output, errors)
        }
        Dialect::Claude => {
            dialect::answer_for_claude_input(&event.claude_input, final_output, errors)
        }
    }
}

/// The answer when hookd gave none, by policy.
fn fallback_answer(
    args: &RelayArgs,
    error: &RelayError,
    policy: Unreachable,
    stop_hook_active: bool,
) -> HostAnswer {
    let event = known_event(args);
    let allow = |note: &str| HostAnswer {
        stdout: String::new(),
        stderr: format!("hookctl relay: {error}; {note}\n"),
        exit_code: 0,
    };
    if policy == Unreachable::Allow {
        return allow("allowing without hooks");
    }
    let Some(event) = event else {
        // No event to shape a blocking answer for: a non-zero exit that is not 2 is an error
        // both hosts show; 2 blocks where blocking is possible.
        return HostAnswer {
            stdout: String::new(),
            stderr: format!("hookctl relay: {error}; denying (--unreachable deny)\n"),
            exit_code: 2,
        };
    };
    let reason =
        format!("hookd could not decide ({error}); denied by hookctl relay --unreachable deny");
    let keeps_going = matches!(event.gemini, HookEventName::AfterAgent);
    if keeps_going && stop_hook_active {
        // The agent is already continuing because of a stop hook: let it stop.
        return allow("letting the agent stop");
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

/// The event of the arguments, when it is one the dialect knows.
fn known_event(args: &RelayArgs) -> Option<Event> {
    let gemini = match args.dialect {
        Dialect::Gemini => args.event.parse::<HookEventName>().ok()?,
        Dialect::Claude => dialect::claude_event_to_gemini(&args.event)?,
    };
    Some(Event {
        host_name: args.event.clone(),
        gemini,
        dialect: args.dialect,
        claude_input: Map::new(),
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
    /// The daemon could not be reached, was too slow to say hello, or went away.
    Lost(String),
    /// The daemon answered with an error frame.
    Refused(String),
}

impl From<io::Error> for Exchange {
    fn from(err: io::Error) -> Exchange {
        let reason = match err.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => "no answer in time".to_owned(),
            io::ErrorKind::UnexpectedEof => "the connection closed".to_owned(),
            _ => err.to_string(),
        };
        Exchange::Lost(reason)
    }
}

/// Connects, says hello, sends the event and reads frames until its result.
fn exchange(socket: &Path, request: EventRequest) -> Result<EventResult, Exchange> {
    let started = Instant::now();
    let mut stream = connect(socket, started + HELLO_TIMEOUT)?;
    let hello = ClientMessage::Hello(ClientHello::new(
        format!("hookctl-relay/{}", env!("CARGO_PKG_VERSION")),
        None,
    ));
    let event = ClientMessage::Event(request);
    let mut frames = Vec::new();
    push_frame(&mut frames, &hookd_protocol::encode(&hello))?;
    push_frame(&mut frames, &hookd_protocol::encode(&event))?;
    // Until the daemon's hello, every wait is bounded by the hello deadline.
    let remaining = HELLO_TIMEOUT
        .saturating_sub(started.elapsed())
        .max(Duration::from_millis(1));
    stream.set_write_timeout(Some(remaining))?;
    stream.set_read_timeout(Some(remaining))?;
    stream.write_all(&frames)?;
    match read_message(&mut stream)? {
        ServerMessage::Hello(_) => {}
        ServerMessage::Error(error) => return Err(Exchange::Refused(error.message)),
        other => {
            return Err(Exchange::Lost(format!(
                "the daemon answered the hello with {}",
                other.type_name()
            )));
        }
    }
    // The hooks take as long as they take; the host's own timeout bounds the relay.
    stream.set_read_timeout(None)?;
    let id = RequestId::from(REQUEST_ID);
    loop {
        match read_message(&mut stream)? {
            ServerMessage::Result(result) if result.id == id => return Ok(result.result),
            ServerMessage::Error(error) if error.id.as_ref().is_none_or(|got| *got == id) => {
                return Err(Exchange::Refused(format!(
                    "{}: {}",
                    error.code.as_str(),
                    error.message
                )));
            }
            _ => {}
        }
    }
}

/// Connects within `deadline`: a daemon whose backlog is full makes a blocking connect wait,
/// so the socket is non-blocking while connecting and retried until the deadline.
///
/// The socket is checked first (its directory and the socket are the user's own, not
/// symbolic links, and nobody else can write to the directory) and the process that listens
/// on it must run as the user (`SO_PEERCRED`), so that the hello, the environment and the
/// event never reach another user's fake daemon; a failed check is a lost daemon, answered
/// with the unreachable policy and the reason on stderr.
fn connect(socket: &Path, deadline: Instant) -> Result<UnixStream, Exchange> {
    use nix::errno::Errno;
    use nix::sys::socket::{AddressFamily, SockFlag, SockType, UnixAddr};
    let lost = |what: &str, err: Errno| Exchange::Lost(format!("{what}: {}", err.desc()));
    match hookd_protocol::verify_socket_path(socket) {
        Ok(()) => {}
        Err(hookd_protocol::SocketTrustError::Missing { .. }) => {
            return Err(Exchange::Lost("no socket there (is hookd running?)".into()));
        }
        Err(error) => return Err(Exchange::Lost(error.to_string())),
    }
    let fd = nix::sys::socket::socket(
        AddressFamily::Unix,
        SockType::Stream,
        SockFlag::SOCK_CLOEXEC | SockFlag::SOCK_NONBLOCK,
        None,
    )
    .map_err(|err| lost("cannot create a socket", err))?;
    let address = UnixAddr::new(socket).map_err(|err| lost("bad socket path", err))?;
    loop {
        use std::os::fd::AsRawFd;
        match nix::sys::socket::connect(fd.as_raw_fd(), &address) {
            Ok(()) => break,
            Err(Errno::EAGAIN | Errno::EINTR) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(Errno::EAGAIN) => {
                return Err(Exchange::Lost("the daemon is too busy to accept".into()));
            }
            Err(Errno::ENOENT) => {
                return Err(Exchange::Lost("no socket there (is hookd running?)".into()));
            }
            Err(Errno::ECONNREFUSED) => {
                return Err(Exchange::Lost(
                    "connection refused (is hookd running?)".into(),
                ));
            }
            Err(err) => return Err(lost("cannot connect", err)),
        }
    }
    hookd_protocol::verify_peer(&fd).map_err(|error| Exchange::Lost(error.to_string()))?;
    let stream = UnixStream::from(fd);
    stream.set_nonblocking(false)?;
    Ok(stream)
}

/// Appends one frame (length prefix and body) to `out`.
fn push_frame(out: &mut Vec<u8>, body: &[u8]) -> Result<(), Exchange> {
    let length = u32::try_from(body.len())
        .ok()
        .filter(|length| (*length as usize) <= MAX_FRAME_BYTES)
        .ok_or_else(|| {
            Exchange::Lost(format!(
                "the event is too large to send ({} bytes)",
                body.len()
            ))
        })?;
    out.extend_from_slice(&length.to_be_bytes());
    out.extend_from_slice(body);
    Ok(())
}

/// Reads one frame and parses it as a daemon message.
fn read_message(stream: &mut impl Read) -> Result<ServerMessage, Exchange> {
    let mut prefix = [0u8; hookd_protocol::LENGTH_PREFIX_BYTES];
    stream.read_exact(&mut prefix)?;
    let length = u32::from_be_bytes(prefix) as usize;
    if length > MAX_FRAME_BYTES {
        return Err(Exchange::Lost(format!(
            "the daemon sent a frame of {length} bytes, more than {MAX_FRAME_BYTES}"
        )));
    }
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body)?;
    hookd_protocol::parse_server_message(&body).map_err(|err| {
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
                Dialect::Gemini,
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
                Dialect::Claude,
                None,
                Some("/s"),
                false,
            ),
            (
                &["relay", "AfterTool", "--unreachable=deny", "--socket=/t"],
                "AfterTool",
                Dialect::Gemini,
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
                Dialect::Claude,
                Some(Unreachable::Allow),
                None,
                false,
            ),
            (&["relay"], "", Dialect::Gemini, None, None, true),
            (&["relay", "A", "B"], "A", Dialect::Gemini, None, None, true),
            (
                &["relay", "A", "--dialect", "codex"],
                "A",
                Dialect::Gemini,
                None,
                None,
                true,
            ),
            (
                &["relay", "A", "--frobnicate"],
                "A",
                Dialect::Gemini,
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
            (None, None, Unreachable::Allow),
            (None, Some("deny"), Unreachable::Deny),
            (None, Some(" Deny "), Unreachable::Deny),
            (None, Some("block"), Unreachable::Allow),
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
        assert_eq!(event.gemini, HookEventName::BeforeTool);
        let keys: Vec<&str> = input.keys().map(String::as_str).collect();
        assert_eq!(keys, ["tool_name", "tool_input"]);
        assert!(parse_payload(b"[1]").is_err());
        assert!(parse_payload(b"{").is_err());
        assert_eq!(parse_payload(b"  ").expect("empty").len(), 0);
    }

    #[test]
    fn an_unreachable_daemon_is_answered_by_policy_at_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let relay = RelayArgs {
            event: "BeforeTool".to_owned(),
            socket: Some(dir.path().join("none.sock")),
            ..RelayArgs::default()
        };
        let started = Instant::now();
        let allowed = super::relay(&relay, b"{}", Unreachable::Allow);
        assert_eq!(allowed.exit_code, 0);
        assert_eq!(allowed.stdout, "");
        assert!(
            allowed.stderr.contains("not reachable"),
            "{}",
            allowed.stderr
        );
        assert_eq!(allowed.stderr.lines().count(), 1, "{}", allowed.stderr);
        let denied = super::relay(&relay, b"{}", Unreachable::Deny);
        assert!(
            denied.exit_code == 2 || denied.stdout.contains("deny"),
            "{denied:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(2));
    }
}
