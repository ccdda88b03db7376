//! What the daemon sends: the handshake answer, results, listings, status and errors.
//!
//! These are wire types, not the engine's domain types: names of events, sources and hook
//! types are plain strings here, and the daemon converts its own types into them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::ErrorCode;
use crate::id::RequestId;

/// Any message the daemon may send.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerMessage {
    /// The answer to the client's `hello`.
    Hello(ServerHello),
    /// One hook of a streaming `event` request finished.
    HookResult(HookResultMessage),
    /// The aggregate of an `event` request; always its last frame.
    Result(ResultMessage),
    /// Acknowledges a `cancel` request.
    Cancelled(CancelledMessage),
    /// The answer to a `list` request.
    List(ListResponse),
    /// The answer to a `status` request.
    Status(StatusResponse),
    /// The answer to a `stats` request.
    Stats(crate::stats::StatsResponse),
    /// The answer to a `ping` request.
    Pong(PongMessage),
    /// A request (or a frame that could not become one) failed.
    Error(ErrorMessage),
    /// Acknowledges a `subscribe` request; `registry_changed` frames follow.
    Subscribed(SubscribedMessage),
    /// A registry was rebuilt (sent to subscribers).
    RegistryChanged(RegistryChangedMessage),
    /// The answer to a `reload` request, once every registry is rebuilt.
    Reloaded(ReloadedMessage),
    /// The answer to `enable`, `disable`, `enable_all`, `disable_all`, `trust` and `untrust`.
    Edited(EditedMessage),
    /// The answer to `trust_preview`: what `trust` would trust.
    TrustPreview(TrustPreviewMessage),
    /// The answer to `trust_list`: the trust store's contents.
    TrustList(TrustListMessage),
    /// A stream is open; `chunk_result` frames follow, one per chunk.
    StreamOpened(StreamOpenedMessage),
    /// The result of one chunk of a stream.
    ChunkResult(ChunkResultMessage),
    /// A stream ended; always its last frame.
    StreamClosed(StreamClosedMessage),
    /// The events with at least one enabled hook for a project.
    HookedEvents(HookedEventsMessage),
    /// The answer to a `state` request.
    State(crate::state::StateResponse),
}

impl ServerMessage {
    /// The `"type"` tag of every server message, in declaration order.
    pub const TYPES: [&'static str; 20] = [
        "hello",
        "hook_result",
        "result",
        "cancelled",
        "list",
        "status",
        "pong",
        "error",
        "subscribed",
        "registry_changed",
        "reloaded",
        "edited",
        "trust_preview",
        "trust_list",
        "stream_opened",
        "chunk_result",
        "stream_closed",
        "hooked_events",
        "stats",
        "state",
    ];

    /// The message's `"type"` tag.
    pub fn type_name(&self) -> &'static str {
        match self {
            ServerMessage::Hello(_) => "hello",
            ServerMessage::HookResult(_) => "hook_result",
            ServerMessage::Result(_) => "result",
            ServerMessage::Cancelled(_) => "cancelled",
            ServerMessage::List(_) => "list",
            ServerMessage::Status(_) => "status",
            ServerMessage::Pong(_) => "pong",
            ServerMessage::Error(_) => "error",
            ServerMessage::Subscribed(_) => "subscribed",
            ServerMessage::RegistryChanged(_) => "registry_changed",
            ServerMessage::Reloaded(_) => "reloaded",
            ServerMessage::Edited(_) => "edited",
            ServerMessage::TrustPreview(_) => "trust_preview",
            ServerMessage::TrustList(_) => "trust_list",
            ServerMessage::StreamOpened(_) => "stream_opened",
            ServerMessage::ChunkResult(_) => "chunk_result",
            ServerMessage::StreamClosed(_) => "stream_closed",
            ServerMessage::HookedEvents(_) => "hooked_events",
            ServerMessage::Stats(_) => "stats",
            ServerMessage::State(_) => "state",
        }
    }

    /// The id of the request this message answers; `None` for `hello` and for errors about
    /// frames that had no readable id.
    pub fn id(&self) -> Option<&RequestId> {
        match self {
            ServerMessage::Hello(_) => None,
            ServerMessage::HookResult(message) => Some(&message.id),
            ServerMessage::Result(message) => Some(&message.id),
            ServerMessage::Cancelled(message) => Some(&message.id),
            ServerMessage::List(message) => Some(&message.id),
            ServerMessage::Status(message) => Some(&message.id),
            ServerMessage::Stats(message) => Some(&message.id),
            ServerMessage::State(message) => Some(&message.id),
            ServerMessage::Pong(message) => Some(&message.id),
            ServerMessage::Error(message) => message.id.as_ref(),
            ServerMessage::Subscribed(message) => Some(&message.id),
            ServerMessage::RegistryChanged(message) => Some(&message.id),
            ServerMessage::Reloaded(message) => Some(&message.id),
            ServerMessage::Edited(message) => Some(&message.id),
            ServerMessage::TrustPreview(message) => Some(&message.id),
            ServerMessage::TrustList(message) => Some(&message.id),
            ServerMessage::StreamOpened(message) => Some(&message.id),
            ServerMessage::ChunkResult(message) => Some(&message.id),
            ServerMessage::StreamClosed(message) => Some(&message.id),
            ServerMessage::HookedEvents(message) => Some(&message.id),
        }
    }

    /// Whether this is the last message for its request id: everything but `hook_result`,
    /// the messages of a subscription (`subscribed`, `registry_changed`), which lasts until
    /// it is cancelled or the connection closes, and the messages of an open stream
    /// (`stream_opened`, `chunk_result`), which lasts until `stream_closed` or an `error`.
    ///
    /// `hooked_events` counts as final: it is the only answer to a request without
    /// `subscribe`. A request with `subscribe` gets any number of them, and only an `error`
    /// ends it; a client knows which of the two it asked for.
    pub fn is_final(&self) -> bool {
        !matches!(
            self,
            ServerMessage::HookResult(_)
                | ServerMessage::Subscribed(_)
                | ServerMessage::RegistryChanged(_)
                | ServerMessage::StreamOpened(_)
                | ServerMessage::ChunkResult(_)
        )
    }
}

/// The daemon's answer to the handshake.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerHello {
    /// The protocol version the daemon speaks.
    pub protocol: u32,
    /// The daemon's name and version, `hookd/<version>`.
    pub server: String,
    /// The daemon's process id.
    pub pid: u32,
    /// The largest frame the daemon accepts and sends, in bytes.
    pub max_frame_bytes: u64,
}

/// One finished hook of a streaming `event` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookResultMessage {
    /// The `event` request's id.
    pub id: RequestId,
    /// The hook's position in the plan (and in the result's `hooks`), from 0. Frames arrive
    /// in completion order, which for parallel hooks is not index order.
    pub index: u64,
    /// What the hook did.
    pub hook: HookRecord,
}

/// The aggregate result of an `event` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultMessage {
    /// The `event` request's id.
    pub id: RequestId,
    /// The aggregate, inlined into the message.
    #[serde(flatten)]
    pub result: EventResult,
    /// The generation of the project's hook registry the event ran against; it grows each
    /// time the daemon reloads that project's settings.
    pub generation: u64,
}

/// The aggregate of one event's hooks, exactly as a hook-running agent consumes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventResult {
    /// `true` when no hook reported an error (`errors` is empty).
    pub success: bool,
    /// The outputs merged by the event's strategy, which the agent acts on; `null` when no
    /// hook produced an output.
    pub final_output: Option<Value>,
    /// The output of every hook that produced one (failed hooks included), in plan order.
    pub all_outputs: Vec<Value>,
    /// The error of every hook that reported one, in plan order.
    pub errors: Vec<String>,
    /// The sum of the hooks' durations in milliseconds, as Gemini CLI computes it (parallel
    /// hooks overlap, so this can exceed the wall-clock time).
    pub total_duration_ms: f64,
    /// One record per hook in plan order.
    pub hooks: Vec<HookRecord>,
}

/// What one hook did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookRecord {
    /// The hook's display name.
    pub name: String,
    /// The layer it came from: `project`, `user`, `system`, `system-defaults`, `extension`.
    pub source: String,
    /// The event that fired.
    pub event: String,
    /// `true` only when the hook exited 0 within its limits.
    pub success: bool,
    /// The exit code as Gemini CLI reports it; `null` when the hook never ran.
    pub exit_code: Option<i32>,
    /// Wall-clock duration in milliseconds.
    pub duration_ms: f64,
    /// The parsed output, or `null`.
    pub output: Option<Value>,
    /// How the output was given, or `null` when there is none.
    pub output_format: Option<OutputFormat>,
    /// Captured stdout.
    pub stdout: String,
    /// Captured stderr.
    pub stderr: String,
    /// The error message for failures, or `null`.
    pub error: Option<String>,
    /// How the run ended.
    pub outcome: Outcome,
    /// Which way the hook failed, for its failure policy: `spawn_failed`,
    /// `refused`, `timed_out`, `signalled`, `output_too_large` or `exited_without_decision`;
    /// `null` when it did not fail or was cancelled. A string rather than an enum so that a
    /// kind added later does not make older clients reject the whole record; absent in
    /// records from daemons that predate it, which reads as `null`.
    #[serde(default)]
    pub failure: Option<String>,
    /// A note for the user that is not an error: the first run of an untrusted project hook
    /// under the `warn` trust policy says so here (hookd's project-hook trust). Absent when there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

/// How a hook's output was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputFormat {
    /// A JSON value printed on stdout.
    Json,
    /// Plain text, turned into an output by the exit-code rules.
    Text,
}

/// Which captured stream an outcome is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StreamName {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// How a hook run ended, tagged by `"kind"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Outcome {
    /// The process exited by itself.
    Exited {
        /// The exit code.
        code: i32,
    },
    /// The process was killed by a signal hookd did not send.
    Signalled {
        /// The signal number.
        signal: i32,
    },
    /// The hook outlived its timeout and its process group was terminated.
    TimedOut {
        /// The timeout that expired, in milliseconds.
        timeout_ms: u64,
    },
    /// A captured stream exceeded its cap.
    OutputTooLarge {
        /// The stream that overflowed.
        stream: StreamName,
        /// The cap in bytes.
        cap_bytes: u64,
        /// The exit code, or `null` if the process was signalled.
        code: Option<i32>,
    },
    /// The process could not be started.
    SpawnFailed {
        /// Why, as the operating system said it.
        message: String,
    },
    /// The run was cancelled (cancel request, client gone, shutdown).
    Cancelled,
    /// hookd refused to run the hook (for example an untrusted project hook).
    Refused {
        /// Why.
        message: String,
    },
}

impl Outcome {
    /// The outcome's `"kind"` tag.
    pub fn kind(&self) -> &'static str {
        match self {
            Outcome::Exited { .. } => "exited",
            Outcome::Signalled { .. } => "signalled",
            Outcome::TimedOut { .. } => "timed_out",
            Outcome::OutputTooLarge { .. } => "output_too_large",
            Outcome::SpawnFailed { .. } => "spawn_failed",
            Outcome::Cancelled => "cancelled",
            Outcome::Refused { .. } => "refused",
        }
    }
}

/// Acknowledges a `cancel` request. The target's own `result` still follows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CancelledMessage {
    /// The `cancel` request's id.
    pub id: RequestId,
    /// The id of the cancelled `event` request.
    pub target: RequestId,
}

/// The hooks configured for a project directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListResponse {
    /// The `list` request's id.
    pub id: RequestId,
    /// The project directory, as requested.
    pub cwd: String,
    /// Whether hooks are enabled at all for this project.
    pub hooks_enabled: bool,
    /// The registry generation the listing comes from.
    pub generation: u64,
    /// Every configured hook, in precedence order.
    pub hooks: Vec<ListedHook>,
    /// Problems found while reading the settings.
    pub diagnostics: Vec<Diagnostic>,
}

/// One configured hook, as `list` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListedHook {
    /// The event it is registered for.
    pub event: String,
    /// Its display name.
    pub name: String,
    /// Whether it will run (not disabled).
    pub enabled: bool,
    /// The layer it came from.
    pub source: String,
    /// The settings file it came from, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The extension it came from, for extension hooks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extension: Option<String>,
    /// The definition's matcher, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matcher: Option<String>,
    /// Whether its definition runs its hooks one after another.
    pub sequential: bool,
    /// The effective timeout in milliseconds.
    pub timeout_ms: u64,
    /// The hook's description, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The command line, for command hooks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The hook type: `command`, `plugin` or `runtime`.
    #[serde(rename = "type")]
    pub hook_type: String,
    /// How its latest run went, if it ran since the daemon started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_run: Option<LastRun>,
    /// `true` for a project hook that is not trusted (hookd's project-hook trust): under the `require`
    /// policy it does not run. Absent (false) for every other hook.
    #[serde(default, skip_serializing_if = "is_false")]
    pub untrusted: bool,
    /// `true` for an async hook (`"async": true`): it runs in the background, outside the
    /// event's decision. Absent (false) for every other hook.
    #[serde(default, skip_serializing_if = "is_false", rename = "async")]
    pub is_async: bool,
    /// Set while the circuit breaker has paused the hook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused: Option<crate::PausedHook>,
    /// The managed hooks file whose copy of this hook (the same identity, for the same event)
    /// runs in its place; absent for every hook no managed hook outranks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outranked_by: Option<String>,
}

fn is_false(flag: &bool) -> bool {
    !*flag
}

/// How a hook's latest run went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LastRun {
    /// `true` when the hook exited 0 within its limits.
    pub success: bool,
    /// The outcome's kind, as in [`Outcome::kind`] (`exited`, `timed_out`, ...).
    pub outcome: String,
    /// How long it ran, in milliseconds.
    pub duration_ms: f64,
    /// When it finished, in milliseconds since the Unix epoch.
    pub finished_at_ms: u64,
    /// Its error message, for failures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A problem found while reading settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnostic {
    /// How bad it is.
    pub severity: Severity,
    /// The file it is in, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The settings key it is about, if any (such as `hooks.BeforeTool[0].matcher`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The 1-based line, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// The 1-based column, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
    /// What is wrong.
    pub message: String,
}

/// How bad a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Something was skipped entirely, such as a whole file.
    Error,
    /// Part of a file was ignored; the rest is used.
    Warning,
    /// Worth knowing, but nothing is wrong with the configuration.
    Info,
}

/// The daemon's state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatusResponse {
    /// The `status` request's id.
    pub id: RequestId,
    /// The daemon's version.
    pub version: String,
    /// The daemon's process id.
    pub pid: u32,
    /// Time since the daemon started, in milliseconds.
    pub uptime_ms: u64,
    /// Open client connections.
    pub connections: u64,
    /// The most connections served at once; more wait in the listen backlog. `0` from daemons
    /// that predate the field.
    #[serde(default)]
    pub max_connections: u64,
    /// Hook processes running now.
    pub hooks_running: u64,
    /// Hooks waiting for a slot.
    pub hooks_queued: u64,
    /// The most hook processes that run at once.
    pub max_hooks: u64,
    /// The most event runs in flight on one connection before the daemon pauses reading it.
    /// `0` from daemons that predate the field.
    #[serde(default)]
    pub max_inflight_per_connection: u64,
    /// Event requests answered since start.
    pub events_served: u64,
    /// One entry per project directory the daemon has loaded.
    pub registries: Vec<RegistryStatus>,
    /// The audit log's state, or `None` when the daemon keeps none (or predates it).
    #[serde(default)]
    pub audit: Option<AuditStatus>,
    /// The clients connected now, by the name each gave in its hello (empty from daemons
    /// that predate the field).
    #[serde(default)]
    pub clients: Vec<ConnectedClient>,
    /// What an untrusted project hook does (`hookd --project-hooks`): `warn` or `require`;
    /// `None` from daemons that predate the field.
    #[serde(default)]
    pub project_hooks: Option<String>,
    /// Background runs (async hooks, detached events); `None` from daemons that predate it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background: Option<crate::BackgroundStatus>,
    /// The circuit breaker and the hooks it has paused; `None` from daemons that predate it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breaker: Option<crate::BreakerStatus>,
    /// The loopback HTTP listener (`hookd --http`); `None` when it is off (or the daemon
    /// predates it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpStatus>,
    /// The managed hooks file; `None` from daemons that predate it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub managed: Option<Box<crate::ManagedStatus>>,
    /// The OpenTelemetry export; `None` when it is off (or the daemon predates it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<Box<crate::TelemetryStatus>>,
}

/// The loopback HTTP listener in `status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpStatus {
    /// The address it listens on, e.g. `127.0.0.1:47411`.
    pub address: String,
    /// HTTP connections open now.
    pub connections: u64,
    /// The most HTTP connections held at once; past it the longest idle one is closed.
    pub max_connections: u64,
    /// Hook requests answered with a decision since start.
    pub requests: u64,
    /// Sessions whose project root the daemon knows from their relayed events.
    pub sessions: u64,
    /// Requests and connections refused since start, by reason (`secret`, `host`, `origin`,
    /// `method`, `path`, `too_large`, `no_length`, `slow_body`, `bad_body`, `evicted`,
    /// `idle`, `peer`), reasons with none left out.
    pub refused: std::collections::BTreeMap<String, u64>,
}

/// The clients of one name connected now, in `status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectedClient {
    /// The name the client gave in its hello (`hookctl/0.1.0`, `hookctl-relay/0.1.0`, ...).
    pub name: String,
    /// Its connections open now.
    pub connections: u64,
}

/// The audit log's state, in `status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditStatus {
    /// The log file.
    pub path: String,
    /// Lines written since the daemon started.
    pub lines_written: u64,
    /// Lines dropped because the writer's queue was full (the disk was slower than events).
    pub lines_dropped: u64,
    /// Lines lost because the file could not be written.
    pub write_errors: u64,
}

/// One loaded project's hook registry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegistryStatus {
    /// The project directory.
    pub cwd: String,
    /// The registry generation.
    pub generation: u64,
    /// How many hooks it holds.
    pub hooks: u64,
    /// Problems found while reading its settings.
    pub diagnostics: Vec<Diagnostic>,
}

/// Acknowledges a `subscribe` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubscribedMessage {
    /// The `subscribe` request's id.
    pub id: RequestId,
    /// The project directory the subscription is limited to, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

/// A project's registry was rebuilt and differs from the one before.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegistryChangedMessage {
    /// The `subscribe` request's id.
    pub id: RequestId,
    /// The project directory.
    pub cwd: String,
    /// The new registry's generation.
    pub generation: u64,
    /// Whether hooks are enabled at all for this project.
    pub hooks_enabled: bool,
    /// How many hooks the new registry holds.
    pub hooks: u64,
    /// The layers whose files changed: `project`, `user`, `system`, `system-defaults`,
    /// `extension`; empty when only something else changed (such as folder trust).
    pub layers: Vec<String>,
    /// The files whose contents changed, appeared or disappeared.
    pub files: Vec<String>,
    /// Every problem the new registry has, as `list` reports them.
    pub diagnostics: Vec<Diagnostic>,
    /// How many frames this subscription lost before this one because the client did not
    /// read them fast enough.
    pub missed: u64,
}

/// The answer to a `reload` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReloadedMessage {
    /// The `reload` request's id.
    pub id: RequestId,
    /// Every loaded registry after the reload.
    pub registries: Vec<RegistryStatus>,
}

/// The answer to a request that edits settings files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EditedMessage {
    /// The request's id.
    pub id: RequestId,
    /// Whether any file was written.
    pub changed: bool,
    /// What happened, as a sentence for the user.
    pub message: String,
    /// The files written.
    pub files: Vec<String>,
    /// The generation of the project's registry once the edit is in force.
    pub generation: u64,
}

/// One script file of a trusted hook, with the SHA-256 of its contents.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrustedScript {
    /// The file, relative to the project directory, with `/` separators.
    pub path: String,
    /// The SHA-256 of its contents as 64 lower-case hex digits.
    pub sha256: String,
}

/// What trusting one project hook covers: its name, its command and its scripts' contents.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrustedHook {
    /// The event the hook is registered for; only in `trust_preview` answers (the trust store
    /// does not record it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    /// The hook's `name`, `""` when it has none.
    pub name: String,
    /// The hook's command line.
    pub command: String,
    /// The hook's other keys that change what runs (its `env`, ...), when it has any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<serde_json::Value>,
    /// The project files the command runs or may load, each with its contents' SHA-256.
    #[serde(default)]
    pub scripts: Vec<TrustedScript>,
    /// What the command may run that cannot be verified; such a hook is only trusted with
    /// `anyway`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub uncovered: Vec<String>,
}

/// What `trust` would trust for a project.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrustPreviewMessage {
    /// The request's id.
    pub id: RequestId,
    /// The project directory, as requested.
    pub cwd: String,
    /// The daemon's policy for untrusted project hooks: `warn` or `require`.
    pub policy: String,
    /// Whether the folder is trusted at all (folder trust, as Gemini CLI decides it); in an
    /// untrusted folder no project hook is loaded, so there is nothing to trust.
    pub folder_trusted: bool,
    /// The project hooks that are not trusted, in registry order, each once.
    pub untrusted: Vec<TrustedHook>,
    /// How many project hooks are trusted already.
    pub trusted: u64,
    /// The trust store file.
    pub file: String,
    /// The generation of the registry the preview was made from.
    pub generation: u64,
}

/// The trust store's contents.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrustListMessage {
    /// The request's id.
    pub id: RequestId,
    /// The trust store file.
    pub file: String,
    /// Every project with trusted hooks (only the requested one when the request named a
    /// `cwd`), ordered by directory.
    pub projects: Vec<TrustedProject>,
}

/// The trusted hooks of one project directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrustedProject {
    /// The project directory.
    pub cwd: String,
    /// Its trusted hooks.
    pub hooks: Vec<TrustedHook>,
}

/// The answer to `ping`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PongMessage {
    /// The `ping` request's id.
    pub id: RequestId,
}

/// A stream is open (the answer to `stream_open`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamOpenedMessage {
    /// The stream's id.
    pub id: RequestId,
    /// How many hooks run on each chunk (builtin filters included); `0`: none, every chunk is
    /// answered at once and unchanged.
    pub hooks: u64,
    /// The generation of the project's hook registry the stream is pinned to for its life.
    pub generation: u64,
}

/// The result of one chunk of a stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChunkResultMessage {
    /// The stream's id.
    pub id: RequestId,
    /// The chunk's `seq`, as the client sent it.
    pub seq: u64,
    /// The text to emit in place of the chunk's text, when the hooks (or filters) changed it;
    /// absent when the chunk's text stands as it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// The aggregate of the chunk's hooks, exactly as an `event` request's `result` has it.
    pub result: EventResult,
}

impl ChunkResultMessage {
    /// The text to emit for a chunk whose own text is `original`: the replacement if there is
    /// one, else the original.
    pub fn emitted<'a>(&'a self, original: &'a str) -> &'a str {
        self.content.as_deref().unwrap_or(original)
    }
}

/// A stream ended: the answer to `stream_close`, or the daemon's own when the stream was
/// cancelled or the daemon is stopping.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamClosedMessage {
    /// The stream's id.
    pub id: RequestId,
    /// How many chunks the stream answered.
    pub chunks: u64,
    /// Text the stream's filters held back (a possible secret's beginning at a chunk's end)
    /// and release at the end: emit it after the last chunk. `""` when there is none.
    pub flush: String,
}

/// The events with at least one enabled hook for a project directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookedEventsMessage {
    /// The request's id.
    pub id: RequestId,
    /// The project directory, as requested.
    pub cwd: String,
    /// The events, in the protocol's event order; an event not listed has no hook, and its
    /// `event` requests would be answered at once with an empty result.
    pub events: Vec<String>,
    /// The generation of the project's registry this answer describes.
    pub generation: u64,
}

/// A failed request, or a frame that could not be read as one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorMessage {
    /// The failed request's id, or `null` when the frame had no readable id.
    pub id: Option<RequestId>,
    /// What kind of failure.
    pub code: ErrorCode,
    /// A human-readable description naming the problem.
    pub message: String,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::encode::{encode, parse_server_message};

    /// Encodes `message`, compares the frame body with `expected` byte for byte, and parses
    /// it back.
    fn check(message: ServerMessage, expected: &str) {
        let body = encode(&message);
        assert_eq!(std::str::from_utf8(&body).unwrap(), expected);
        assert_eq!(parse_server_message(&body).unwrap(), message);
    }

    fn exited_hook() -> HookRecord {
        HookRecord {
            name: "guard".to_owned(),
            source: "project".to_owned(),
            event: "BeforeTool".to_owned(),
            success: true,
            exit_code: Some(0),
            duration_ms: 12.5,
            output: Some(json!({"decision": "allow"})),
            output_format: Some(OutputFormat::Json),
            stdout: "{\"decision\":\"allow\"}".to_owned(),
            stderr: String::new(),
            error: None,
            outcome: Outcome::Exited { code: 0 },
            failure: None,
            warning: None,
        }
    }

    const EXITED_HOOK: &str = r#"{"name":"guard","source":"project","event":"BeforeTool","success":true,"exit_code":0,"duration_ms":12.5,"output":{"decision":"allow"},"output_format":"json","stdout":"{\"decision\":\"allow\"}","stderr":"","error":null,"outcome":{"kind":"exited","code":0},"failure":null}"#;

    #[test]
    fn trust_messages_round_trip() {
        let hook = TrustedHook {
            event: Some("BeforeTool".to_owned()),
            name: "guard".to_owned(),
            command: "./g.sh".to_owned(),
            settings: None,
            scripts: vec![TrustedScript {
                path: "g.sh".to_owned(),
                sha256: "ab".repeat(32),
            }],
            uncovered: Vec::new(),
        };
        let sha = "ab".repeat(32);
        check(
            ServerMessage::TrustPreview(TrustPreviewMessage {
                id: 1.into(),
                cwd: "/p".to_owned(),
                policy: "require".to_owned(),
                folder_trusted: true,
                untrusted: vec![hook.clone()],
                trusted: 2,
                file: "/h/.config/hookd/trusted-hooks.json".to_owned(),
                generation: 4,
            }),
            &format!(
                r#"{{"type":"trust_preview","id":1,"cwd":"/p","policy":"require","folder_trusted":true,"untrusted":[{{"event":"BeforeTool","name":"guard","command":"./g.sh","scripts":[{{"path":"g.sh","sha256":"{sha}"}}]}}],"trusted":2,"file":"/h/.config/hookd/trusted-hooks.json","generation":4}}"#
            ),
        );
        check(
            ServerMessage::TrustList(TrustListMessage {
                id: 2.into(),
                file: "/t.json".to_owned(),
                projects: vec![TrustedProject {
                    cwd: "/p".to_owned(),
                    hooks: vec![TrustedHook {
                        event: None,
                        scripts: Vec::new(),
                        ..hook
                    }],
                }],
            }),
            r#"{"type":"trust_list","id":2,"file":"/t.json","projects":[{"cwd":"/p","hooks":[{"name":"guard","command":"./g.sh","scripts":[]}]}]}"#,
        );
        let mut warned = exited_hook();
        warned.warning = Some("untrusted".to_owned());
        check(
            ServerMessage::HookResult(HookResultMessage {
                id: 3.into(),
                index: 0,
                hook: warned,
            }),
            &format!(
                r#"{{"type":"hook_result","id":3,"index":0,"hook":{},"warning":"untrusted"}}}}"#,
                &EXITED_HOOK[..EXITED_HOOK.len() - 1]
            ),
        );
    }

    #[test]
    fn every_variant_round_trips() {
        check(
            ServerMessage::Hello(ServerHello {
                protocol: 1,
                server: "hookd/0.1.0".to_owned(),
                pid: 4242,
                max_frame_bytes: 67_108_864,
            }),
            r#"{"type":"hello","protocol":1,"server":"hookd/0.1.0","pid":4242,"max_frame_bytes":67108864}"#,
        );
        check(
            ServerMessage::HookResult(HookResultMessage {
                id: 1.into(),
                index: 0,
                hook: exited_hook(),
            }),
            &format!(r#"{{"type":"hook_result","id":1,"index":0,"hook":{EXITED_HOOK}}}"#),
        );
        check(
            ServerMessage::Result(ResultMessage {
                id: "e1".into(),
                result: EventResult {
                    success: true,
                    final_output: Some(json!({"decision": "allow"})),
                    all_outputs: vec![json!({"decision": "allow"})],
                    errors: vec![],
                    total_duration_ms: 13.0,
                    hooks: vec![exited_hook()],
                },
                generation: 3,
            }),
            &format!(
                r#"{{"type":"result","id":"e1","success":true,"final_output":{{"decision":"allow"}},"all_outputs":[{{"decision":"allow"}}],"errors":[],"total_duration_ms":13.0,"hooks":[{EXITED_HOOK}],"generation":3}}"#
            ),
        );
        check(
            ServerMessage::Result(ResultMessage {
                id: 2.into(),
                result: EventResult {
                    success: true,
                    final_output: None,
                    all_outputs: vec![],
                    errors: vec![],
                    total_duration_ms: 0.0,
                    hooks: vec![],
                },
                generation: 0,
            }),
            r#"{"type":"result","id":2,"success":true,"final_output":null,"all_outputs":[],"errors":[],"total_duration_ms":0.0,"hooks":[],"generation":0}"#,
        );
        check(
            ServerMessage::Cancelled(CancelledMessage {
                id: 5.into(),
                target: 1.into(),
            }),
            r#"{"type":"cancelled","id":5,"target":1}"#,
        );
        check(
            ServerMessage::List(ListResponse {
                id: 6.into(),
                cwd: "/p".to_owned(),
                hooks_enabled: true,
                generation: 2,
                hooks: vec![
                    ListedHook {
                        event: "BeforeTool".to_owned(),
                        name: "guard".to_owned(),
                        enabled: true,
                        source: "project".to_owned(),
                        path: Some("/p/.gemini/settings.json".to_owned()),
                        extension: None,
                        matcher: Some("run_shell_command".to_owned()),
                        sequential: false,
                        timeout_ms: 60_000,
                        description: Some("blocks rm".to_owned()),
                        command: Some("./guard.sh".to_owned()),
                        hook_type: "command".to_owned(),
                        last_run: Some(LastRun {
                            success: false,
                            outcome: "timed_out".to_owned(),
                            duration_ms: 5.5,
                            finished_at_ms: 1_700_000_000_000,
                            error: Some("Hook timed out after 5ms".to_owned()),
                        }),
                        untrusted: true,
                        is_async: false,
                        paused: None,
                        outranked_by: None,
                    },
                    ListedHook {
                        event: "SessionStart".to_owned(),
                        name: "hello".to_owned(),
                        enabled: false,
                        source: "extension".to_owned(),
                        path: None,
                        extension: Some("greeter".to_owned()),
                        matcher: None,
                        sequential: true,
                        timeout_ms: 5_000,
                        description: None,
                        command: None,
                        hook_type: "runtime".to_owned(),
                        last_run: None,
                        untrusted: false,
                        is_async: false,
                        paused: None,
                        outranked_by: None,
                    },
                ],
                diagnostics: vec![
                    Diagnostic {
                        severity: Severity::Error,
                        path: Some("/p/.gemini/settings.json".to_owned()),
                        key: None,
                        line: Some(3),
                        column: Some(7),
                        message: "expected `,`".to_owned(),
                    },
                    Diagnostic {
                        severity: Severity::Warning,
                        path: None,
                        key: Some("hooks.BeforeTool[0].matcher".to_owned()),
                        line: None,
                        column: None,
                        message: "unused matcher".to_owned(),
                    },
                ],
            }),
            concat!(
                r#"{"type":"list","id":6,"cwd":"/p","hooks_enabled":true,"generation":2,"hooks":["#,
                r#"{"event":"BeforeTool","name":"guard","enabled":true,"source":"project","path":"/p/.gemini/settings.json","matcher":"run_shell_command","sequential":false,"timeout_ms":60000,"description":"blocks rm","command":"./guard.sh","type":"command","last_run":{"success":false,"outcome":"timed_out","duration_ms":5.5,"finished_at_ms":1700000000000,"error":"Hook timed out after 5ms"},"untrusted":true},"#,
                r#"{"event":"SessionStart","name":"hello","enabled":false,"source":"extension","extension":"greeter","sequential":true,"timeout_ms":5000,"type":"runtime"}],"#,
                r#""diagnostics":[{"severity":"error","path":"/p/.gemini/settings.json","line":3,"column":7,"message":"expected `,`"},"#,
                r#"{"severity":"warning","key":"hooks.BeforeTool[0].matcher","message":"unused matcher"}]}"#,
            ),
        );
        check(
            ServerMessage::Status(StatusResponse {
                id: 7.into(),
                version: "0.1.0".to_owned(),
                pid: 4242,
                uptime_ms: 1500,
                connections: 2,
                max_connections: 1024,
                hooks_running: 1,
                hooks_queued: 0,
                max_hooks: 16,
                max_inflight_per_connection: 1024,
                events_served: 40,
                registries: vec![RegistryStatus {
                    cwd: "/p".to_owned(),
                    generation: 2,
                    hooks: 3,
                    diagnostics: vec![],
                }],
                audit: Some(AuditStatus {
                    path: "/var/log/hookd.log".to_owned(),
                    lines_written: 39,
                    lines_dropped: 1,
                    write_errors: 0,
                }),
                clients: vec![ConnectedClient {
                    name: "hookctl/0.1.0".to_owned(),
                    connections: 1,
                }],
                project_hooks: Some("warn".to_owned()),
                background: None,
                breaker: None,
                http: None,
                managed: None,
                telemetry: None,
            }),
            concat!(
                r#"{"type":"status","id":7,"version":"0.1.0","pid":4242,"uptime_ms":1500,"connections":2,"max_connections":1024,"#,
                r#""hooks_running":1,"hooks_queued":0,"max_hooks":16,"max_inflight_per_connection":1024,"events_served":40,"#,
                r#""registries":[{"cwd":"/p","generation":2,"hooks":3,"diagnostics":[]}],"#,
                r#""audit":{"path":"/var/log/hookd.log","lines_written":39,"lines_dropped":1,"write_errors":0},"#,
                r#""clients":[{"name":"hookctl/0.1.0","connections":1}],"project_hooks":"warn"}"#,
            ),
        );
        check(
            ServerMessage::Pong(PongMessage { id: 8.into() }),
            r#"{"type":"pong","id":8}"#,
        );
        check(
            ServerMessage::Error(ErrorMessage {
                id: Some(9.into()),
                code: ErrorCode::UnknownEvent,
                message: "unknown event \"Nope\"".to_owned(),
            }),
            r#"{"type":"error","id":9,"code":"unknown_event","message":"unknown event \"Nope\""}"#,
        );
        check(
            ServerMessage::Error(ErrorMessage {
                id: None,
                code: ErrorCode::BadJson,
                message: "x".to_owned(),
            }),
            r#"{"type":"error","id":null,"code":"bad_json","message":"x"}"#,
        );
        check(
            ServerMessage::Subscribed(SubscribedMessage {
                id: 10.into(),
                cwd: Some("/p".to_owned()),
            }),
            r#"{"type":"subscribed","id":10,"cwd":"/p"}"#,
        );
        check(
            ServerMessage::RegistryChanged(RegistryChangedMessage {
                id: 10.into(),
                cwd: "/p".to_owned(),
                generation: 4,
                hooks_enabled: true,
                hooks: 2,
                layers: vec!["project".to_owned()],
                files: vec!["/p/.gemini/settings.json".to_owned()],
                diagnostics: vec![],
                missed: 0,
            }),
            r#"{"type":"registry_changed","id":10,"cwd":"/p","generation":4,"hooks_enabled":true,"hooks":2,"layers":["project"],"files":["/p/.gemini/settings.json"],"diagnostics":[],"missed":0}"#,
        );
        check(
            ServerMessage::Reloaded(ReloadedMessage {
                id: 11.into(),
                registries: vec![],
            }),
            r#"{"type":"reloaded","id":11,"registries":[]}"#,
        );
        check(
            ServerMessage::Edited(EditedMessage {
                id: 12.into(),
                changed: false,
                message: "Hook \"x\" is already enabled.".to_owned(),
                files: vec![],
                generation: 3,
            }),
            r#"{"type":"edited","id":12,"changed":false,"message":"Hook \"x\" is already enabled.","files":[],"generation":3}"#,
        );
    }

    #[test]
    fn stream_messages_round_trip() {
        check(
            ServerMessage::StreamOpened(StreamOpenedMessage {
                id: 7.into(),
                hooks: 2,
                generation: 3,
            }),
            r#"{"type":"stream_opened","id":7,"hooks":2,"generation":3}"#,
        );
        let empty = EventResult {
            success: true,
            final_output: None,
            all_outputs: vec![],
            errors: vec![],
            total_duration_ms: 0.0,
            hooks: vec![],
        };
        check(
            ServerMessage::ChunkResult(ChunkResultMessage {
                id: 7.into(),
                seq: 4,
                content: None,
                result: empty.clone(),
            }),
            r#"{"type":"chunk_result","id":7,"seq":4,"result":{"success":true,"final_output":null,"all_outputs":[],"errors":[],"total_duration_ms":0.0,"hooks":[]}}"#,
        );
        let replaced = ChunkResultMessage {
            id: "s".into(),
            seq: 5,
            content: Some("[redacted]".to_owned()),
            result: empty,
        };
        assert_eq!(replaced.emitted("secret"), "[redacted]");
        check(
            ServerMessage::ChunkResult(replaced),
            r#"{"type":"chunk_result","id":"s","seq":5,"content":"[redacted]","result":{"success":true,"final_output":null,"all_outputs":[],"errors":[],"total_duration_ms":0.0,"hooks":[]}}"#,
        );
        check(
            ServerMessage::StreamClosed(StreamClosedMessage {
                id: 7.into(),
                chunks: 5,
                flush: "tail".to_owned(),
            }),
            r#"{"type":"stream_closed","id":7,"chunks":5,"flush":"tail"}"#,
        );
        check(
            ServerMessage::HookedEvents(HookedEventsMessage {
                id: 8.into(),
                cwd: "/p".to_owned(),
                events: vec!["BeforeTool".to_owned(), "AfterModel".to_owned()],
                generation: 4,
            }),
            r#"{"type":"hooked_events","id":8,"cwd":"/p","events":["BeforeTool","AfterModel"],"generation":4}"#,
        );
    }

    #[test]
    fn stream_finality() {
        let opened = ServerMessage::StreamOpened(StreamOpenedMessage {
            id: 1.into(),
            hooks: 0,
            generation: 1,
        });
        assert!(!opened.is_final());
        let closed = ServerMessage::StreamClosed(StreamClosedMessage {
            id: 1.into(),
            chunks: 0,
            flush: String::new(),
        });
        assert!(closed.is_final());
        assert_eq!(closed.id(), Some(&RequestId::Number(1)));
    }

    /// Each outcome kind as it appears in a hook record.
    fn check_outcome(outcome: Outcome, expected: &str) {
        let json = serde_json::to_string(&outcome).unwrap();
        assert_eq!(json, expected);
        assert!(json.contains(&format!(r#""kind":"{}""#, outcome.kind())));
        assert_eq!(serde_json::from_str::<Outcome>(&json).unwrap(), outcome);
    }

    #[test]
    fn every_outcome_round_trips() {
        check_outcome(Outcome::Exited { code: 2 }, r#"{"kind":"exited","code":2}"#);
        check_outcome(
            Outcome::Signalled { signal: 9 },
            r#"{"kind":"signalled","signal":9}"#,
        );
        check_outcome(
            Outcome::TimedOut { timeout_ms: 60000 },
            r#"{"kind":"timed_out","timeout_ms":60000}"#,
        );
        check_outcome(
            Outcome::OutputTooLarge {
                stream: StreamName::Stderr,
                cap_bytes: 1_048_576,
                code: None,
            },
            r#"{"kind":"output_too_large","stream":"stderr","cap_bytes":1048576,"code":null}"#,
        );
        check_outcome(
            Outcome::SpawnFailed {
                message: "No such file or directory".to_owned(),
            },
            r#"{"kind":"spawn_failed","message":"No such file or directory"}"#,
        );
        check_outcome(Outcome::Cancelled, r#"{"kind":"cancelled"}"#);
        check_outcome(
            Outcome::Refused {
                message: "untrusted project hook".to_owned(),
            },
            r#"{"kind":"refused","message":"untrusted project hook"}"#,
        );
    }

    #[test]
    fn failure_is_optional_on_the_wire() {
        // (record as sent, failure it reads as, how it is written back)
        let without = EXITED_HOOK.replace(r#","failure":null"#, "");
        let timed_out = EXITED_HOOK.replace(r#""failure":null"#, r#""failure":"timed_out""#);
        let cases = [
            (without.as_str(), None, EXITED_HOOK),
            (EXITED_HOOK, None, EXITED_HOOK),
            (timed_out.as_str(), Some("timed_out"), timed_out.as_str()),
        ];
        for (sent, failure, written) in cases {
            let record: HookRecord = serde_json::from_str(sent).unwrap();
            assert_eq!(record.failure.as_deref(), failure, "{sent}");
            assert_eq!(serde_json::to_string(&record).unwrap(), written);
        }
    }

    #[test]
    fn status_fields_added_later_are_optional_on_the_wire() {
        // A status from a daemon that predates the limits and the audit log.
        let older = r#"{"type":"status","id":1,"version":"0.1.0","pid":1,"uptime_ms":0,"connections":0,"hooks_running":0,"hooks_queued":0,"max_hooks":32,"events_served":0,"registries":[]}"#;
        let ServerMessage::Status(status) = parse_server_message(older.as_bytes()).unwrap() else {
            panic!("not a status");
        };
        assert_eq!(
            (
                status.max_connections,
                status.max_inflight_per_connection,
                status.audit
            ),
            (0, 0, None)
        );
    }

    #[test]
    fn event_result_alone_has_exactly_six_keys() {
        let result = EventResult {
            success: false,
            final_output: None,
            all_outputs: vec![],
            errors: vec!["Hook timed out after 10ms".to_owned()],
            total_duration_ms: 10.25,
            hooks: vec![],
        };
        assert_eq!(
            serde_json::to_string(&result).unwrap(),
            r#"{"success":false,"final_output":null,"all_outputs":[],"errors":["Hook timed out after 10ms"],"total_duration_ms":10.25,"hooks":[]}"#
        );
    }

    #[test]
    fn severities_are_lower_case() {
        for (severity, expected) in [
            (Severity::Error, "\"error\""),
            (Severity::Warning, "\"warning\""),
            (Severity::Info, "\"info\""),
        ] {
            assert_eq!(serde_json::to_string(&severity).unwrap(), expected);
            assert_eq!(
                serde_json::from_str::<Severity>(expected).unwrap(),
                severity
            );
        }
    }

    #[test]
    fn ids_and_finality() {
        let pong = ServerMessage::Pong(PongMessage { id: 1.into() });
        assert_eq!(pong.id(), Some(&RequestId::Number(1)));
        assert!(pong.is_final());
        let hook = ServerMessage::HookResult(HookResultMessage {
            id: 1.into(),
            index: 0,
            hook: exited_hook(),
        });
        assert!(!hook.is_final());
        assert_eq!(hook.type_name(), "hook_result");
        let subscribed = ServerMessage::Subscribed(SubscribedMessage {
            id: 2.into(),
            cwd: None,
        });
        assert!(!subscribed.is_final());
        assert_eq!(subscribed.id(), Some(&RequestId::Number(2)));
        let error = ServerMessage::Error(ErrorMessage {
            id: None,
            code: ErrorCode::Internal,
            message: String::new(),
        });
        assert_eq!(error.id(), None);
    }
}
