//! OpenAI Codex CLI's dialect: its events, tool names and answer rules, its `hooks.json`
//! files and the trust records in `config.toml` without which it skips a hook.
//!
//! Codex CLI's hooks are shaped like Claude Code's (the same event names where they share
//! one, the same stdin fields, `Bash` with `{"command"}`, `mcp__server__tool`), so its
//! stdin object is translated as Claude's is, with Codex's own tool names on top
//! ([`names`]). Its parser is stricter than Claude's and fails open on anything it does not
//! accept, so the answer is made safe for it ([`answer`]). Its `hooks.json` is dropped as a
//! whole for one malformed handler, and its hooks run only once trusted ([`trust`]).
//!
//! Settings: `$CODEX_HOME/hooks.json` (by default `~/.codex/hooks.json`) and
//! `<project>/.codex/hooks.json`; trust records in the user's `$CODEX_HOME/config.toml`;
//! timeouts in seconds (default 600). Codex gives its hooks no project variable, and the
//! `cwd` of its stdin follows the shell tool's `workdir`; it starts every hook in the
//! session's directory, which the relay therefore takes as the project
//! ([`HostDialect::project_dir_is_hook_cwd`]).

pub mod answer;
pub mod names;
pub mod trust;

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

pub use answer::{answer_for_codex, codex_answer_from_claude};
pub use names::{
    CODEX_EVENTS, codex_event_label, codex_event_to_hookd, codex_tool_to_hookd, hookd_tool_to_codex,
};
pub use trust::{
    CODEX_DEFAULT_TIMEOUT_S, codex_hooks_file_problems, codex_trust_hash, codex_trust_key,
    trust_problems, trust_records_text,
};

use super::{Conversion, DialectError, HomeEnv, HostAnswer, HostDialect, Purpose, RelayInput};
use crate::event::HookEventName;
use crate::model::{HookConfig, HookEntry, LayerFile, Source};
use crate::result::{HookResult, HookRun};

/// OpenAI Codex CLI.
#[derive(Debug, Clone, Copy)]
pub struct Codex;

/// The user's Codex directory from the environment: `CODEX_HOME` when absolute, else
/// `~/.codex`.
fn codex_home(var: &dyn Fn(&str) -> Option<String>, home: Option<&Path>) -> Option<PathBuf> {
    var("CODEX_HOME")
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute())
        .or_else(|| home.map(|home| home.join(".codex")))
}

impl HostDialect for Codex {
    fn name(&self) -> &'static str {
        "codex"
    }

    fn product(&self) -> &'static str {
        "Codex CLI"
    }

    fn events(&self) -> Vec<&'static str> {
        CODEX_EVENTS
            .into_iter()
            .filter(|event| codex_event_to_hookd(event).is_some())
            .collect()
    }

    fn event_to_hookd(&self, host_event: &str) -> Option<HookEventName> {
        codex_event_to_hookd(host_event)
    }

    fn default_timeout_ms(&self) -> u64 {
        CODEX_DEFAULT_TIMEOUT_S * 1000
    }

    fn project_dir_var(&self) -> Option<&'static str> {
        None
    }

    fn project_dir_is_hook_cwd(&self) -> bool {
        true
    }

    fn runs_layer(&self, _source: Source, _file: LayerFile) -> bool {
        // Codex's own hooks live in its own files, which hookd does not load.
        false
    }

    fn dedups_by_command(&self) -> bool {
        true
    }

    fn relay_input(
        &self,
        host_event: &str,
        mut host_input: Map<String, Value>,
    ) -> Result<RelayInput, DialectError> {
        let event = codex_event_to_hookd(host_event)
            .ok_or_else(|| DialectError::UnknownEvent(host_event.to_owned()))?;
        host_input.insert(
            "hook_event_name".to_owned(),
            Value::String(host_event.to_owned()),
        );
        let (_, mut input) = crate::dialect::claude_input_to_gemini(&host_input)?;
        if let Some(tool) = host_input.get("tool_name").and_then(Value::as_str) {
            let hookd = codex_tool_to_hookd(tool);
            if hookd != tool {
                input.insert("tool_name".to_owned(), Value::from(hookd.as_ref()));
                input.insert("codex_tool_name".to_owned(), Value::from(tool));
            }
        }
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
        answer_for_codex(&event.host_event, &event.host_input, final_output, errors)
    }

    fn hook_payload(
        &self,
        event: HookEventName,
        payload: &Map<String, Value>,
    ) -> Option<Map<String, Value>> {
        // Codex's stdin objects are Claude Code's, with Codex's own tool names.
        let mut codex = crate::dialect::gemini_payload_to_claude(event, payload);
        if let Some(tool) = payload.get("codex_tool_name").cloned() {
            codex.insert("tool_name".to_owned(), tool);
        } else if let Some(tool) = payload.get("tool_name").and_then(Value::as_str) {
            let name = hookd_tool_to_codex(tool);
            if name != tool && matches!(tool, "replace" | "write_file" | "run_shell_command") {
                codex.insert("tool_name".to_owned(), Value::from(name.as_ref()));
            }
        }
        codex.remove("codex_tool_name");
        Some(codex)
    }

    fn hook_result(
        &self,
        entry: &HookEntry,
        run: HookRun,
        input: &Map<String, Value>,
    ) -> HookResult {
        // What Codex reads of an answer is a part of what Claude Code reads, in the same
        // fields; answers Codex would count as a failed hook are told apart in
        // docs/dialects.md.
        crate::dialect::claude_hook_result(entry, run, input)
    }

    fn hook_applies(
        &self,
        config: &HookConfig,
        event: HookEventName,
        payload: &Map<String, Value>,
    ) -> bool {
        crate::dialect::claude_hook_applies(config, event, payload)
    }

    fn convert_settings(&self, settings: &Value, purpose: Purpose) -> Option<Conversion> {
        // Codex's hooks.json is Claude Code's `hooks` object; its hooks keep speaking Codex.
        let mut conversion = crate::dialect::convert_claude_settings(settings, purpose);
        if purpose == Purpose::Layer {
            for list in conversion.hooks.values_mut() {
                for definition in list.as_array_mut().into_iter().flatten() {
                    for hook in definition
                        .get_mut("hooks")
                        .and_then(Value::as_array_mut)
                        .into_iter()
                        .flatten()
                    {
                        if let Some(hook) = hook.as_object_mut()
                            && hook.get("dialect").and_then(Value::as_str) == Some("claude")
                        {
                            hook.insert("dialect".to_owned(), Value::from("codex"));
                        }
                    }
                }
            }
        }
        Some(conversion)
    }

    fn relay_handler(&self, _host_event: &str, command: &str, timeout_ms: u64) -> Value {
        // Only what Codex accepts: a whole number of seconds, at least 1.
        json!({
            "type": "command",
            "command": command,
            "timeout": timeout_ms.div_ceil(1000).max(1),
        })
    }

    fn user_settings_file(&self, env: &HomeEnv<'_>) -> PathBuf {
        codex_home(env.var, Some(env.home))
            .unwrap_or_else(|| env.home.join(".codex"))
            .join("hooks.json")
    }

    fn project_settings_file(&self, project: &Path) -> PathBuf {
        project.join(".codex").join("hooks.json")
    }

    fn pickup_note(&self) -> &'static str {
        "Codex CLI reads its hooks when a session starts: restart running sessions. A project's \
         .codex/hooks.json runs only in a project Codex trusts (trust_level = \"trusted\")."
    }

    fn settings_problems(&self, settings_text: &str) -> Vec<String> {
        codex_hooks_file_problems(settings_text)
    }

    fn companion_files(&self, settings_file: &Path) -> Vec<PathBuf> {
        // Trust lives in the user's config.toml only: next to the user's hooks.json, or
        // found from the environment for a project's.
        let var = |name: &str| std::env::var(name).ok();
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let from_env = codex_home(&var, home.as_deref());
        let Some(sibling) = settings_file.parent().map(Path::to_path_buf) else {
            return Vec::new();
        };
        // A project's `.codex/hooks.json`: the user's directory, unless it is that one.
        let project_file = sibling.file_name().is_some_and(|name| name == ".codex");
        let dir = match from_env {
            Some(user) if project_file => user,
            _ => sibling,
        };
        vec![dir.join("config.toml")]
    }

    fn companion_text(
        &self,
        settings_file: &Path,
        settings_text: &str,
        _companion: &Path,
        current: Option<&str>,
    ) -> Result<Option<String>, String> {
        trust_records_text(settings_file, settings_text, current)
    }

    fn wiring_problems(
        &self,
        settings_file: &Path,
        settings_text: &str,
        companions: &[(PathBuf, Option<String>)],
    ) -> Vec<String> {
        let mut problems: Vec<String> = codex_hooks_file_problems(settings_text)
            .into_iter()
            .map(|problem| {
                format!(
                    "Codex CLI drops {} as a whole: {problem}",
                    settings_file.display()
                )
            })
            .collect();
        let config = companions.first().and_then(|(_, text)| text.as_deref());
        problems.extend(trust_problems(settings_file, settings_text, config));
        problems
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn stdin_objects_become_hookd_events() {
        // (event, stdin, hookd event, hookd tool_name)
        let cases = [
            (
                "PreToolUse",
                json!({"session_id": "s", "cwd": "/w/sub", "tool_name": "Bash",
                    "tool_input": {"command": "ls"}, "tool_use_id": "c1", "turn_id": "t"}),
                HookEventName::BeforeTool,
                Some("run_shell_command"),
            ),
            (
                "PreToolUse",
                json!({"session_id": "s", "cwd": "/w", "tool_name": "apply_patch",
                    "tool_input": {"command": "*** Begin Patch"}}),
                HookEventName::BeforeTool,
                Some("replace"),
            ),
            (
                "PostToolUse",
                json!({"session_id": "s", "cwd": "/w", "tool_name": "mcp__gh__issue",
                    "tool_input": {}, "tool_response": "ok"}),
                HookEventName::AfterTool,
                Some("mcp_gh_issue"),
            ),
            (
                "Stop",
                json!({"session_id": "s", "cwd": "/w", "stop_hook_active": true,
                    "last_assistant_message": "done"}),
                HookEventName::AfterAgent,
                None,
            ),
            (
                "UserPromptSubmit",
                json!({"session_id": "s", "cwd": "/w", "prompt": "hi"}),
                HookEventName::BeforeAgent,
                None,
            ),
            (
                "SessionStart",
                json!({"session_id": "s", "cwd": "/w", "source": "startup"}),
                HookEventName::SessionStart,
                None,
            ),
        ];
        for (event, stdin, expected, tool) in cases {
            let relayed = Codex
                .relay_input(event, stdin.as_object().cloned().expect("object"))
                .expect(event);
            assert_eq!(relayed.event, expected, "{event}");
            assert_eq!(
                relayed.input.get("tool_name").and_then(Value::as_str),
                tool,
                "{event}"
            );
            assert_eq!(relayed.host_input["hook_event_name"], event);
        }
        assert!(Codex.relay_input("Interrupt", Map::new()).is_err());
        assert!(Codex.relay_input("Notification", Map::new()).is_err());
    }

    #[test]
    fn relay_handlers_are_what_codex_accepts() {
        for timeout_ms in [0, 1, 999, 1000, 60_000, 600_001] {
            let handler = Codex.relay_handler("PreToolUse", "hookctl relay PreToolUse", timeout_ms);
            let text = json!({"hooks": {"PreToolUse": [{"hooks": [handler.clone()]}]}}).to_string();
            assert!(codex_hooks_file_problems(&text).is_empty(), "{handler}");
            assert!(
                handler["timeout"].as_u64().is_some_and(|t| t >= 1),
                "{handler}"
            );
        }
    }

    #[test]
    fn settings_files() {
        let home = Path::new("/home/u");
        let none = |_: &str| None;
        let env = HomeEnv { home, var: &none };
        assert_eq!(
            Codex.user_settings_file(&env),
            PathBuf::from("/home/u/.codex/hooks.json")
        );
        let set = |name: &str| (name == "CODEX_HOME").then(|| "/c".to_owned());
        let env = HomeEnv { home, var: &set };
        assert_eq!(
            Codex.user_settings_file(&env),
            PathBuf::from("/c/hooks.json")
        );
        let relative = |name: &str| (name == "CODEX_HOME").then(|| "c".to_owned());
        let env = HomeEnv {
            home,
            var: &relative,
        };
        assert_eq!(
            Codex.user_settings_file(&env),
            PathBuf::from("/home/u/.codex/hooks.json")
        );
        assert_eq!(
            Codex.project_settings_file(Path::new("/p")),
            PathBuf::from("/p/.codex/hooks.json")
        );
    }
}
