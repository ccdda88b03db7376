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
//! ([`super::HostRelay::project_dir_is_hook_cwd`]).

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
    CODEX_DEFAULT_TIMEOUT_S, codex_effective_timeout_s, codex_hooks_file_problems,
    codex_trust_hash, codex_trust_key, trust_problems, trust_records_text,
};

use super::{
    Conversion, DialectError, HomeEnv, Host, HostAnswer, HostFiles, HostRelay, HostRun, Purpose,
    RelayInput,
};
use crate::aggregate::Aggregate;
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

impl Host for Codex {
    const NAME: &'static str = "codex";
    const PRODUCT: &'static str = "Codex CLI";
}

impl HostRun for Codex {
    fn default_timeout_ms(&self) -> u64 {
        CODEX_DEFAULT_TIMEOUT_S * 1000
    }

    fn runs_layer(&self, _source: Source, _file: LayerFile) -> bool {
        // Codex's own hooks live in its own files, which hookd does not load.
        false
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
        // Codex starts its hooks together and, like Claude Code, lets a deny win and shows
        // one reason: the first declared hook's (observed with Codex 0.171), which is the
        // first in hookd's plan order.
        crate::dialect::aggregate_claude(event, results, input)
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
        let mut result = crate::dialect::claude_hook_result(entry, run, input);
        answer::drop_unapproved_rewrite(&mut result);
        result
    }

    fn hook_applies(
        &self,
        config: &HookConfig,
        event: HookEventName,
        payload: &Map<String, Value>,
    ) -> bool {
        crate::dialect::claude_hook_applies(config, event, payload)
    }
}

impl HostRelay for Codex {
    fn events(&self) -> Vec<&'static str> {
        CODEX_EVENTS
            .into_iter()
            .filter(|event| codex_event_to_hookd(event).is_some())
            .collect()
    }

    fn event_to_hookd(&self, host_event: &str) -> Option<HookEventName> {
        codex_event_to_hookd(host_event)
    }

    fn project_dir_var(&self) -> Option<&'static str> {
        None
    }

    fn project_dir_is_hook_cwd(&self) -> bool {
        true
    }

    fn relay_input(
        &self,
        host_event: &str,
        mut host_input: Map<String, Value>,
    ) -> Result<RelayInput, DialectError> {
        let event = codex_event_to_hookd(host_event).ok_or_else(|| DialectError::UnknownEvent {
            host: <Self as Host>::PRODUCT,
            event: host_event.to_owned(),
        })?;
        host_input.insert(
            "hook_event_name".to_owned(),
            Value::String(host_event.to_owned()),
        );
        let (_, mut input) = crate::dialect::claude_input_to_gemini(&host_input)?;
        // Claude Code's own tool events (`PermissionRequest`) keep the host's tool names, as
        // their hooks' matchers do; only events hookd shares with Gemini CLI are renamed.
        if event.host_only().is_none()
            && let Some(tool) = host_input.get("tool_name").and_then(Value::as_str)
        {
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
}

impl HostFiles for Codex {
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

    fn relay_matcher(&self, event: HookEventName, matchers: &[Option<String>]) -> Option<String> {
        if matches!(event, HookEventName::BeforeTool | HookEventName::AfterTool) {
            codex_matcher(matchers, true)
        } else if event.host_only().is_some() && event.matcher_field() == Some("tool_name") {
            // Claude Code's own tool events (`PermissionRequest`): the hooks' matchers use
            // Codex's names already.
            codex_matcher(matchers, false)
        } else {
            None
        }
    }

    fn relay_handler(&self, host_event: &str, command: &str, timeout_ms: u64) -> Value {
        // Only what Codex accepts: a whole number of seconds, at least 1, and no more than
        // Codex gives the event (it clamps SessionEnd's), so the entry says what Codex does.
        json!({
            "type": "command",
            "command": command,
            "timeout": codex_effective_timeout_s(host_event, Some(timeout_ms.div_ceil(1000))),
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

    fn companion_files(&self, settings_file: &Path, env: &HomeEnv<'_>) -> Vec<PathBuf> {
        // Trust lives in the user's config.toml only: next to the user's hooks.json, or
        // found from the environment for a project's.
        let from_env = codex_home(env.var, Some(env.home));
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

/// One Codex matcher covering `matchers` (hookd matchers of a tool event; `hookd_names`:
/// written with hookd's tool names, else with Codex's): the exact list of the Codex names of
/// the tools they name, when every one is a list of names; `None` (every call relayed) when
/// one is a pattern or matches everything. The names are letters, digits and `_`, which Codex
/// reads, joined by `|`, as an exact list.
pub fn codex_matcher(matchers: &[Option<String>], hookd_names: bool) -> Option<String> {
    let mut names: Vec<String> = Vec::new();
    for matcher in matchers {
        let matcher = matcher.as_deref()?;
        // Codex's own names come from a converted matcher, which is anchored.
        let anchored = matcher.starts_with('^') && matcher.ends_with('$');
        if !(hookd_names || anchored) {
            return None;
        }
        for name in super::wiring::tool_names(matcher)? {
            let codex = if hookd_names {
                hookd_tool_to_codex(&name).into_owned()
            } else {
                name
            };
            if !names.contains(&codex) {
                names.push(codex);
            }
        }
    }
    if names.is_empty() {
        return None;
    }
    (!names.is_empty()).then(|| names.join("|"))
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

    fn codex_entry(event: HookEventName, name: &str) -> HookEntry {
        use crate::model::{HookType, Origin};
        let mut raw = Map::new();
        raw.insert("dialect".to_owned(), json!("codex"));
        HookEntry {
            event,
            config: HookConfig {
                hook_type: HookType::Command,
                command: Some(format!("./{name}.sh")),
                name: Some(name.to_owned()),
                description: None,
                timeout_ms: None,
                env: Vec::new(),
                raw,
            },
            source: Source::User,
            origin: Origin::default(),
            matcher: None,
            sequential: false,
            enabled: true,
            trust: crate::trust::HookTrust::NotRequired,
            builtin: None,
            identity: Default::default(),
        }
    }

    /// What Codex hears when Codex-dialect hooks answer `stdouts` (exit 0, in declared
    /// order) to Codex's `PreToolUse` of `ls`.
    fn codex_hears(stdouts: &[&str]) -> HostAnswer {
        let relayed = Codex
            .relay_input(
                "PreToolUse",
                json!({"session_id": "s", "cwd": "/w", "tool_name": "Bash",
                    "tool_input": {"command": "ls"}})
                .as_object()
                .cloned()
                .expect("object"),
            )
            .expect("relayed");
        let results: Vec<HookResult> = stdouts
            .iter()
            .enumerate()
            .map(|(index, stdout)| {
                let run = HookRun {
                    outcome: crate::result::HookOutcome::Exited { code: 0 },
                    stdout: (*stdout).to_owned(),
                    stderr: String::new(),
                    duration: std::time::Duration::from_millis(1),
                };
                let entry = codex_entry(HookEventName::BeforeTool, &format!("h{index}"));
                Codex.hook_result(&entry, run, &relayed.input)
            })
            .collect();
        let merged = Codex.aggregate(HookEventName::BeforeTool, &results, &relayed.input);
        Codex.relay_answer(&relayed, merged.final_output.as_ref(), &merged.errors)
    }

    #[test]
    fn codex_hooks_are_merged_and_read_as_codex_reads_them() {
        let deny = |reason: &str| {
            json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                "permissionDecision": "deny", "permissionDecisionReason": reason}})
            .to_string()
        };
        let rewrite = |decision: Option<&str>| {
            let mut specific = json!({"hookEventName": "PreToolUse",
                "updatedInput": {"command": "echo rewritten"}});
            if let Some(decision) = decision {
                specific["permissionDecision"] = json!(decision);
            }
            json!({"hookSpecificOutput": specific}).to_string()
        };
        let (first, second) = (deny("first reason"), deny("second reason"));
        let (alone, approved, legacy) = (
            rewrite(None),
            rewrite(Some("allow")),
            json!({"decision": "approve", "hookSpecificOutput": {"hookEventName": "PreToolUse",
                "updatedInput": {"command": "echo rewritten"}}})
            .to_string(),
        );
        // (hooks' stdouts in declared order, the permissionDecision Codex reads, its reason,
        // the command it runs when rewritten)
        type Case<'a> = (
            Vec<&'a str>,
            Option<&'a str>,
            Option<&'a str>,
            Option<&'a str>,
        );
        let cases: [Case<'_>; 5] = [
            // Two denies: the first declared hook's reason, alone.
            (
                vec![&first, &second],
                Some("deny"),
                Some("first reason"),
                None,
            ),
            (
                vec![&second, &first],
                Some("deny"),
                Some("second reason"),
                None,
            ),
            // updatedInput without an allow: Codex ignores it, the command is not rewritten.
            (vec![&alone], None, None, None),
            (vec![&legacy], None, None, None),
            // With an allow it is applied.
            (vec![&approved], Some("allow"), None, Some("echo rewritten")),
        ];
        for (stdouts, decision, reason, command) in cases {
            let answer = codex_hears(&stdouts);
            let heard: Value = if answer.stdout.trim().is_empty() {
                json!({})
            } else {
                serde_json::from_str(&answer.stdout).expect("json")
            };
            let specific = &heard["hookSpecificOutput"];
            assert_eq!(
                specific["permissionDecision"].as_str(),
                decision,
                "{stdouts:?}: {heard}"
            );
            assert_eq!(
                specific["permissionDecisionReason"].as_str(),
                reason,
                "{stdouts:?}: {heard}"
            );
            assert_eq!(
                specific["updatedInput"]["command"].as_str(),
                command,
                "{stdouts:?}: {heard}"
            );
            assert_eq!(answer.exit_code, 0, "{stdouts:?}");
        }
    }

    #[test]
    fn permission_requests_keep_codex_tool_names() {
        let relayed = Codex
            .relay_input(
                "PermissionRequest",
                json!({"session_id": "s", "cwd": "/w", "tool_name": "Bash",
                    "tool_input": {"command": "ls"}})
                .as_object()
                .cloned()
                .expect("object"),
            )
            .expect("relayed");
        assert_eq!(relayed.input["tool_name"], "Bash");
        assert!(relayed.input.get("codex_tool_name").is_none());
    }

    #[test]
    fn relay_matchers_select_only_the_tools_the_hooks_select() {
        let permission_request = crate::dialect::claude::claude_own_event("PermissionRequest")
            .expect("Claude Code's event");
        let some = |m: &str| Some(m.to_owned());
        // (event, hooks' matchers, relay entry's matcher)
        let cases = [
            (
                HookEventName::BeforeTool,
                vec![some("^run_shell_command$")],
                Some("Bash"),
            ),
            (
                HookEventName::BeforeTool,
                vec![some("run_shell_command"), some("^(?:replace|write_file)$")],
                Some("Bash|apply_patch"),
            ),
            (
                HookEventName::AfterTool,
                vec![some("^mcp_gh_issue$")],
                Some("mcp__gh__issue"),
            ),
            // A pattern, or a hook for every tool: every call is relayed, and the daemon,
            // whose plan is empty for the rest, answers them as no hook would.
            (HookEventName::BeforeTool, vec![some("^run_.*")], None),
            (
                HookEventName::BeforeTool,
                vec![some("^run_shell_command$"), None],
                None,
            ),
            (
                HookEventName::Host(permission_request),
                vec![some("^Bash$")],
                Some("Bash"),
            ),
            (
                HookEventName::Host(permission_request),
                vec![some("Ba")],
                None,
            ),
            (HookEventName::AfterAgent, vec![some("x")], None),
        ];
        for (event, matchers, expected) in cases {
            assert_eq!(
                Codex.relay_matcher(event, &matchers).as_deref(),
                expected,
                "{event:?} {matchers:?}"
            );
        }
        // The SessionEnd entry says the timeout Codex gives it.
        assert_eq!(
            Codex.relay_handler("SessionEnd", "c", 610_000)["timeout"],
            3
        );
        assert_eq!(
            Codex.relay_handler("PreToolUse", "c", 610_000)["timeout"],
            610
        );
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

    /// The trust records' file: beside the user's `hooks.json`; for a project's, the user's
    /// Codex directory from the environment passed in (the core reads none of its own).
    #[test]
    fn companion_files_come_from_the_environment_given() {
        let home = Path::new("/home/u");
        let none = |_: &str| None;
        let set = |name: &str| (name == "CODEX_HOME").then(|| "/c".to_owned());
        type Var<'a> = &'a dyn Fn(&str) -> Option<String>;
        let cases: [(&str, Var<'_>, &str); 4] = [
            (
                "/home/u/.codex/hooks.json",
                &none,
                "/home/u/.codex/config.toml",
            ),
            ("/c/hooks.json", &set, "/c/config.toml"),
            ("/p/.codex/hooks.json", &none, "/home/u/.codex/config.toml"),
            ("/p/.codex/hooks.json", &set, "/c/config.toml"),
        ];
        for (settings, var, expected) in cases {
            let env = HomeEnv { home, var };
            assert_eq!(
                Codex.companion_files(Path::new(settings), &env),
                vec![PathBuf::from(expected)],
                "{settings}"
            );
        }
    }
}
