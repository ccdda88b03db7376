//! GitHub Copilot CLI's dialect: its events, tool names, stdin objects and answers, its hook
//! files, and its exit-code rules for hooks written in its dialect that hookd runs.
//!
//! Copilot CLI (checked with 1.0.102) runs the hooks of `$COPILOT_HOME/hooks/*.json` (by
//! default `~/.copilot/hooks/`), of a trusted repository's `.github/hooks/*.json`, of the
//! administrator's `/etc/github-copilot/policy.d/`, and those of the repository's
//! `.claude/settings.json` in Claude Code's own shape. Its events, payloads and answers are
//! camelCase; they are translated through their Claude Code counterparts ([`names`],
//! [`payload`]), which Copilot itself uses for `.claude/settings.json`, so hookd's Claude
//! machinery decides and [`answer`] says it in Copilot's fields. Timeouts are seconds
//! (`timeoutSec`). hookd writes its relay entries into a file of its own in Copilot's hooks
//! folders (`hookd.json`): every file there runs, so the user's other files keep running as
//! before, and the policy files are never written. Which of Copilot's files hookd itself reads
//! as layers (`hookd --copilot-settings`), which projects Copilot trusts, and what the
//! administrator's policy files say are [`files`].

pub mod answer;
pub mod files;
pub mod names;
pub mod payload;

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

pub use answer::{copilot_answer_from_claude, copilot_run_as_claude};
pub use names::{
    COPILOT_EVENTS, claude_event_to_copilot, copilot_event_to_claude, copilot_event_to_hookd,
    copilot_tool_to_claude,
};
pub use payload::{claude_input_to_copilot, copilot_input_to_claude};

use super::{
    Conversion, DialectError, HomeEnv, Host, HostAnswer, HostFiles, HostRelay, HostRun, Purpose,
    RelayInput,
};
use crate::aggregate::Aggregate;
use crate::command::CommandVars;
use crate::event::HookEventName;
use crate::model::{HookConfig, HookEntry, LayerFile, Source};
use crate::result::{HookResult, HookRun};

/// A command hook's timeout when it sets no `timeoutSec`, in seconds.
pub const COPILOT_DEFAULT_TIMEOUT_S: u64 = 30;

/// The name of the file hookd owns in Copilot CLI's hooks folders.
pub const COPILOT_RELAY_FILE: &str = "hookd.json";

/// The administrator's policy folder: read by Copilot CLI first, never written by hookd.
pub const COPILOT_POLICY_DIR: &str = "/etc/github-copilot/policy.d";

/// GitHub Copilot CLI.
#[derive(Debug, Clone, Copy)]
pub struct Copilot;

/// The user's Copilot directory: `COPILOT_HOME` when absolute, else `~/.copilot`.
fn copilot_home(env: &HomeEnv<'_>) -> PathBuf {
    (env.var)("COPILOT_HOME")
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute())
        .unwrap_or_else(|| env.home.join(".copilot"))
}

/// The Claude Code event a hookd firing is for a Copilot hook: the one its conversion recorded,
/// else the firing's own.
fn claude_event_of(
    config: &HookConfig,
    event: HookEventName,
    input: &Map<String, Value>,
) -> String {
    config
        .raw
        .get("claude_event")
        .and_then(Value::as_str)
        .or_else(|| crate::dialect::effective_claude_event(event, input))
        .unwrap_or_default()
        .to_owned()
}

/// Copilot's name of the tool of a hookd payload (`run_shell_command` → `bash`).
fn copilot_tool_of(input: &Map<String, Value>) -> Option<String> {
    let hookd = input.get("tool_name").and_then(Value::as_str)?;
    let claude = crate::dialect::gemini_tool_to_claude(hookd);
    Some(names::claude_tool_to_copilot(&claude).into_owned())
}

impl Host for Copilot {
    const NAME: &'static str = "copilot";
    const PRODUCT: &'static str = "Copilot CLI";
}

impl HostRun for Copilot {
    fn default_timeout_ms(&self) -> u64 {
        COPILOT_DEFAULT_TIMEOUT_S * 1000
    }

    fn hook_variables<'a>(&self, vars: &CommandVars<'a>) -> Vec<(&'static str, &'a str)> {
        // What Copilot CLI 1.0.102 sets for its command hooks (besides COPILOT_HOOK_DIR, the
        // folder of the hook's own file, which a hook in hookd's files does not have).
        vec![
            ("COPILOT_CLI", "1"),
            ("COPILOT_PROJECT_DIR", vars.project_dir),
            ("CLAUDE_PROJECT_DIR", vars.project_dir),
        ]
    }

    fn runs_layer(&self, _source: Source, file: LayerFile) -> bool {
        // Copilot's own hook files read as layers (`hookd --copilot-settings`): Copilot ran
        // their hooks itself before it relayed the event.
        file == LayerFile::Host(<Self as Host>::NAME)
    }

    fn aggregate(
        &self,
        event: HookEventName,
        results: &[HookResult],
        input: &Map<String, Value>,
    ) -> Aggregate {
        // The answer is made from Claude Code's, so the hooks merge as Claude Code merges them:
        // a deny wins.
        crate::dialect::aggregate_claude(event, results, input)
    }

    fn hook_payload(
        &self,
        event: HookEventName,
        payload: &Map<String, Value>,
    ) -> Option<Map<String, Value>> {
        let claude = crate::dialect::gemini_payload_to_claude(event, payload);
        Some(claude_input_to_copilot(&claude))
    }

    fn hook_result(
        &self,
        entry: &HookEntry,
        run: HookRun,
        input: &Map<String, Value>,
    ) -> HookResult {
        let claude_event = claude_event_of(&entry.config, entry.event, input);
        let tool = copilot_tool_of(input);
        let run = copilot_run_as_claude(&claude_event, tool.as_deref(), run);
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
}

impl HostRelay for Copilot {
    fn events(&self) -> Vec<&'static str> {
        COPILOT_EVENTS.iter().map(|(copilot, _)| *copilot).collect()
    }

    fn event_to_hookd(&self, host_event: &str) -> Option<HookEventName> {
        copilot_event_to_hookd(host_event)
    }

    fn project_dir_var(&self) -> Option<&'static str> {
        Some("COPILOT_PROJECT_DIR")
    }

    fn relay_input(
        &self,
        host_event: &str,
        host_input: Map<String, Value>,
    ) -> Result<RelayInput, DialectError> {
        let claude_event =
            copilot_event_to_claude(host_event).ok_or_else(|| DialectError::UnknownEvent {
                host: <Self as Host>::PRODUCT,
                event: host_event.to_owned(),
            })?;
        let claude = copilot_input_to_claude(claude_event, &host_input)?;
        let (event, input) = crate::dialect::claude_input_to_gemini(&claude)?;
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
        let claude_event = copilot_event_to_claude(&event.host_event).unwrap_or_default();
        // The stdin object was translated once already; a relay decision for an object that
        // could not be (the daemon never asked) still needs the event's name.
        let claude =
            copilot_input_to_claude(claude_event, &event.host_input).unwrap_or_else(|_| {
                let mut claude = Map::new();
                claude.insert("hook_event_name".to_owned(), Value::from(claude_event));
                claude
            });
        let answer = crate::dialect::answer_for_claude_input(&claude, final_output, errors);
        let tool = event.host_input.get("toolName").and_then(Value::as_str);
        copilot_answer_from_claude(&event.host_event, tool, &answer)
    }
}

impl HostFiles for Copilot {
    fn convert_settings(&self, settings: &Value, purpose: Purpose) -> Option<Conversion> {
        if purpose == Purpose::Layer
            && let Some(conversion) = files::disabled_file(settings)
        {
            return Some(conversion);
        }
        // Copilot's hooks read as Claude Code's (its events renamed, a bare handler as a
        // definition of its own), then keep speaking Copilot in hookd.
        let claude = copilot_hooks_as_claude(settings);
        let mut conversion = crate::dialect::convert_claude_settings(&claude, purpose);
        if purpose == Purpose::Layer {
            for hook in conversion
                .hooks
                .values_mut()
                .filter_map(Value::as_array_mut)
                .flatten()
                .filter_map(|definition| definition.get_mut("hooks")?.as_array_mut())
                .flatten()
                .filter_map(Value::as_object_mut)
            {
                if hook.get("dialect").and_then(Value::as_str) == Some("claude") {
                    hook.insert("dialect".to_owned(), Value::from(<Self as Host>::NAME));
                }
            }
        }
        Some(conversion)
    }

    fn has_layer_files(&self) -> bool {
        true
    }

    fn user_layer_files(&self, env: &HomeEnv<'_>) -> Vec<PathBuf> {
        // Inline `hooks` of its user settings (checked with 1.0.102: run; those of
        // `config.json` are not).
        vec![copilot_home(env).join("settings.json")]
    }

    fn project_layer_files(&self, project: &Path) -> Vec<PathBuf> {
        let dir = project.join(".github").join("copilot");
        vec![dir.join("settings.json"), dir.join("settings.local.json")]
    }

    fn user_layer_folders(&self, env: &HomeEnv<'_>) -> Vec<PathBuf> {
        vec![copilot_home(env).join("hooks")]
    }

    fn project_layer_folders(&self, project: &Path) -> Vec<PathBuf> {
        vec![project.join(".github").join("hooks")]
    }

    fn is_layer_folder_file(&self, name: &str) -> bool {
        files::is_copilot_hook_file(name)
    }

    fn project_trust_file(&self, env: &HomeEnv<'_>) -> Option<PathBuf> {
        Some(copilot_home(env).join("config.json"))
    }

    fn trusts_project(&self, project: &Path, trust_record: Option<&Value>) -> bool {
        files::copilot_trusts_project(project, trust_record)
    }

    fn relay_handler(&self, _host_event: &str, command: &str, timeout_ms: u64) -> Value {
        json!({
            "type": "command",
            "command": command,
            "timeoutSec": timeout_ms.div_ceil(1000).max(1),
        })
    }

    fn user_settings_file(&self, env: &HomeEnv<'_>) -> PathBuf {
        copilot_home(env).join("hooks").join(COPILOT_RELAY_FILE)
    }

    fn project_settings_file(&self, project: &Path) -> PathBuf {
        project
            .join(".github")
            .join("hooks")
            .join(COPILOT_RELAY_FILE)
    }

    fn pickup_note(&self) -> &'static str {
        "Copilot CLI reads its hook files when a session starts: restart running sessions. A \
         repository's .github/hooks/ runs only in a folder Copilot trusts (trustedFolders in \
         ~/.copilot/config.json)."
    }
}

/// A Copilot hooks file (`{"version": 1, "hooks": {...}}`) as Claude Code settings: Copilot's
/// events by their Claude names (others left out: hookd does not relay them, so Copilot keeps
/// running them), each bare handler as its own definition, `bash` as `command`, `timeoutSec`
/// as `timeout`, and a matcher's Copilot tool names by Claude's.
fn copilot_hooks_as_claude(settings: &Value) -> Value {
    let mut hooks = Map::new();
    let given = settings.get("hooks").and_then(Value::as_object);
    for (event, definitions) in given.into_iter().flatten() {
        let Some(claude_event) = copilot_event_to_claude(event) else {
            continue;
        };
        let definitions = definitions.as_array().into_iter().flatten();
        let converted: Vec<Value> = definitions
            .map(|definition| {
                let mut definition = definition.as_object().cloned().unwrap_or_default();
                if !definition.contains_key("hooks") {
                    // A bare handler.
                    definition = Map::from_iter([(
                        "hooks".to_owned(),
                        Value::Array(vec![Value::Object(definition)]),
                    )]);
                }
                if let Some(Value::String(matcher)) = definition.get("matcher").cloned() {
                    let names: Vec<String> = matcher
                        .split('|')
                        .map(|name| copilot_tool_to_claude(name).into_owned())
                        .collect();
                    definition.insert("matcher".to_owned(), Value::from(names.join("|")));
                }
                for handler in definition
                    .get_mut("hooks")
                    .and_then(Value::as_array_mut)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_object_mut)
                {
                    if let Some(line) = handler.remove("bash") {
                        handler.entry("command").or_insert(line);
                    }
                    if let Some(seconds) = handler.remove("timeoutSec") {
                        handler.entry("timeout").or_insert(seconds);
                    }
                }
                Value::Object(definition)
            })
            .collect();
        hooks.insert(claude_event.to_owned(), Value::Array(converted));
    }
    json!({ "hooks": hooks })
}

/// The Copilot CLI host end to end inside the core: its stdin objects as hookd events, hooks
/// written in its dialect run and merged, and what Copilot hears back.
#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::json;

    use super::*;
    use crate::result::HookOutcome;

    fn object(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    fn pre_tool_use(command: &str) -> Map<String, Value> {
        object(
            json!({"sessionId": "s", "timestamp": 1_u64, "cwd": "/p", "toolName": "bash",
            "toolArgs": {"command": command, "description": "d"}}),
        )
    }

    #[test]
    fn stdin_objects_become_hookd_events() {
        // (event, stdin, hookd event, hookd tool_name)
        let cases = [
            (
                "preToolUse",
                Value::Object(pre_tool_use("ls")),
                HookEventName::BeforeTool,
                Some("run_shell_command"),
            ),
            (
                "postToolUse",
                json!({"sessionId": "s", "cwd": "/p", "toolName": "view", "toolArgs": {"path": "/p/a"},
                       "toolResult": {"resultType": "success", "textResultForLlm": "x"}}),
                HookEventName::AfterTool,
                Some("read_file"),
            ),
            (
                "agentStop",
                json!({"sessionId": "s", "cwd": "/p", "stopReason": "end_turn", "stop_hook_active": false}),
                HookEventName::AfterAgent,
                None,
            ),
            (
                "userPromptSubmitted",
                json!({"sessionId": "s", "cwd": "/p", "prompt": "hi"}),
                HookEventName::BeforeAgent,
                None,
            ),
            (
                "sessionStart",
                json!({"sessionId": "s", "cwd": "/p", "source": "new", "initialPrompt": "hi"}),
                HookEventName::SessionStart,
                None,
            ),
            (
                "sessionEnd",
                json!({"sessionId": "s", "cwd": "/p", "reason": "complete"}),
                HookEventName::SessionEnd,
                None,
            ),
        ];
        for (event, stdin, expected, tool) in cases {
            let relayed = Copilot.relay_input(event, object(stdin));
            let Ok(relayed) = relayed else {
                panic!("{event}: {relayed:?}");
            };
            assert_eq!(relayed.event, expected, "{event}");
            assert_eq!(
                relayed.input.get("tool_name").and_then(Value::as_str),
                tool,
                "{event}"
            );
            assert_eq!(
                relayed.input.get("session_id"),
                Some(&json!("s")),
                "{event}"
            );
        }
        for unrelayed in [
            "userPromptTransformed",
            "permissionRequest",
            "PreToolUse",
            "errorOccurred",
        ] {
            assert!(
                Copilot.relay_input(unrelayed, Map::new()).is_err(),
                "{unrelayed}"
            );
        }
    }

    fn copilot_entry(event: HookEventName, name: &str) -> HookEntry {
        use crate::model::HookType;
        let mut raw = Map::new();
        raw.insert("dialect".to_owned(), json!("copilot"));
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
            origin: crate::model::Origin::default(),
            matcher: None,
            sequential: false,
            enabled: true,
            trust: crate::trust::HookTrust::NotRequired,
            builtin: None,
            identity: Default::default(),
        }
    }

    /// What Copilot hears on its `preToolUse` of `ls` when Copilot-dialect hooks run with these
    /// outcomes and stdouts (in declared order).
    fn copilot_hears(runs: &[(HookOutcome, &str)]) -> Value {
        let relayed = Copilot.relay_input("preToolUse", pre_tool_use("ls"));
        let Ok(relayed) = relayed else {
            panic!("{relayed:?}");
        };
        let results: Vec<HookResult> = runs
            .iter()
            .enumerate()
            .map(|(index, (outcome, stdout))| {
                let run = HookRun {
                    outcome: outcome.clone(),
                    stdout: (*stdout).to_owned(),
                    stderr: String::new(),
                    duration: std::time::Duration::from_millis(1),
                };
                let entry = copilot_entry(HookEventName::BeforeTool, &format!("h{index}"));
                Copilot.hook_result(&entry, run, &relayed.input)
            })
            .collect();
        let merged = Copilot.aggregate(HookEventName::BeforeTool, &results, &relayed.input);
        let answer = Copilot.relay_answer(&relayed, merged.final_output.as_ref(), &merged.errors);
        assert_eq!(answer.exit_code, 0, "{answer:?}");
        if answer.stdout.is_empty() {
            return Value::Null;
        }
        let mut printed: Value = serde_json::from_str(&answer.stdout).unwrap_or_default();
        // Hook errors are reported in the system message; the decision is what is compared.
        if let Value::Object(map) = &mut printed {
            map.remove("systemMessage");
        }
        printed
    }

    #[test]
    fn copilot_hooks_run_in_hookd_answer_as_copilot_would() {
        let exited = |code| HookOutcome::Exited { code };
        let deny = r#"{"permissionDecision":"deny","permissionDecisionReason":"no rm"}"#;
        let rewrite = r#"{"modifiedArgs":{"command":"echo safe","description":"d"}}"#;
        let cases: Vec<(Vec<(HookOutcome, &str)>, Value)> = vec![
            (
                vec![(exited(0), deny)],
                json!({"permissionDecision": "deny", "permissionDecisionReason": "no rm"}),
            ),
            (vec![(exited(0), "")], Value::Null),
            (vec![(exited(0), "not json")], Value::Null),
            // Copilot denies on any non-zero exit of a preToolUse hook.
            (
                vec![(exited(1), "")],
                json!({"permissionDecision": "deny", "permissionDecisionReason": "hook errored"}),
            ),
            (
                vec![(exited(2), "")],
                json!({"permissionDecision": "deny", "permissionDecisionReason": "hook exited with code 2"}),
            ),
            (
                vec![(HookOutcome::Signalled { signal: 9 }, "")],
                json!({"permissionDecision": "deny", "permissionDecisionReason": "hook errored"}),
            ),
            // A deny wins over another hook's rewrite.
            (
                vec![(exited(0), rewrite), (exited(0), deny)],
                json!({"permissionDecision": "deny", "permissionDecisionReason": "no rm"}),
            ),
            (
                vec![(exited(0), rewrite)],
                json!({"permissionDecision": "allow", "modifiedArgs": {"command": "echo safe", "description": "d"}}),
            ),
        ];
        for (runs, expected) in cases {
            let heard = copilot_hears(&runs);
            assert_eq!(heard, expected, "{runs:?}");
        }
    }

    #[test]
    fn hooks_get_copilot_payloads() {
        let relayed = Copilot.relay_input("preToolUse", pre_tool_use("ls"));
        let Ok(relayed) = relayed else {
            panic!("{relayed:?}");
        };
        let payload = Copilot.hook_payload(HookEventName::BeforeTool, &relayed.input);
        let Some(payload) = payload else {
            panic!("no payload");
        };
        assert_eq!(payload.get("toolName"), Some(&json!("bash")));
        assert_eq!(
            payload.get("toolArgs"),
            Some(&json!({"command": "ls", "description": "d"}))
        );
        assert_eq!(payload.get("sessionId"), Some(&json!("s")));
        assert!(!payload.contains_key("hook_event_name"));
    }

    #[test]
    fn a_relay_decision_without_the_daemon_denies() {
        let relayed = Copilot.relay_input("preToolUse", pre_tool_use("rm -rf x"));
        let Ok(relayed) = relayed else {
            panic!("{relayed:?}");
        };
        let deny = json!({"decision": "deny", "reason": "hookd is not running"});
        let answer = Copilot.relay_answer(&relayed, Some(&deny), &[]);
        let printed: Value = serde_json::from_str(&answer.stdout).unwrap_or_default();
        assert_eq!(printed["permissionDecision"], json!("deny"));
        assert_eq!(
            printed["permissionDecisionReason"],
            json!("hookd is not running")
        );
    }

    #[test]
    fn files_and_relay_entries() {
        let home = Path::new("/home/me");
        let none = |_: &str| None;
        let set = |name: &str| (name == "COPILOT_HOME").then(|| "/srv/copilot".to_owned());
        let relative = |name: &str| (name == "COPILOT_HOME").then(|| "rel".to_owned());
        type Lookup<'a> = &'a dyn Fn(&str) -> Option<String>;
        let cases: [(Lookup<'_>, &str); 3] = [
            (&none, "/home/me/.copilot/hooks/hookd.json"),
            (&set, "/srv/copilot/hooks/hookd.json"),
            (&relative, "/home/me/.copilot/hooks/hookd.json"),
        ];
        for (var, expected) in cases {
            let file = Copilot.user_settings_file(&HomeEnv { home, var });
            assert_eq!(file, Path::new(expected));
        }
        assert_eq!(
            Copilot.project_settings_file(Path::new("/p")),
            Path::new("/p/.github/hooks/hookd.json")
        );
        assert_eq!(
            Copilot.relay_handler(
                "preToolUse",
                "hookd-relay preToolUse --dialect copilot",
                4500
            ),
            json!({"type": "command", "command": "hookd-relay preToolUse --dialect copilot", "timeoutSec": 5})
        );
    }

    #[test]
    fn copilot_hook_files_convert_with_copilot_dialect() {
        let settings = json!({"version": 1, "hooks": {
            "preToolUse": [
                {"type": "command", "bash": "./guard.sh", "timeoutSec": 5},
                {"matcher": "bash|view", "hooks": [{"type": "command", "command": "./g2.sh"}]}
            ],
            "userPromptTransformed": [{"type": "command", "bash": "./t.sh"}]
        }});
        let conversion = Copilot.convert_settings(&settings, Purpose::Layer);
        let Some(conversion) = conversion else {
            panic!("no conversion");
        };
        let before: Vec<&Value> = conversion
            .hooks
            .get("BeforeTool")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .collect();
        assert_eq!(before.len(), 2, "{:?}", conversion.hooks);
        assert_eq!(
            conversion.hooks.len(),
            1,
            "userPromptTransformed is not relayed: {:?}",
            conversion.hooks
        );
        let first = &before[0]["hooks"][0];
        assert_eq!(first["command"], json!("./guard.sh"));
        assert_eq!(first["timeout"], json!(5000));
        assert_eq!(first["dialect"], json!("copilot"));
        let matcher = before[1]["matcher"].as_str().unwrap_or_default();
        assert!(
            matcher.contains("run_shell_command") && matcher.contains("read_file"),
            "{matcher}"
        );
    }
}
