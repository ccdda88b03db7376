//! Claude Code's dialect, translated to and from hookd's (Gemini CLI's) model.
//!
//! Claude Code speaks of hookd's events, tools and answers in other words: `PreToolUse`,
//! `Bash`, `hookSpecificOutput.permissionDecision`. Everything here is a pure translation
//! between the two, used in four places:
//!
//! - **Claude Code hosting hookd** (`hookctl relay EVENT --dialect claude`): Claude Code's
//!   stdin object becomes a hookd event ([`claude_input_to_gemini`]); the daemon's aggregate
//!   becomes Claude Code's stdout and exit code ([`answer_for_claude_input`]), after the
//!   hooks hookd ran were merged by Claude Code's precedence ([`aggregate_claude`]) and
//!   identical command lines ran once.
//! - **Claude-dialect hooks** (`"dialect": "claude"` on a hook entry): the hook reads a Claude
//!   payload ([`gemini_payload_to_claude`]), and what it prints or exits with is interpreted
//!   by Claude Code's rules ([`claude_hook_result`]) into hookd's output fields, so hookd's
//!   aggregation applies unchanged. [`claude_hook_applies`] tells which firings such a hook
//!   takes part in where hookd's events are coarser than Claude's (Stop and SubagentStop are
//!   both AfterAgent).
//! - **Settings**: Claude Code's `hooks` object becomes a hookd one
//!   ([`convert_claude_settings`]), either as a layer whose hooks keep speaking Claude at run
//!   time, or for `hookctl migrate --from-claude`, which writes plain hookd hooks.
//!
//! The translation of a Claude stdin object keeps what it renamed in `claude_*` fields
//! (`claude_event`, and `claude_tool_name`, `claude_tool_input`, `claude_tool_response` when
//! the hookd form cannot be turned back into the original), so a Claude hook reading the
//! translated payload back sees the object Claude Code sent, apart from the base fields hookd
//! always sends (`session_id`, `transcript_path`, `cwd`) and `timestamp`.

mod aggregate;
mod answer;
mod convert;
mod events;
mod matchers;
mod names;
mod payload;
mod result;

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

pub use aggregate::aggregate_claude;
pub use answer::{answer_for_claude, answer_for_claude_input};
pub use convert::{ConvertOptions, convert_claude_hooks, convert_claude_settings};
pub use events::{
    BlockStyle, claude_block_style, claude_plain_stdout_field, claude_specific_fields,
};
pub use matchers::{
    claude_matcher_matches, claude_matcher_to_gemini, claude_matcher_verbatim,
    is_valid_claude_matcher,
};
pub use names::{
    CLAUDE_EVENTS, CLAUDE_OWN_EVENTS, claude_event_to_gemini, claude_notification_type_to_gemini,
    claude_own_event, claude_tool_input_to_gemini, claude_tool_to_gemini, claude_tools_for_gemini,
    gemini_event_to_claude, gemini_notification_type_to_claude, gemini_tool_input_to_claude,
    gemini_tool_to_claude,
};
pub use payload::{
    claude_hook_applies, claude_input_to_gemini, effective_claude_event, gemini_payload_to_claude,
};
pub use result::claude_hook_result;

use super::{
    Conversion, DialectError, HomeEnv, Host, HostAnswer, HostFiles, HostRelay, HostRun, Purpose,
    RelayInput,
};
use crate::aggregate::Aggregate;
use crate::event::{HookEventName, HostEventSpec};
use crate::model::{HookConfig, HookEntry, LayerFile, Source};
use crate::result::{HookResult, HookRun};

/// Claude Code's default hook timeout in milliseconds (600 s).
pub const CLAUDE_DEFAULT_TIMEOUT_MS: u64 = 600_000;

/// Claude Code.
#[derive(Debug, Clone, Copy)]
pub struct Claude;

/// Claude Code's user directory: `CLAUDE_CONFIG_DIR` when it is an absolute path, else
/// `~/.claude`. The one place this rule lives; the loader (`--claude-settings`, through
/// [`HostFiles::user_layer_files`]) and
/// `hookctl install` both ask it.
pub fn claude_config_dir(env: &HomeEnv<'_>) -> PathBuf {
    (env.var)("CLAUDE_CONFIG_DIR")
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute())
        .unwrap_or_else(|| env.home.join(".claude"))
}

impl Host for Claude {
    const NAME: &'static str = "claude";
    const PRODUCT: &'static str = "Claude Code";
}

impl HostRun for Claude {
    fn default_timeout_ms(&self) -> u64 {
        CLAUDE_DEFAULT_TIMEOUT_MS
    }

    /// Claude Code 2.1.328 sets `CLAUDE_PROJECT_DIR` for every hook (and, for its own
    /// session, `CLAUDECODE`, `CLAUDE_CODE_SESSION_ID`, `CLAUDE_ENV_FILE` on some events, ...,
    /// which reach a relayed hook through the relay's environment, where Claude Code set
    /// them). It rewrites no shell-form command line: the shell reads the variable.
    fn hook_shell(&self) -> Option<&'static str> {
        // Claude Code 2.1.328 spawns a shell-form hook with `shell: true`: `/bin/sh -c LINE`.
        Some("/bin/sh")
    }

    fn hook_variables<'a>(
        &self,
        vars: &crate::command::CommandVars<'a>,
    ) -> Vec<(&'static str, &'a str)> {
        vec![("CLAUDE_PROJECT_DIR", vars.project_dir)]
    }

    fn runs_layer(&self, _source: Source, file: LayerFile) -> bool {
        file == LayerFile::Host(<Self as Host>::NAME)
    }

    fn dedups_by_command(&self) -> bool {
        true
    }

    fn aggregate(
        &self,
        event: HookEventName,
        results: &[HookResult],
        input: &Map<String, Value>,
    ) -> Aggregate {
        aggregate_claude(event, results, input)
    }

    fn hook_payload(
        &self,
        event: HookEventName,
        payload: &Map<String, Value>,
    ) -> Option<Map<String, Value>> {
        Some(gemini_payload_to_claude(event, payload))
    }

    fn hook_result(
        &self,
        entry: &HookEntry,
        run: HookRun,
        input: &Map<String, Value>,
    ) -> HookResult {
        claude_hook_result(entry, run, input)
    }

    fn hook_applies(
        &self,
        config: &HookConfig,
        event: HookEventName,
        payload: &Map<String, Value>,
    ) -> bool {
        claude_hook_applies(config, event, payload)
    }
}

impl HostRelay for Claude {
    fn event_only_variables(&self) -> &'static [&'static str] {
        // Claude Code 2.1.328 gives `CLAUDE_ENV_FILE` to `SessionStart` hooks only (a file
        // whose `export` lines later Bash commands source).
        &["CLAUDE_ENV_FILE"]
    }

    fn events(&self) -> Vec<&'static str> {
        // Claude Code's events with a Gemini counterpart, then its own.
        CLAUDE_EVENTS
            .into_iter()
            .chain(CLAUDE_OWN_EVENTS.iter().map(|spec| spec.name))
            .collect()
    }

    fn own_events(&self) -> &'static [HostEventSpec] {
        &CLAUDE_OWN_EVENTS
    }

    fn event_to_hookd(&self, host_event: &str) -> Option<HookEventName> {
        claude_event_to_gemini(host_event)
    }

    fn project_dir_var(&self) -> Option<&'static str> {
        Some("CLAUDE_PROJECT_DIR")
    }

    fn relay_input(
        &self,
        host_event: &str,
        mut host_input: Map<String, Value>,
    ) -> Result<RelayInput, DialectError> {
        if claude_event_to_gemini(host_event).is_none() {
            return Err(DialectError::UnknownEvent {
                host: <Self as Host>::PRODUCT,
                event: host_event.to_owned(),
            });
        }
        // The event named on the command line is the one being answered.
        host_input.insert(
            "hook_event_name".to_owned(),
            Value::String(host_event.to_owned()),
        );
        let (event, input) = claude_input_to_gemini(&host_input)?;
        Ok(RelayInput {
            host_event: host_event.to_owned(),
            event,
            input,
            host_input,
        })
    }

    fn relay_answer(
        &self,
        event: &RelayInput,
        final_output: Option<&Value>,
        errors: &[String],
    ) -> HostAnswer {
        if event.host_input.is_empty() {
            answer_for_claude(&event.host_event, final_output, errors)
        } else {
            answer_for_claude_input(&event.host_input, final_output, errors)
        }
    }
}

impl HostFiles for Claude {
    fn convert_settings(&self, settings: &Value, purpose: Purpose) -> Option<Conversion> {
        Some(convert_claude_settings(settings, purpose))
    }

    fn relay_matcher(&self, event: HookEventName, matchers: &[Option<String>]) -> Option<String> {
        if matches!(event, HookEventName::BeforeTool | HookEventName::AfterTool) {
            claude_matcher(matchers)
        } else if event.host_only().is_some() && event.matcher_field() == Some("tool_name") {
            // Claude Code's own tool events: hookd's matchers already use Claude's names.
            claude_only_matcher(matchers)
        } else {
            None
        }
    }

    fn relay_handler(&self, _host_event: &str, command: &str, timeout_ms: u64) -> Value {
        json!({
            "type": "command",
            "command": command,
            "timeout": timeout_ms.div_ceil(1000),
        })
    }

    fn user_settings_file(&self, env: &HomeEnv<'_>) -> PathBuf {
        claude_config_dir(env).join("settings.json")
    }

    fn has_layer_files(&self) -> bool {
        true
    }

    fn user_layer_files(&self, env: &HomeEnv<'_>) -> Vec<PathBuf> {
        vec![self.user_settings_file(env)]
    }

    /// The shared `settings.json`, then the personal `settings.local.json`.
    fn project_layer_files(&self, project: &Path) -> Vec<PathBuf> {
        let dir = project.join(".claude");
        vec![dir.join("settings.json"), dir.join("settings.local.json")]
    }

    fn project_settings_file(&self, project: &Path) -> PathBuf {
        project.join(".claude").join("settings.json")
    }

    fn pickup_note(&self) -> &'static str {
        "Claude Code takes a snapshot of its hooks when a session starts: restart running \
         sessions (or review the change in /hooks)."
    }
}

/// One Claude Code matcher covering all of `matchers`, which are Gemini CLI matchers: the
/// Claude names of the tools they name, as an exact list (`Bash|Edit|MultiEdit`), when every
/// one of them is a list of names (`run_shell_command`, `write_file|replace`,
/// `^(?:replace|write_file)$`); else `*`.
pub fn claude_matcher(matchers: &[Option<String>]) -> Option<String> {
    let mut names: Vec<String> = Vec::new();
    for matcher in matchers {
        let Some(listed) = matcher.as_deref().and_then(super::wiring::tool_names) else {
            return Some("*".to_owned());
        };
        for gemini in listed {
            for claude in claude_tools_for_gemini(&gemini) {
                if !names.contains(&claude) {
                    names.push(claude);
                }
            }
        }
    }
    if names.is_empty() {
        Some("*".to_owned())
    } else {
        Some(names.join("|"))
    }
}

/// One Claude Code matcher covering `matchers`, hookd matchers of a Claude-only tool event
/// (regular expressions over Claude's tool names): the exact list of names when every one is
/// an anchored list (`^Bash$`, `^(?:Bash|Write)$`, as a converted Claude matcher is), else
/// none (every call is relayed).
pub fn claude_only_matcher(matchers: &[Option<String>]) -> Option<String> {
    let mut names: Vec<String> = Vec::new();
    for matcher in matchers {
        let matcher = matcher.as_deref()?;
        if !(matcher.starts_with('^') && matcher.ends_with('$')) {
            return None;
        }
        for name in super::wiring::tool_names(matcher)? {
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    (!names.is_empty()).then(|| names.join("|"))
}
