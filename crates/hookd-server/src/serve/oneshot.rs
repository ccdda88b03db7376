//! One connection served by a process of its own: the engine the relay runs when no daemon
//! answers (`hookd --oneshot`).
//!
//! [`serve_one`] builds the same shared state as [`crate::run`] (registries per project, the
//! runner, trust, failure policies) from the same configuration and hands one connected
//! socket to the same connection code the daemon runs for every client: the same loader,
//! plan, runner and merge, answering the same frames. Nothing of the daemon's is shared at
//! run time (no socket, no watcher, no audit log): the process reads the settings files and
//! trust records itself, answers, lets background work (async hooks, a detached
//! `SessionEnd`) finish within the background grace, and returns.
//!
//! [`EngineOptions`] carries the daemon's options that change a decision (the default failure
//! policy, project-hook trust, Claude Code's settings, output caps, the kill grace) from a
//! running daemon to the one-shot engine: the daemon records them when it starts
//! ([`EngineOptions::record`]) in the state directory, keyed by its socket path, and the
//! engine reads them back ([`EngineOptions::load`]) when it stands in for that daemon. The
//! record is read only when it is a regular file of the user's own that nobody else can
//! write, and only up to [`EngineOptions::MAX_BYTES`].

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hookd_core::dialect::Dialect;
use hookd_core::policy::FailurePolicy;
use hookd_core::trust::ProjectHookPolicy;
use hookd_settings::atomic::AtomicWrite;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::config::ServerConfig;
use crate::shared::Shared;
use crate::state::state_dir;

/// Why a one-shot run could not serve its connection.
#[derive(Debug, thiserror::Error)]
pub enum OneShotError {
    /// The given stream could not be used by the async runtime.
    #[error("cannot use the connection: {0}")]
    Stream(#[from] std::io::Error),
    /// stdin is not a connected Unix socket.
    #[error("--oneshot needs stdin to be a connected Unix socket (hookd-relay gives it one)")]
    NotASocket,
    /// The runtime or its thread could not be started.
    #[error("cannot start the engine: {0}")]
    Runtime(String),
}

/// `hookd --oneshot`: serves the connection on stdin with `config`, over which the options the
/// daemon of `socket` recorded are applied ([`EngineOptions::load`]; a record that cannot be
/// trusted is ignored with a warning), on a thread with the stack for deeply nested payloads.
pub fn oneshot_main(
    mut config: ServerConfig,
    socket: &Path,
    plan_only: bool,
) -> Result<(), OneShotError> {
    use std::os::fd::AsFd;
    if let Some(dir) = state_dir(&config.env) {
        let defaults = EngineOptions::from_config(&config);
        match EngineOptions::load(&EngineOptions::record_path(&dir, socket), &defaults) {
            Ok(Some(options)) => options.apply(&mut config),
            Ok(None) => {}
            Err(error) => tracing::warn!(%error, "using the default options"),
        }
    }
    let stdin = std::io::stdin().as_fd().try_clone_to_owned()?;
    let kind = nix::sys::stat::fstat(&stdin).map_err(std::io::Error::from)?;
    let format =
        nix::sys::stat::SFlag::from_bits_truncate(kind.st_mode) & nix::sys::stat::SFlag::S_IFMT;
    if format != nix::sys::stat::SFlag::S_IFSOCK {
        return Err(OneShotError::NotASocket);
    }
    let stream = std::os::unix::net::UnixStream::from(stdin);
    let plan_only = plan_only
        .then(|| "hookd did not answer in time; decided by the hook's failure policy".to_owned());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .thread_stack_size(hookd_protocol::DEEP_STACK_BYTES)
        .build()?;
    block_on_deep(runtime, serve_one(stream, config, plan_only))
        .map_err(|error| OneShotError::Runtime(error.to_string()))?
}

/// Runs `future` to completion on `runtime` from a thread with
/// [`hookd_protocol::DEEP_STACK_BYTES`] of stack (a current-thread runtime runs its tasks on
/// the thread that blocks on it): a request nested up to `hookd_protocol::MAX_JSON_DEPTH`
/// levels is parsed, run and dropped there.
pub fn block_on_deep<F>(runtime: tokio::runtime::Runtime, future: F) -> std::io::Result<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    let thread = std::thread::Builder::new()
        .name("hookd".to_owned())
        .stack_size(hookd_protocol::DEEP_STACK_BYTES)
        .spawn(move || runtime.block_on(future))?;
    thread
        .join()
        .map_err(|_| std::io::Error::other("the daemon's thread panicked"))
}

/// Serves the one connection `stream` as the daemon would serve a client, then returns once
/// the client has closed it and background work has ended (or its grace has passed).
///
/// With `plan_only`, nothing is run: every hook is refused with that message and decides by
/// its failure policy (what the relay asks for when a daemon has the event but has not
/// answered in time, so hooks are not run twice).
pub async fn serve_one(
    stream: std::os::unix::net::UnixStream,
    mut config: ServerConfig,
    plan_only: Option<String>,
) -> Result<(), OneShotError> {
    // The daemon's audit log is the daemon's: a second writer would race its rotation.
    config.audit = None;
    config.lifecycle = None;
    // So is its telemetry: a process that lives for one event would lose its batch.
    config.telemetry.disabled = true;
    stream.set_nonblocking(true)?;
    let stream = tokio::net::UnixStream::from_std(stream)?;
    let shared = Arc::new(Shared::new(
        config,
        CancellationToken::new(),
        None,
        plan_only.map(Arc::from),
    ));
    crate::connection::serve(stream, Arc::clone(&shared)).await;
    let bound = shared.config.kill_grace + Duration::from_secs(2);
    shared
        .background
        .drain(Instant::now() + shared.config.background_grace, bound)
        .await;
    if tokio::time::timeout(bound, shared.engine.runner.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("some persistent workers or spares did not stop in time");
    }
    shared.state.close().await;
    Ok(())
}

/// The options of a daemon that change what its hooks decide, as the one-shot engine needs
/// them to decide the same.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineOptions {
    /// `--on-failure`.
    pub default_on_failure: FailurePolicy,
    /// `--project-hooks`.
    pub project_hooks: ProjectHookPolicy,
    /// `--claude-settings`, `--copilot-settings`: the hosts whose own settings files are layers.
    pub host_layers: Vec<Dialect>,
    /// `--max-output-bytes`.
    pub max_output_bytes: usize,
    /// `--kill-grace-ms`.
    pub kill_grace: Duration,
}

/// Why a record could not be read.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The file could not be opened or read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The record.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The file is not one the engine may trust.
    #[error("{path} is ignored: {reason}")]
    Untrusted {
        /// The record.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

impl EngineOptions {
    /// The largest record read.
    pub const MAX_BYTES: u64 = 64 * 1024;

    /// The options `config` holds.
    pub fn from_config(config: &ServerConfig) -> EngineOptions {
        EngineOptions {
            default_on_failure: config.default_on_failure,
            project_hooks: config.project_hooks,
            host_layers: config.host_layers.clone(),
            max_output_bytes: config.max_output_bytes,
            kill_grace: config.kill_grace,
        }
    }

    /// Sets these options in `config`.
    pub fn apply(&self, config: &mut ServerConfig) {
        config.default_on_failure = self.default_on_failure;
        config.project_hooks = self.project_hooks;
        config.host_layers = self.host_layers.clone();
        config.max_output_bytes = self.max_output_bytes;
        config.kill_grace = self.kill_grace;
    }

    /// The record's JSON text.
    pub fn to_json(&self) -> String {
        let mut record = serde_json::json!({
            "on_failure": self.default_on_failure.to_string(),
            "project_hooks": self.project_hooks.to_string(),
            "max_output_bytes": self.max_output_bytes,
            "kill_grace_ms": self.kill_grace.as_millis() as u64,
        });
        // One flag per host whose files can be layers (`claude_settings`), as the record has
        // always spelled it, so that an engine of another version reads it alike.
        if let Value::Object(fields) = &mut record {
            for host in Dialect::with_layer_files() {
                fields.insert(
                    Self::host_layers_key(host),
                    Value::Bool(self.host_layers.contains(&host)),
                );
            }
        }
        record.to_string()
    }

    /// The record's key for whether `host`'s own settings files are layers.
    fn host_layers_key(host: Dialect) -> String {
        hookd_settings::loader::host_layers_record_key(host)
    }

    /// Reads a record's JSON text over `defaults`: a field that is missing or not valid keeps
    /// the default's value.
    pub fn from_json(text: &str, defaults: &EngineOptions) -> EngineOptions {
        let fields: Map<String, Value> = match serde_json::from_str(text) {
            Ok(Value::Object(fields)) => fields,
            _ => return defaults.clone(),
        };
        let text = |key: &str| fields.get(key).and_then(Value::as_str);
        let number = |key: &str| fields.get(key).and_then(Value::as_u64);
        EngineOptions {
            default_on_failure: text("on_failure")
                .and_then(|value| value.parse().ok())
                .unwrap_or(defaults.default_on_failure),
            project_hooks: text("project_hooks")
                .and_then(|value| value.parse().ok())
                .unwrap_or(defaults.project_hooks),
            host_layers: Dialect::with_layer_files()
                .filter(|host| {
                    fields
                        .get(&Self::host_layers_key(*host))
                        .and_then(Value::as_bool)
                        .unwrap_or(defaults.host_layers.contains(host))
                })
                .collect(),
            max_output_bytes: number("max_output_bytes")
                .and_then(|value| usize::try_from(value).ok())
                .unwrap_or(defaults.max_output_bytes),
            kill_grace: number("kill_grace_ms")
                .map(Duration::from_millis)
                .unwrap_or(defaults.kill_grace),
        }
    }

    /// Where the daemon listening on `socket` records its options, in the state directory
    /// `state_dir` (`$XDG_STATE_HOME/hookd`): one file per socket path.
    pub fn record_path(state_dir: &Path, socket: &Path) -> PathBuf {
        hookd_settings::loader::engine_record_path(state_dir, socket)
    }

    /// Writes the record atomically and durably ([`AtomicWrite`]), readable by its owner
    /// only; the directory is created with mode 0700 when missing.
    pub fn record(&self, path: &Path) -> std::io::Result<()> {
        AtomicWrite::new()
            .mode(0o600)
            .dir_mode(0o700)
            .write(path, self.to_json().as_bytes())
    }

    /// Reads the record at `path` over `defaults`; `Ok(None)` when there is none. A record
    /// that is a symbolic link, not a regular file, not the user's own, writable by its group
    /// or others, or larger than [`EngineOptions::MAX_BYTES`] is refused.
    pub fn load(
        path: &Path,
        defaults: &EngineOptions,
    ) -> Result<Option<EngineOptions>, RecordError> {
        use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
        let io = |source| RecordError::Io {
            path: path.to_owned(),
            source,
        };
        let untrusted = |reason: &str| RecordError::Untrusted {
            path: path.to_owned(),
            reason: reason.to_owned(),
        };
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
            .open(path);
        let file = match file {
            Ok(file) => file,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(io(err)),
        };
        let metadata = file.metadata().map_err(io)?;
        if !metadata.file_type().is_file() {
            return Err(untrusted("it is not a regular file"));
        }
        if metadata.uid() != nix::unistd::getuid().as_raw() {
            return Err(untrusted("it belongs to another user"));
        }
        if metadata.mode() & 0o022 != 0 {
            return Err(untrusted("others can write to it"));
        }
        let mut text = String::new();
        file.take(Self::MAX_BYTES + 1)
            .read_to_string(&mut text)
            .map_err(io)?;
        if text.len() as u64 > Self::MAX_BYTES {
            return Err(untrusted("it is too large"));
        }
        Ok(Some(EngineOptions::from_json(&text, defaults)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn defaults() -> EngineOptions {
        EngineOptions::from_config(&ServerConfig::new(Default::default()))
    }

    #[test]
    fn a_record_round_trips_and_bad_fields_keep_the_defaults() {
        let options = EngineOptions {
            default_on_failure: FailurePolicy::Deny,
            project_hooks: ProjectHookPolicy::Require,
            host_layers: vec![Dialect::CLAUDE],
            max_output_bytes: 4096,
            kill_grace: Duration::from_millis(250),
        };
        assert_eq!(
            EngineOptions::from_json(&options.to_json(), &defaults()),
            options
        );
        // The record spells `--claude-settings` as it always has, so an engine of another
        // version reads it alike.
        let record: Value = serde_json::from_str(&options.to_json()).expect("json");
        assert_eq!(record["claude_settings"], Value::Bool(true));
        let off: Value = serde_json::from_str(&defaults().to_json()).expect("json");
        assert_eq!(off["claude_settings"], Value::Bool(false));
        assert_eq!(off["copilot_settings"], Value::Bool(false));
        let cases = [
            ("", defaults()),
            ("[1]", defaults()),
            (r#"{"on_failure":"explode","project_hooks":7}"#, defaults()),
            (
                r#"{"on_failure":"deny"}"#,
                EngineOptions {
                    default_on_failure: FailurePolicy::Deny,
                    ..defaults()
                },
            ),
            (
                r#"{"claude_settings":true}"#,
                EngineOptions {
                    host_layers: vec![Dialect::CLAUDE],
                    ..defaults()
                },
            ),
            (r#"{"claude_settings":"yes"}"#, defaults()),
            (
                r#"{"copilot_settings":true,"claude_settings":true}"#,
                EngineOptions {
                    host_layers: vec![Dialect::CLAUDE, Dialect::COPILOT],
                    ..defaults()
                },
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(
                EngineOptions::from_json(text, &defaults()),
                expected,
                "{text}"
            );
        }
    }

    #[test]
    fn only_a_private_regular_record_of_ones_own_is_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = EngineOptions::record_path(dir.path(), Path::new("/run/hookd.sock"));
        assert_eq!(EngineOptions::load(&path, &defaults()).ok(), Some(None));
        let options = EngineOptions {
            project_hooks: ProjectHookPolicy::Require,
            ..defaults()
        };
        options.record(&path).expect("record");
        assert_eq!(
            EngineOptions::load(&path, &defaults()).ok(),
            Some(Some(options.clone()))
        );
        // Another socket has a record of its own.
        assert_ne!(
            path,
            EngineOptions::record_path(dir.path(), Path::new("/tmp/other.sock"))
        );
        // Writable by others: refused.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).expect("chmod");
        assert!(matches!(
            EngineOptions::load(&path, &defaults()),
            Err(RecordError::Untrusted { .. })
        ));
        // A symbolic link, a FIFO and a huge file: refused, never waited on.
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&path, &link).expect("symlink");
        assert!(EngineOptions::load(&link, &defaults()).is_err());
        let fifo = dir.path().join("fifo.json");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
        assert!(matches!(
            EngineOptions::load(&fifo, &defaults()),
            Err(RecordError::Untrusted { .. })
        ));
        let huge = dir.path().join("huge.json");
        std::fs::write(&huge, vec![b' '; (EngineOptions::MAX_BYTES + 1) as usize]).expect("write");
        std::fs::set_permissions(&huge, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        assert!(matches!(
            EngineOptions::load(&huge, &defaults()),
            Err(RecordError::Untrusted { .. })
        ));
    }
}
