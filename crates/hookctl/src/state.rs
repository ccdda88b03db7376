//! `hookctl state get|set|delete|list`: a hook's own session state (`docs/state.md`).
//!
//! It runs inside hooks, once per call, so like the relay it has no async runtime: one
//! blocking connect (the socket and the listening process checked as every client checks
//! them), the `hello` and the `state` request written in one `write`, and two frames read
//! back, every wait bounded by [`TIMEOUT`].
//!
//! The session is `--session`, else `HOOKD_SESSION_ID`, else `GEMINI_SESSION_ID` (hookd sets
//! it for every hook it runs, whatever the hook's dialect). The socket is `--socket`, else
//! found as every client finds it (`HOOKD_SOCKET`, ...): a hook runs with its client's
//! environment, so it finds the daemon its relay found. Writes send the hook's state token
//! (`HOOKD_STATE_TOKEN`, which hookd puts in every hook's environment): the daemon allows them
//! on that token's own session only.
//!
//! Exit codes: 0 done (`get` prints the value exactly as stored, `list` one key a line);
//! 1 the key is not set (`get`, `delete`; nothing printed); 2 a bad request (no session, an
//! invalid key, a bound reached; the reason on stderr); 3 the daemon could not be reached or
//! failed.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use hookd_client::blocking::{self, ConnectError, FrameReader};
use hookd_protocol::{
    ClientHello, ClientMessage, ErrorCode, ServerMessage, StateOp, StateRequest, StateResponse,
};

/// How long connecting, writing and each read may take.
pub const TIMEOUT: Duration = Duration::from_secs(5);

/// The most bytes read from stdin for `set` without a value: more than any value the daemon
/// accepts, so an oversized value gets the daemon's own `limit_reached` answer.
pub const MAX_STDIN_BYTES: u64 = 1024 * 1024;

/// The largest answer frame read back (a `list` of every key at its longest is far less).
const MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;

/// The answer reader's first buffer: most answers fit.
const READ_BUFFER_BYTES: usize = 16 * 1024;

/// The variable naming the session, checked before `GEMINI_SESSION_ID`.
pub const SESSION_ENV_VAR: &str = "HOOKD_SESSION_ID";

/// `hookctl state`.
#[derive(Debug, clap::Args)]
pub struct StateCommand {
    /// The session whose state this is [default: $HOOKD_SESSION_ID, else $GEMINI_SESSION_ID,
    /// which hookd sets for every hook it runs].
    #[arg(long, global = true)]
    pub session: Option<String>,
    /// What to do.
    #[command(subcommand)]
    pub action: StateAction,
}

/// The `hookctl state` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum StateAction {
    /// Print KEY's value (exit 1, printing nothing, when it is not set).
    Get {
        /// The key.
        key: String,
    },
    /// Set KEY to VALUE (read from stdin when VALUE is left out or is `-`).
    Set {
        /// The key.
        key: String,
        /// The value.
        value: Option<String>,
    },
    /// Remove KEY (exit 1 when it was not set).
    Delete {
        /// The key.
        key: String,
    },
    /// Print the session's keys, one a line, sorted.
    List,
}

/// Exit code: the key is not set.
pub const EXIT_NOT_FOUND: u8 = 1;
/// Exit code: the request is wrong (no session, a bad key, a bound reached).
pub const EXIT_BAD_REQUEST: u8 = 2;
/// Exit code: the daemon could not be reached or failed.
pub const EXIT_UNAVAILABLE: u8 = 3;

/// Why a state call did not succeed, with its exit code.
#[derive(Debug)]
pub struct Failure {
    /// The exit code.
    pub code: u8,
    /// What to say on stderr (empty: say nothing).
    pub message: String,
}

fn failure(code: u8, message: impl Into<String>) -> Failure {
    Failure {
        code,
        message: message.into(),
    }
}

/// Runs `hookctl state ...` and returns its exit code.
pub fn run(command: &StateCommand, socket: Option<&Path>) -> ExitCode {
    let stdout = std::io::stdout();
    match execute(command, socket, |name| std::env::var_os(name)) {
        Ok(text) => {
            let mut out = stdout.lock();
            if out
                .write_all(text.as_bytes())
                .and_then(|()| out.flush())
                .is_err()
            {
                return ExitCode::from(EXIT_UNAVAILABLE);
            }
            ExitCode::SUCCESS
        }
        Err(failure) => {
            if !failure.message.is_empty() {
                eprintln!("hookctl state: {}", failure.message);
            }
            ExitCode::from(failure.code)
        }
    }
}

/// Runs one state call and returns what to print.
pub fn execute(
    command: &StateCommand,
    socket: Option<&Path>,
    var: impl Fn(&str) -> Option<OsString>,
) -> Result<String, Failure> {
    let session = command
        .session
        .clone()
        .or_else(|| session_from_env(&var))
        .ok_or_else(|| {
            failure(
                EXIT_BAD_REQUEST,
                "no session: pass --session, or run inside a hook (which has GEMINI_SESSION_ID)",
            )
        })?;
    let socket: PathBuf = socket.map_or_else(
        || hookd_protocol::resolve_socket_path(&var, nix::unistd::getuid().as_raw()),
        Path::to_path_buf,
    );
    let (op, key, value) = match &command.action {
        StateAction::Get { key } => (StateOp::Get, Some(key.clone()), None),
        StateAction::Set { key, value } => {
            let value = match value.as_deref() {
                Some("-") | None => read_stdin()?,
                Some(value) => value.to_owned(),
            };
            (StateOp::Set, Some(key.clone()), Some(value))
        }
        StateAction::Delete { key } => (StateOp::Delete, Some(key.clone()), None),
        StateAction::List => (StateOp::List, None, None),
    };
    // The token hookd gave the hook: writes are allowed on its own session only.
    let token = var(hookd_core::env::STATE_TOKEN_ENV_VAR)
        .and_then(|token| token.into_string().ok())
        .filter(|token| !token.is_empty());
    let request = StateRequest {
        id: 1.into(),
        op,
        session_id: session,
        key,
        value,
        token,
    };
    let response = exchange(&socket, request)?;
    match op {
        StateOp::Get => response.value.ok_or_else(|| failure(EXIT_NOT_FOUND, "")),
        StateOp::Delete if !response.found => Err(failure(EXIT_NOT_FOUND, "")),
        StateOp::Set | StateOp::Delete => Ok(String::new()),
        StateOp::List => Ok(response
            .keys
            .unwrap_or_default()
            .iter()
            .map(|key| format!("{key}\n"))
            .collect()),
    }
}

/// The session named by the environment: `HOOKD_SESSION_ID`, else `GEMINI_SESSION_ID`.
fn session_from_env(var: &impl Fn(&str) -> Option<OsString>) -> Option<String> {
    [SESSION_ENV_VAR, "GEMINI_SESSION_ID"]
        .into_iter()
        .filter_map(|name| var(name)?.into_string().ok())
        .find(|value| !value.is_empty())
}

fn read_stdin() -> Result<String, Failure> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .lock()
        .take(MAX_STDIN_BYTES)
        .read_to_end(&mut bytes)
        .map_err(|err| failure(EXIT_BAD_REQUEST, format!("cannot read stdin: {err}")))?;
    String::from_utf8(bytes).map_err(|_| failure(EXIT_BAD_REQUEST, "the value is not UTF-8"))
}

/// Sends `request` and reads its answer.
pub fn exchange(socket: &Path, request: StateRequest) -> Result<StateResponse, Failure> {
    let unavailable = |what: &str, err: &dyn std::fmt::Display| {
        failure(
            EXIT_UNAVAILABLE,
            format!("{what} {}: {err}", socket.display()),
        )
    };
    // The socket and the listening process are checked as every client checks them.
    let mut stream = blocking::connect(socket, Instant::now() + TIMEOUT).map_err(|err| {
        let what = match err {
            ConnectError::Untrusted(_) => "refusing",
            _ => "cannot connect to",
        };
        unavailable(what, &err)
    })?;
    stream
        .set_read_timeout(Some(TIMEOUT))
        .and_then(|()| stream.set_write_timeout(Some(TIMEOUT)))
        .map_err(|err| unavailable("cannot use", &err))?;
    let hello = ClientMessage::Hello(ClientHello::new(
        concat!("hookctl-state/", env!("CARGO_PKG_VERSION")),
        None,
    ));
    let mut frames = Vec::new();
    for message in [hello, ClientMessage::State(request)] {
        blocking::push_frame(
            &mut frames,
            &hookd_protocol::encode(&message),
            hookd_protocol::DEFAULT_MAX_FRAME_BYTES,
        )
        .map_err(|_| failure(EXIT_BAD_REQUEST, "the request is too large"))?;
    }
    stream
        .write_all(&frames)
        .map_err(|err| unavailable("cannot write to", &err))?;
    let mut reader = FrameReader::new(MAX_ANSWER_BYTES, READ_BUFFER_BYTES);
    loop {
        let body = reader
            .read_frame(&mut stream)
            .map_err(|err| unavailable("no answer from", &err))?;
        let message = hookd_protocol::parse_server_message(body)
            .map_err(|err| unavailable("no answer from", &err))?;
        match message {
            ServerMessage::Hello(_) => {}
            ServerMessage::State(response) => return Ok(response),
            ServerMessage::Error(error) => {
                let code = match error.code {
                    ErrorCode::Internal | ErrorCode::ShuttingDown => EXIT_UNAVAILABLE,
                    _ => EXIT_BAD_REQUEST,
                };
                return Err(failure(
                    code,
                    format!("{}: {}", error.code.as_str(), error.message),
                ));
            }
            other => {
                return Err(failure(
                    EXIT_UNAVAILABLE,
                    format!("the daemon answered with {}", other.type_name()),
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_comes_from_hookd_session_id_then_gemini_session_id() {
        type Case<'a> = (&'a [(&'a str, &'a str)], Option<&'a str>);
        let cases: [Case<'_>; 4] = [
            (&[], None),
            (&[("GEMINI_SESSION_ID", "g")], Some("g")),
            (
                &[("GEMINI_SESSION_ID", "g"), ("HOOKD_SESSION_ID", "h")],
                Some("h"),
            ),
            (
                &[("GEMINI_SESSION_ID", "g"), ("HOOKD_SESSION_ID", "")],
                Some("g"),
            ),
        ];
        for (env, expected) in cases {
            let var = |name: &str| {
                env.iter()
                    .find(|(key, _)| *key == name)
                    .map(|(_, value)| OsString::from(value))
            };
            assert_eq!(session_from_env(&var).as_deref(), expected, "{env:?}");
        }
    }

    #[test]
    fn no_session_is_a_bad_request_and_no_daemon_is_unavailable() {
        let command = StateCommand {
            session: None,
            action: StateAction::List,
        };
        let err = execute(&command, Some(Path::new("/nonexistent/hookd.sock")), |_| {
            None
        })
        .unwrap_err();
        assert_eq!(err.code, EXIT_BAD_REQUEST);
        let command = StateCommand {
            session: Some("s".into()),
            action: StateAction::List,
        };
        let dir = tempfile::tempdir().unwrap();
        let err = execute(&command, Some(&dir.path().join("hookd.sock")), |_| None).unwrap_err();
        assert_eq!(err.code, EXIT_UNAVAILABLE, "{}", err.message);
    }
}
