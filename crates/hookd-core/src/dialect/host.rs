//! The host interface, in three parts by who uses them.
//!
//! - [`HostRun`]: what the **daemon** asks when it plans, runs and merges hooks: a hook
//!   written in the host's dialect (its payload, what its output means, when it applies, its
//!   default timeout, environment, shell and command line) and the events the host relays
//!   (its merge, its de-duplication, the layers it runs itself).
//! - [`HostRelay`]: the **relay's translation**, pure: the host's events, its stdin object
//!   as a hookd event and the daemon's aggregate as the host's answer, and where the host
//!   puts the project directory. The relay binary uses it, and so may any listener of the
//!   daemon that hears a host directly.
//! - [`HostFiles`]: the **host's files**, for the settings loader and `hookctl`: its
//!   settings files and which of them hookd may read as layers, how its `hooks` object reads
//!   as hookd's, the relay entry `hookctl install` writes, companion files (trust records)
//!   and what the host would refuse to load.
//!
//! [`Host`] joins the three with the host's name and product; [`super::Dialect`] is the
//! handle callers hold, and hands out each part by itself so that a caller names only the
//! part it uses.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::{Conversion, DialectError, HomeEnv, HostAnswer, Purpose, RelayInput};
use crate::aggregate::{Aggregate, aggregate};
use crate::command::CommandVars;
use crate::event::{HookEventName, HostEventSpec};
use crate::model::{HookConfig, HookEntry, LayerFile, Source};
use crate::result::{HookResult, HookRun};

/// One agent CLI: its three parts, its name and its product. Implemented once per host (a unit
/// struct) and registered by one line of the `hosts!` registry in `dialect/mod.rs`, which
/// makes its [`super::Dialect`] constant and its entry in [`super::Dialect::ALL`].
pub trait Host: HostRun + HostRelay + HostFiles {
    /// The spelling in settings (`"dialect"`), on the wire (`relayed_by`), in layer labels
    /// and on the command line (`--dialect`, `--host`): `gemini`, `claude`, ...
    const NAME: &'static str;

    /// The product's name in messages: `Gemini CLI`, `Claude Code`, ...
    const PRODUCT: &'static str;
}

/// What the daemon asks of a host: how it runs a hook written in the host's dialect, and how
/// it plans and merges an event the host relayed.
pub trait HostRun: Send + Sync + 'static {
    /// The timeout of a hook of this dialect that sets none, in milliseconds: the host's own
    /// default, so a hook written for a host is given the time that host would give it.
    fn default_timeout_ms(&self) -> u64;

    /// The variables the host sets for each of its hooks on top of its own environment, in
    /// its order, from the firing's values. A hook of this dialect gets exactly these (and
    /// hookd's `HOOKD_*`), never another host's ([`super::Dialect::hook_environment`]).
    /// Default: none (Codex CLI hands its hooks its environment as it is).
    fn hook_variables<'a>(&self, _vars: &CommandVars<'a>) -> Vec<(&'static str, &'a str)> {
        Vec::new()
    }

    /// The command line the host's shell is given for a hook's `command`: the host's own
    /// textual rewrite, if it makes one (Gemini CLI replaces `$GEMINI_PROJECT_DIR` and four
    /// more with quoted values). Default: the command as written.
    fn hook_command<'c>(&self, command: &'c str, _vars: &CommandVars<'_>) -> Cow<'c, str> {
        Cow::Borrowed(command)
    }

    /// The shell that runs a hook's command line as `<shell> -c LINE`, when it is not bash
    /// (Claude Code starts its hooks with Node's `shell: true`: `/bin/sh`); `None`: bash, as
    /// Gemini CLI and Codex CLI run them. A different shell is a different language (`[[`,
    /// `$'...'`) and sets different variables (`SHLVL`, `_`).
    fn hook_shell(&self) -> Option<&'static str> {
        None
    }

    /// Whether the host expands `$NAME`, `${NAME}` and `${NAME:-default}` in the strings of
    /// its settings files when it loads them (Gemini CLI does); a hook of a dialect that does
    /// not is read from hookd's files as written. Default: no.
    fn expands_settings_strings(&self) -> bool {
        false
    }

    /// Whether the host itself runs the hooks of a layer (`source`, `file`): such hooks are
    /// skipped for the events it relays, or they would run twice.
    fn runs_layer(&self, source: Source, file: LayerFile) -> bool;

    /// Whether, for the events it relays, hooks with the same command line run once whatever
    /// their names (Claude Code's rule); otherwise Gemini CLI's `name:command` identity applies.
    fn dedups_by_command(&self) -> bool {
        false
    }

    /// Merges the hooks hookd ran for an event this host relayed. Default: Gemini CLI's rules.
    fn aggregate(
        &self,
        event: HookEventName,
        results: &[HookResult],
        input: &Map<String, Value>,
    ) -> Aggregate {
        aggregate(event, results, input)
    }

    /// The payload a hook written in this dialect reads, from the hookd payload of a firing;
    /// `None`: the hookd payload as it is.
    fn hook_payload(
        &self,
        _event: HookEventName,
        _payload: &Map<String, Value>,
    ) -> Option<Map<String, Value>> {
        None
    }

    /// What a run of a hook written in this dialect means, in hookd's output fields; `input`
    /// is the hookd payload of the firing. No failure policy is applied here.
    fn hook_result(
        &self,
        entry: &HookEntry,
        run: HookRun,
        _input: &Map<String, Value>,
    ) -> HookResult {
        crate::output::hook_result(entry, run)
    }

    /// Whether a hook written in this dialect takes part in a firing (where hookd's events are
    /// coarser than the host's: Claude Code's `Stop` and `SubagentStop` are both `AfterAgent`).
    fn hook_applies(
        &self,
        _config: &HookConfig,
        _event: HookEventName,
        _payload: &Map<String, Value>,
    ) -> bool {
        true
    }
}

/// The relay's translation between a host and hookd: pure, so that both the relay binary and
/// the daemon can use it.
pub trait HostRelay: Send + Sync + 'static {
    /// The host's events hookd can run, in the host's spelling and order: what the relay
    /// accepts and what `hookctl install` may wire.
    fn events(&self) -> Vec<&'static str>;

    /// The host's own events, which Gemini CLI has no counterpart for and hookd holds as
    /// themselves ([`HookEventName::Host`], named by this host): their names, matcher fields
    /// and whether they block. hookd's files may register hooks for them by name. Default:
    /// none (a host whose events are all Gemini CLI's or another host's).
    fn own_events(&self) -> &'static [HostEventSpec] {
        &[]
    }

    /// The hookd event a host event is fired as; `None` for an event hookd cannot run.
    fn event_to_hookd(&self, host_event: &str) -> Option<HookEventName>;

    /// The environment variable in which the host gives its hooks the project root, if any.
    /// The relay prefers it to the payload's `cwd`, which a `cd` in the shell tool moves.
    fn project_dir_var(&self) -> Option<&'static str>;

    /// Whether, lacking [`Self::project_dir_var`], the host starts its hooks in the session's
    /// project directory, so that the relay's own working directory is the project (Codex
    /// CLI, whose payload `cwd` follows the shell tool's `workdir`). Default: no.
    fn project_dir_is_hook_cwd(&self) -> bool {
        false
    }

    /// Variables the host sets for one event's hooks only, not for the session (Claude Code's
    /// `CLAUDE_ENV_FILE`, for `SessionStart`): left out when the environment a relayed
    /// `SessionStart` carried is kept for the session's later events that arrive over HTTP,
    /// which carry no environment of their own. Default: none.
    fn event_only_variables(&self) -> &'static [&'static str] {
        &[]
    }

    /// The host's stdin object for `host_event` as a hookd event.
    fn relay_input(
        &self,
        host_event: &str,
        host_input: Map<String, Value>,
    ) -> Result<RelayInput, DialectError>;

    /// The relay's answer to the host: what it prints and exits with so that the host decides
    /// what hookd's hooks decided (`final_output` is the daemon's aggregate; `errors` the
    /// hooks' errors). Also used for the relay's own decisions (the daemon unreachable).
    fn relay_answer(
        &self,
        event: &RelayInput,
        final_output: Option<&Value>,
        errors: &[String],
    ) -> HostAnswer;
}

/// A host's files: where its settings are, how they read as hookd's, and how `hookctl`
/// wires the relay into them.
pub trait HostFiles: Send + Sync + 'static {
    /// Milliseconds per unit of the host's `timeout` key (1000 where it counts seconds).
    fn timeout_unit_ms(&self) -> u64 {
        1000
    }

    /// The host's settings object (its `hooks` member) as hookd's hooks; `None` when the host's
    /// hooks are hookd's own shape already.
    fn convert_settings(&self, _settings: &Value, _purpose: Purpose) -> Option<Conversion> {
        None
    }

    /// Whether hookd can read the host's own settings files as layers (Claude Code's, with
    /// `hookd --claude-settings`): [`Self::user_layer_files`] and
    /// [`Self::project_layer_files`], converted with [`Self::convert_settings`]. Default: no.
    fn has_layer_files(&self) -> bool {
        false
    }

    /// The host's user settings files hookd reads as layers when asked to read this host's
    /// settings (`hookd --claude-settings`), in order; each is converted with
    /// [`Self::convert_settings`]. Default: none, the host's files are never layers.
    fn user_layer_files(&self, _env: &HomeEnv<'_>) -> Vec<PathBuf> {
        Vec::new()
    }

    /// A project's settings files of this host hookd reads as layers, in order (see
    /// [`Self::user_layer_files`]). Default: none.
    fn project_layer_files(&self, _project: &Path) -> Vec<PathBuf> {
        Vec::new()
    }

    /// Folders of the host's user hook files, every file of which that
    /// [`Self::is_layer_folder_file`] accepts is a layer, after [`Self::user_layer_files`]
    /// (Copilot CLI's `~/.copilot/hooks/`). The loader lists them; the files are layers in the
    /// order of [`Self::layer_folder_files`]. Default: none.
    fn user_layer_folders(&self, _env: &HomeEnv<'_>) -> Vec<PathBuf> {
        Vec::new()
    }

    /// A project's folders of hook files of this host (see [`Self::user_layer_folders`]), after
    /// [`Self::project_layer_files`]. Default: none.
    fn project_layer_folders(&self, _project: &Path) -> Vec<PathBuf> {
        Vec::new()
    }

    /// Whether a file named `name` in one of the host's layer folders is a layer (a name, not a
    /// path: the folder is the host's). Default: none is.
    fn is_layer_folder_file(&self, _name: &str) -> bool {
        false
    }

    /// The files of a layer folder that are layers, from the names the folder holds, in the
    /// order they are layered: those [`Self::is_layer_folder_file`] accepts, sorted by name
    /// (byte order), each once.
    fn layer_folder_files(&self, names: Vec<String>) -> Vec<String> {
        let mut files: Vec<String> = names
            .into_iter()
            .filter(|name| self.is_layer_folder_file(name))
            .collect();
        files.sort_unstable();
        files.dedup();
        files
    }

    /// The host's own file that records which folders the user trusts to run a repository's
    /// hooks (Copilot CLI's `config.json`), read with the user's files; `None`: the host runs a
    /// project's hooks wherever it runs. Default: none.
    fn project_trust_file(&self, _env: &HomeEnv<'_>) -> Option<PathBuf> {
        None
    }

    /// Whether the host would run the hooks of `project`'s own files, given the content of
    /// [`Self::project_trust_file`] (parsed as JSON with comments, which the host may write;
    /// `None`: missing, unreadable or not JSON). hookd reads a project's layer files and
    /// folders of this host only where it would, so that a cloned repository's hooks never
    /// run in hookd where the host refuses them. Default: yes.
    fn trusts_project(&self, _project: &Path, _trust_record: Option<&Value>) -> bool {
        true
    }

    /// The matcher of the relay entry for `event`, covering every hook hookd has for it
    /// (`matchers`: their hookd matchers, `None` for a hook that matches every firing);
    /// `None`: the entry relays every firing, which is always safe.
    fn relay_matcher(&self, _event: HookEventName, _matchers: &[Option<String>]) -> Option<String> {
        None
    }

    /// The handler object `hookctl install` writes into the host's settings to relay
    /// `host_event` by running `command`, waiting at most `timeout_ms`.
    fn relay_handler(&self, host_event: &str, command: &str, timeout_ms: u64) -> Value;

    /// The host's user settings file, which `hookctl install --scope user` edits.
    fn user_settings_file(&self, env: &HomeEnv<'_>) -> PathBuf;

    /// A project's settings file, which `hookctl install --scope project` edits.
    fn project_settings_file(&self, project: &Path) -> PathBuf;

    /// What a user must do for running sessions to see changed relay entries.
    fn pickup_note(&self) -> &'static str;

    /// Why the host would not load its settings text as it is (a host that drops a whole file
    /// for one malformed entry); `hookctl install` refuses to edit a file with any, since the
    /// relay entries it adds would be dropped with the rest. Default: none.
    fn settings_problems(&self, _settings_text: &str) -> Vec<String> {
        Vec::new()
    }

    /// Other files the host must see changed before it runs the hooks of `settings_file` (a
    /// trust record, say), found with the caller's environment `env` (the core reads none).
    /// Default: none.
    fn companion_files(&self, _settings_file: &Path, _env: &HomeEnv<'_>) -> Vec<PathBuf> {
        Vec::new()
    }

    /// The new text of the companion file `companion` (`current`: its text now, `None`: it does
    /// not exist) once `settings_file` holds `settings_text`; `Ok(None)`: no change. Called by
    /// `install`, `sync` and `uninstall` after every edit of the settings file.
    fn companion_text(
        &self,
        _settings_file: &Path,
        _settings_text: &str,
        _companion: &Path,
        _current: Option<&str>,
    ) -> Result<Option<String>, String> {
        Ok(None)
    }

    /// Why the host would not run the relay entries of `settings_file` as they are (a stale
    /// trust record, say), given its text and its companions' texts: one line each, for
    /// `hookctl doctor` and `hookctl list`. Default: none.
    fn wiring_problems(
        &self,
        _settings_file: &Path,
        _settings_text: &str,
        _companions: &[(PathBuf, Option<String>)],
    ) -> Vec<String> {
        Vec::new()
    }
}
