//! The daemon's configuration: limits, timeouts, the audit log, and the environment it resolves
//! settings with.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use hookd_core::dialect::Dialect;
use hookd_core::policy::FailurePolicy;
use hookd_core::trust::ProjectHookPolicy;

use crate::control::{Control, Lifecycle};

/// Everything [`crate::run`] needs besides the listener and the stop signal.
///
/// Built by the `hookd` binary from its flags and environment, and by tests directly.
#[derive(Clone)]
pub struct ServerConfig {
    /// OpenTelemetry export (hookd's own setting; the `OTEL_*` variables of [`Self::env`]
    /// apply too): off unless a collector is named.
    pub telemetry: TelemetrySettings,
    /// At most this many client connections are served at once; more wait in the backlog.
    pub max_connections: usize,
    /// At most this many HTTP connections are held at once (`hookd --http`); a new one past it
    /// closes the connection idle the longest.
    pub http_max_connections: usize,
    /// At most this many hook processes run at once across all clients; more queue.
    pub max_hooks: usize,
    /// The largest frame accepted from a client, in bytes.
    pub max_frame_bytes: usize,
    /// The largest first frame (the `hello`) accepted from a new connection, in bytes: a peer
    /// that has not shown it speaks the protocol cannot make the daemon buffer a large frame.
    pub max_hello_frame_bytes: usize,
    /// At most this many bytes of frames that have begun to arrive but are not complete are
    /// held across all connections (frames of 64 KiB or less do not count). A connection
    /// whose next frame would take the total past it has that frame refused: its body is
    /// skipped as it arrives and a `limit_reached` error answers it.
    pub max_pending_frame_bytes: usize,
    /// The most memory the cached projects' compiled `redact` filters may be counted as
    /// together, in bytes (`hookd_core::registry::Registry::compiled_bytes`). When a project's
    /// registry takes the total past it, the least recently used other projects' registries
    /// are dropped from the cache until it fits; such a project is read and compiled again at
    /// its next event, with the same hooks. One project is always kept, however large.
    pub compiled_budget_bytes: usize,
    /// At most this many event runs are in flight on one connection. When a connection
    /// reaches it, the daemon stops reading that connection's frames until one finishes, so a
    /// client pipelining thousands of requests is served in order without the daemon holding
    /// thousands of runs.
    pub max_inflight_per_connection: usize,
    /// Each hook's stdout and stderr are captured up to this many bytes (hookd's output caps).
    pub max_output_bytes: usize,
    /// Time between SIGTERM and SIGKILL to a timed-out hook's process group (hookd's hard timeouts).
    pub kill_grace: Duration,
    /// How long a graceful stop lets in-flight runs finish before killing them.
    pub shutdown_grace: Duration,
    /// How long a new connection may take to send its `hello`.
    pub handshake_timeout: Duration,
    /// The shell that runs hook command lines.
    pub shell: PathBuf,
    /// The program that evaluates policy hooks as `<program> --policy-worker ...`: the
    /// daemon's own binary (set by `hookd` at start). `None`: policy hooks are refused and
    /// decided by their failure policy.
    pub policy_program: Option<PathBuf>,
    /// The failure policy of hooks whose settings entry has no valid
    /// `on_failure` key: `allow` (Gemini CLI's behaviour) unless changed.
    pub default_on_failure: FailurePolicy,
    /// What an untrusted project hook does (hookd's project-hook trust): `warn` (run it and say so once,
    /// Gemini CLI's behaviour) unless changed to `require` (do not run it).
    pub project_hooks: ProjectHookPolicy,
    /// The daemon's own environment: used to find the settings layers, to expand `$VAR` in
    /// settings files, and as the hooks' environment when a client sends none.
    pub env: HashMap<String, String>,
    /// The home directory (`~` in settings paths), from `HOME` unless overridden.
    pub home: PathBuf,
    /// The hosts whose own settings files are read, converted, as settings layers (the files
    /// each names: `hookd_core::dialect::HostFiles::user_layer_files`); none unless `hookd
    /// --claude-settings` (Claude Code's `~/.claude/settings.json`,
    /// `<project>/.claude/settings.json` and `settings.local.json`).
    pub host_layers: Vec<Dialect>,
    /// The uid the system settings files and their directories must belong to, or they are
    /// not loaded (Gemini CLI's rule: root, 0). Tests running as an ordinary user set their
    /// own uid.
    pub system_owner: u32,
    /// A directory whose ancestors are not checked on the way to the system settings files
    /// (Gemini CLI checks every directory up to `/`: `None`, the default). Only for tests,
    /// whose temp dirs sit under a world-writable `/tmp`.
    pub system_trusted_above: Option<PathBuf>,
    /// Where reload requests come from (SIGHUP in the `hookd` binary).
    pub control: Control,
    /// Who hears about readiness, reloads, shutdown and watchdog ticks (systemd's notify
    /// socket in the `hookd` binary); `None` tells no one.
    pub lifecycle: Option<Arc<dyn Lifecycle>>,
    /// Where and how to write the audit log (one JSON line per event run that had hooks to
    /// run); `None`, the default, writes none.
    pub audit: Option<AuditConfig>,
    /// At most this many background runs (async hooks, detached events) are in flight; a
    /// run past it is not started and is recorded as dropped (`crate::background`).
    pub max_background_runs: usize,
    /// How long a graceful stop lets background runs finish, counted from the stop's start,
    /// before their hooks are killed and the runs recorded as cut short.
    pub background_grace: Duration,
    /// The circuit breaker: failures in a row that pause a hook, and the pauses.
    pub breaker: hookd_core::breaker::BreakerSettings,
    /// The session-state store's file (`docs/state.md`); by default
    /// `$XDG_STATE_HOME/hookd/state.redb`, else `~/.local/state/hookd/state.redb`.
    pub state_store: Option<PathBuf>,
    /// The session-state store's bounds and expiry times.
    pub state_limits: hookd_state::Limits,
    /// How often expired sessions are looked for and removed (at least 10 ms).
    pub state_expiry_interval: Duration,
    /// The key hooks' state tokens are signed with (`docs/state.md`, "Which session"); `None`
    /// (the default): a random key per start, so a token is worthless once its daemon
    /// stopped.
    pub state_token_key: Option<hookd_state::token::TokenKey>,
}

/// The audit log's settings: its file, its rotation, and whether lines carry hooks' stdin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditConfig {
    /// The log file. Rotated copies are `<path>.1` (newest) to `<path>.<keep>` (oldest).
    pub path: PathBuf,
    /// The file is rotated before a line would take it past this many bytes.
    pub max_bytes: u64,
    /// How many rotated files are kept besides the current one; 0 keeps none.
    pub keep: usize,
    /// Whether each line carries the stdin payload the event's hooks were given. Off by
    /// default: payloads hold prompts, tool inputs and model text.
    pub include_stdin: bool,
    /// At most this many lines wait for the writer; a line that finds the queue full is
    /// dropped and counted, so a slow disk never holds up an event.
    pub queue_lines: usize,
    /// At most this many bytes of lines wait for the writer (lines with a large `stdin` count
    /// for their size); past it, lines are dropped and counted like a full queue's.
    pub queue_bytes: usize,
}

impl AuditConfig {
    /// The default rotation size: 10 MiB.
    pub const DEFAULT_MAX_BYTES: u64 = 10 * 1024 * 1024;
    /// The default number of rotated files kept.
    pub const DEFAULT_KEEP: usize = 5;
    /// The default queue bound, in lines.
    pub const DEFAULT_QUEUE_LINES: usize = 4096;
    /// The default queue bound, in bytes: 16 MiB.
    pub const DEFAULT_QUEUE_BYTES: usize = 16 * 1024 * 1024;

    /// An audit log at `path` with the default rotation and no stdin.
    pub fn new(path: impl Into<PathBuf>) -> AuditConfig {
        AuditConfig {
            path: path.into(),
            max_bytes: AuditConfig::DEFAULT_MAX_BYTES,
            keep: AuditConfig::DEFAULT_KEEP,
            include_stdin: false,
            queue_lines: AuditConfig::DEFAULT_QUEUE_LINES,
            queue_bytes: AuditConfig::DEFAULT_QUEUE_BYTES,
        }
    }
}

impl std::fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerConfig")
            .field("max_connections", &self.max_connections)
            .field("max_hooks", &self.max_hooks)
            .field("max_frame_bytes", &self.max_frame_bytes)
            .field("max_hello_frame_bytes", &self.max_hello_frame_bytes)
            .field(
                "max_inflight_per_connection",
                &self.max_inflight_per_connection,
            )
            .field("max_output_bytes", &self.max_output_bytes)
            .field("kill_grace", &self.kill_grace)
            .field("shutdown_grace", &self.shutdown_grace)
            .field("handshake_timeout", &self.handshake_timeout)
            .field("shell", &self.shell)
            .field("default_on_failure", &self.default_on_failure)
            .field("project_hooks", &self.project_hooks)
            .field("home", &self.home)
            .field("telemetry", &self.telemetry)
            .field("host_layers", &self.host_layers)
            .field("system_owner", &self.system_owner)
            .field("system_trusted_above", &self.system_trusted_above)
            .field("lifecycle", &self.lifecycle.is_some())
            .field("audit", &self.audit)
            .field("max_background_runs", &self.max_background_runs)
            .field("background_grace", &self.background_grace)
            .field("breaker", &self.breaker)
            .field("state_store", &self.state_store)
            .finish_non_exhaustive()
    }
}

impl ServerConfig {
    /// The directory `~` stands for in Gemini CLI's paths: `GEMINI_CLI_HOME`, else the home
    /// dir.
    pub(crate) fn gemini_home(&self) -> PathBuf {
        let var = |name: &str| self.env.get(name).cloned();
        hookd_core::dialect::gemini::gemini_home(&hookd_core::dialect::HomeEnv {
            home: &self.home,
            var: &var,
        })
    }

    /// A configuration with default limits for the given environment.
    pub fn new(env: HashMap<String, String>) -> ServerConfig {
        let state_store = crate::state::default_store_path(&env);
        let home = env
            .get("HOME")
            .filter(|home| !home.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/"));
        ServerConfig {
            max_connections: 1024,
            http_max_connections: 1024,
            max_hooks: default_max_hooks(),
            max_frame_bytes: hookd_protocol::DEFAULT_MAX_FRAME_BYTES,
            max_hello_frame_bytes: hookd_protocol::DEFAULT_MAX_HELLO_FRAME_BYTES,
            max_pending_frame_bytes: DEFAULT_MAX_PENDING_FRAME_BYTES,
            max_inflight_per_connection: DEFAULT_MAX_INFLIGHT_PER_CONNECTION,
            compiled_budget_bytes: DEFAULT_COMPILED_BUDGET_BYTES,
            max_output_bytes: 1024 * 1024,
            kill_grace: Duration::from_secs(2),
            shutdown_grace: Duration::from_secs(10),
            handshake_timeout: Duration::from_secs(10),
            shell: PathBuf::from("bash"),
            policy_program: None,
            default_on_failure: FailurePolicy::Allow,
            project_hooks: ProjectHookPolicy::Warn,
            env,
            home,
            host_layers: Vec::new(),
            system_owner: 0,
            system_trusted_above: None,
            telemetry: TelemetrySettings::default(),
            control: Control::new(),
            lifecycle: None,
            audit: None,
            max_background_runs: DEFAULT_MAX_BACKGROUND_RUNS,
            background_grace: DEFAULT_BACKGROUND_GRACE,
            breaker: hookd_core::breaker::BreakerSettings::default(),
            state_store,
            state_limits: hookd_state::Limits::default(),
            state_expiry_interval: crate::state::EXPIRY_INTERVAL,
            state_token_key: None,
        }
    }

    /// A configuration from the daemon process's own environment.
    pub fn from_process_env() -> ServerConfig {
        ServerConfig::new(std::env::vars().collect())
    }
}

/// The default daemon-wide bound on partly received frames: 256 MiB, four frames of the
/// largest size at once.
pub const DEFAULT_MAX_PENDING_FRAME_BYTES: usize = 256 * 1024 * 1024;

/// The default [`ServerConfig::compiled_budget_bytes`]: 256 MiB, room for every cached project
/// with the default `redact` filter (about 0.5 MiB each), or about nine with four filters as
/// heavy as the limits allow.
pub const DEFAULT_COMPILED_BUDGET_BYTES: usize = 256 * 1024 * 1024;

/// The default bound on background runs in flight (async hooks, detached events).
pub const DEFAULT_MAX_BACKGROUND_RUNS: usize = 64;

/// The default time a graceful stop gives background runs: 20 s, so that with the kill grace
/// the stop stays inside the `TimeoutStopSec=30` of the systemd unit.
pub const DEFAULT_BACKGROUND_GRACE: Duration = Duration::from_secs(20);

/// The default cap on in-flight event runs per connection: far more than an agent has at
/// once, far fewer than a runaway client could pipeline.
pub const DEFAULT_MAX_INFLIGHT_PER_CONNECTION: usize = 1024;

/// Hooks mostly wait (on I/O, on the network, on `sleep`), so the cap is well above the core
/// count; it exists to stop a runaway client from forking the machine to death.
fn default_max_hooks() -> usize {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    (cores * 16).clamp(32, 256)
}

/// hookd's own OpenTelemetry settings (`docs/fleet.md`). The `OTEL_*` variables of the
/// daemon's environment start export too, and `OTEL_SDK_DISABLED=true` stops it whatever
/// these say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TelemetrySettings {
    /// The collector's OTLP/HTTP base URL (`hookd --otel-endpoint`), used when
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` is not set; `None`: only the variables start export.
    pub endpoint: Option<String>,
    /// What sensitive fields are exported (none by default).
    pub fields: ExportFields,
    /// Records that may wait for export; a record that finds the queue full is dropped and
    /// counted.
    pub queue: usize,
    /// How often batched spans and log records are sent (sooner when a batch is full).
    pub flush_interval: Duration,
    /// How often metrics are sent.
    pub metric_interval: Duration,
    /// The bound of one export (`OTEL_EXPORTER_OTLP_TIMEOUT` may only lower it).
    pub export_timeout: Duration,
    /// No export whatever the rest says: the one-shot engine, which lives for one event.
    pub disabled: bool,
}

impl Default for TelemetrySettings {
    fn default() -> TelemetrySettings {
        TelemetrySettings {
            endpoint: None,
            fields: ExportFields::default(),
            queue: 2048,
            flush_interval: Duration::from_secs(1),
            metric_interval: Duration::from_secs(10),
            export_timeout: Duration::from_secs(5),
            disabled: false,
        }
    }
}

/// The sensitive fields a user may opt into exporting, one by one (`hookd --otel-include`);
/// each passes the `redact` filter's default patterns before it leaves the daemon.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExportFields {
    /// The tool call's input (`gen_ai.tool.call.arguments`).
    pub tool_input: bool,
    /// Each hook's command line (`hookd.hook.command`).
    pub command: bool,
    /// Each hook's stdout and stderr (`hookd.hook.output`).
    pub output: bool,
}

impl ExportFields {
    /// Parses `tool_input,command,output` (any subset, comma-separated); the unknown name on
    /// error.
    pub fn parse(list: &str) -> Result<ExportFields, String> {
        let mut fields = ExportFields::default();
        for name in list
            .split(',')
            .map(str::trim)
            .filter(|name| !name.is_empty())
        {
            match name {
                "tool_input" => fields.tool_input = true,
                "command" => fields.command = true,
                "output" => fields.output = true,
                other => return Err(other.to_owned()),
            }
        }
        Ok(fields)
    }
}
