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

pub use answer::{copilot_answer_for_own_event, copilot_answer_from_claude, copilot_run_as_claude};
pub use names::{
    COPILOT_EVENTS, COPILOT_OWN_EVENTS, claude_event_to_copilot, copilot_event_to_claude,
    copilot_event_to_hookd, copilot_own_event, copilot_tool_to_claude,
};
pub use payload::{claude_input_to_copilot, copilot_input_to_claude, copilot_timestamp};

use super::{
    Conversion, DialectError, HomeEnv, Host, HostAnswer, HostFiles, HostRelay, HostRun, Purpose,
    RelayInput,
};
use crate::aggregate::Aggregate;
use crate::command::CommandVars;
use crate::event::{HookEventName, HostEventSpec};
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
/// else the firing's own; for Copilot's own events, their own name.
fn claude_event_of(
    config: &HookConfig,
    event: HookEventName,
    input: &Map<String, Value>,
) -> String {
    if let Some(own) = event
        .host_only()
        .filter(|own| own.host() == <Copilot as Host>::NAME)
    {
        return own.as_str().to_owned();
    }
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

    fn runs_layer(&self, source: Source, file: LayerFile) -> bool {
        // Copilot's own hook files read as layers (`hookd --copilot-settings`), and a
        // repository's Claude Code settings (`hookd --claude-settings`, project files only):
        // Copilot ran their hooks itself before it relayed the event.
        file == LayerFile::Host(<Self as Host>::NAME)
            || (source == Source::Project && file == crate::dialect::Dialect::CLAUDE.layer_file())
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
        let mut copilot = claude_input_to_copilot(&claude);
        // Copilot names the transcript on its stop events only (hookd's base field is on
        // every event, often empty).
        let event_name = claude.get("hook_event_name").and_then(Value::as_str);
        let has_transcript = matches!(event_name, Some("Stop" | "SubagentStart" | "SubagentStop"));
        if !has_transcript || copilot.get("transcriptPath") == Some(&Value::from("")) {
            copilot.shift_remove("transcriptPath");
        }
        // Copilot's `timestamp` is epoch milliseconds, hookd's an ISO text.
        if let Some(millis) = payload
            .get("timestamp")
            .and_then(Value::as_str)
            .and_then(copilot_timestamp)
        {
            copilot.insert("timestamp".to_owned(), Value::from(millis));
        }
        Some(copilot)
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

    fn own_events(&self) -> &'static [HostEventSpec] {
        &COPILOT_OWN_EVENTS
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
        let unknown = || DialectError::UnknownEvent {
            host: <Self as Host>::PRODUCT,
            event: host_event.to_owned(),
        };
        let (event, input) = match copilot_event_to_claude(host_event) {
            Some(claude_event) => {
                let claude = copilot_input_to_claude(claude_event, &host_input)?;
                crate::dialect::claude_input_to_gemini(&claude)?
            }
            None => {
                // Copilot's own events keep their fields, under Claude's spelling.
                let own = copilot_own_event(host_event).ok_or_else(unknown)?;
                let input = copilot_input_to_claude(own.as_str(), &host_input)?;
                (HookEventName::Host(own), input)
            }
        };
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
        let Some(claude_event) = copilot_event_to_claude(&event.host_event) else {
            return copilot_answer_for_own_event(&event.host_event, final_output, errors);
        };
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

    fn relay_matcher(&self, event: HookEventName, matchers: &[Option<String>]) -> Option<String> {
        // Copilot matches a regular expression against its own tool name, whole (1.0.36 on):
        // the Claude names the hooks' matchers select, in Copilot's spelling. Anything that
        // is not a list of names relays every call.
        let claude = if matches!(event, HookEventName::BeforeTool | HookEventName::AfterTool) {
            crate::dialect::claude_matcher(matchers)
        } else if event
            .host_only()
            .is_some_and(|own| own.host() != <Self as Host>::NAME)
            && event.matcher_field() == Some("tool_name")
        {
            crate::dialect::claude_only_matcher(matchers)
        } else {
            None
        }?;
        if claude == "*" {
            return None;
        }
        let mut names: Vec<String> = Vec::new();
        for name in claude.split('|') {
            let copilot = names::claude_tool_to_copilot(name).into_owned();
            if copilot.is_empty()
                || !copilot
                    .chars()
                    .all(|c| c.is_alphanumeric() || "_-".contains(c))
            {
                return None;
            }
            if !names.contains(&copilot) {
                names.push(copilot);
            }
        }
        Some(names.join("|"))
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
                    if let Some(line) = handler.shift_remove("bash") {
                        handler.entry("command").or_insert(line);
                    }
                    // `exec` with `args` runs without a shell: Claude Code's exec form.
                    if !handler.contains_key("command")
                        && let Some(program) = handler.shift_remove("exec")
                    {
                        handler.insert("command".to_owned(), program);
                    }
                    // Copilot's `type` is optional for a command handler.
                    if !handler.contains_key("type") && handler.contains_key("command") {
                        handler.insert("type".to_owned(), Value::from("command"));
                    }
                    if let Some(seconds) = handler.shift_remove("timeoutSec") {
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

    fn own(name: &str) -> HookEventName {
        name.parse().unwrap_or(HookEventName::Notification)
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
            (
                "permissionRequest",
                json!({"hookName": "permissionRequest", "sessionId": "s", "cwd": "/p", "toolName": "bash",
                       "toolInput": {"command": "touch m"}, "permissionSuggestions": []}),
                own("PermissionRequest"),
                Some("Bash"),
            ),
            (
                "postToolUseFailure",
                json!({"sessionId": "s", "cwd": "/p", "toolName": "view", "toolArgs": {"path": "m"},
                       "error": "Path does not exist"}),
                own("PostToolUseFailure"),
                Some("Read"),
            ),
            (
                "subagentStart",
                json!({"sessionId": "s", "cwd": "/p", "agentName": "task", "agentId": "a"}),
                own("SubagentStart"),
                None,
            ),
            (
                "subagentStop",
                json!({"sessionId": "s", "cwd": "/p", "agentName": "task", "response": "done",
                       "stopReason": "end_turn", "stop_hook_active": false}),
                HookEventName::AfterAgent,
                None,
            ),
            (
                "preCompact",
                json!({"sessionId": "s", "cwd": "/p", "trigger": "auto"}),
                HookEventName::PreCompress,
                None,
            ),
            (
                "notification",
                json!({"sessionId": "s", "cwd": "/p", "message": "m", "hook_event_name": "Notification",
                       "notification_type": "permission_prompt"}),
                HookEventName::Notification,
                None,
            ),
            (
                "userPromptTransformed",
                json!({"sessionId": "s", "cwd": "/p", "prompt": "hi", "transformedPrompt": "<t/> hi"}),
                own("userPromptTransformed"),
                None,
            ),
            (
                "errorOccurred",
                json!({"sessionId": "s", "cwd": "/p", "errorContext": "model_call", "recoverable": true,
                       "error": {"message": "m"}}),
                own("errorOccurred"),
                None,
            ),
            (
                "preMcpToolCall",
                json!({"sessionId": "s", "cwd": "/p", "serverName": "gh", "toolName": "view",
                       "arguments": {}}),
                own("preMcpToolCall"),
                Some("view"),
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
        // Every Copilot event is relayed; Claude Code's names are not Copilot's.
        assert_eq!(Copilot.events().len(), 15);
        for unrelayed in ["PreToolUse", "Stop", "sessionStarted"] {
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
        copilot_hears_on("preToolUse", pre_tool_use("ls"), runs)
    }

    /// What Copilot hears on `event` with this stdin when Copilot-dialect hooks run with these
    /// outcomes and stdouts.
    fn copilot_hears_on(
        event: &str,
        stdin: Map<String, Value>,
        runs: &[(HookOutcome, &str)],
    ) -> Value {
        let relayed = Copilot.relay_input(event, stdin);
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
                let entry = copilot_entry(relayed.event, &format!("h{index}"));
                Copilot.hook_result(&entry, run, &relayed.input)
            })
            .collect();
        let merged = Copilot.aggregate(relayed.event, &results, &relayed.input);
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

    /// (event, stdin, runs, what Copilot hears)
    type EventCase = (
        &'static str,
        Map<String, Value>,
        Vec<(HookOutcome, &'static str)>,
        Value,
    );

    /// (event, hookd matchers, the relay entry's matcher)
    type MatcherCase = (HookEventName, Vec<Option<String>>, Option<&'static str>);

    #[test]
    fn every_copilot_event_answers_as_copilot_would() {
        let exited = |code| HookOutcome::Exited { code };
        let stdin = |value: Value| object(value);
        let permission = || {
            stdin(
                json!({"hookName": "permissionRequest", "sessionId": "s", "cwd": "/p",
                         "toolName": "bash", "toolInput": {"command": "rm -rf x"},
                         "permissionSuggestions": []}),
            )
        };
        let post = || {
            stdin(
                json!({"sessionId": "s", "cwd": "/p", "toolName": "bash", "toolArgs": {"command": "ls"},
                         "toolResult": {"resultType": "success", "textResultForLlm": "a b"}}),
            )
        };
        // (event, stdin, runs, what Copilot hears), each observed of Copilot CLI 1.0.102 with
        // the same hook in its own file.
        let cases: Vec<EventCase> = vec![
            (
                "permissionRequest",
                permission(),
                vec![(exited(0), r#"{"behavior":"deny","message":"no rm"}"#)],
                json!({"behavior": "deny", "message": "no rm"}),
            ),
            (
                "permissionRequest",
                permission(),
                vec![(exited(0), "")],
                Value::Null,
            ),
            // Copilot denies on exit 2, any other failure and output it cannot read.
            (
                "permissionRequest",
                permission(),
                vec![(exited(2), "")],
                json!({"behavior": "deny", "message": "Permission denied by hook."}),
            ),
            (
                "permissionRequest",
                permission(),
                vec![(exited(1), "")],
                json!({"behavior": "deny", "message": "Permission request hook failed"}),
            ),
            (
                "permissionRequest",
                permission(),
                vec![(exited(0), "not json")],
                json!({"behavior": "deny", "message": "Permission request hook failed"}),
            ),
            (
                "permissionRequest",
                permission(),
                vec![
                    (exited(0), r#"{"behavior":"allow"}"#),
                    (exited(0), r#"{"behavior":"deny","message":"no"}"#),
                ],
                json!({"behavior": "deny", "message": "no"}),
            ),
            (
                "postToolUse",
                post(),
                vec![(
                    exited(0),
                    r#"{"modifiedResult":{"resultType":"success","textResultForLlm":"[redacted]"}}"#,
                )],
                json!({"modifiedResult": {"resultType": "success", "textResultForLlm": "[redacted]"}}),
            ),
            (
                "postToolUseFailure",
                stdin(
                    json!({"sessionId": "s", "cwd": "/p", "toolName": "view", "toolArgs": {"path": "m"},
                             "error": "Path does not exist"}),
                ),
                vec![(exited(0), r#"{"additionalContext":"try ls first"}"#)],
                json!({"additionalContext": "try ls first"}),
            ),
            (
                "subagentStart",
                stdin(json!({"sessionId": "s", "cwd": "/p", "agentName": "task", "agentId": "a"})),
                vec![(exited(0), r#"{"additionalContext":"be brief"}"#)],
                json!({"additionalContext": "be brief"}),
            ),
            (
                "subagentStop",
                stdin(
                    json!({"sessionId": "s", "cwd": "/p", "agentName": "task", "agentId": "a",
                             "response": "done", "stopReason": "end_turn", "stop_hook_active": false}),
                ),
                vec![(
                    exited(0),
                    r#"{"decision":"block","reason":"run the tests too"}"#,
                )],
                json!({"decision": "block", "reason": "run the tests too"}),
            ),
            (
                "userPromptTransformed",
                stdin(json!({"sessionId": "s", "cwd": "/p", "prompt": "hi",
                             "transformedPrompt": "<t/> hi"})),
                vec![(
                    exited(0),
                    r#"{"modifiedTransformedPrompt":"<t/> hi, briefly"}"#,
                )],
                json!({"modifiedTransformedPrompt": "<t/> hi, briefly"}),
            ),
            // Exit 2 blocks nothing on Copilot's own events.
            (
                "userPromptTransformed",
                stdin(json!({"sessionId": "s", "cwd": "/p", "prompt": "hi",
                             "transformedPrompt": "<t/> hi"})),
                vec![(exited(2), "")],
                Value::Null,
            ),
            (
                "errorOccurred",
                stdin(
                    json!({"sessionId": "s", "cwd": "/p", "errorContext": "model_call",
                             "recoverable": true, "error": {"message": "m"}}),
                ),
                vec![(
                    exited(0),
                    r#"{"errorHandling":"retry","retryCount":2,"userNotification":"retrying","other":1}"#,
                )],
                json!({"errorHandling": "retry", "retryCount": 2, "userNotification": "retrying"}),
            ),
            (
                "errorOccurred",
                stdin(
                    json!({"sessionId": "s", "cwd": "/p", "errorContext": "model_call",
                             "recoverable": true, "error": {"message": "m"}}),
                ),
                vec![(exited(0), r#"{"errorHandling":"explode"}"#)],
                Value::Null,
            ),
        ];
        for (event, stdin, runs, expected) in cases {
            let heard = copilot_hears_on(event, stdin, &runs);
            assert_eq!(heard, expected, "{event} {runs:?}");
        }
    }

    #[test]
    fn copilot_hooks_get_epoch_millisecond_timestamps() {
        let mut payload = pre_tool_use("ls");
        payload.insert("hook_event_name".to_owned(), json!("BeforeTool"));
        payload.insert("tool_name".to_owned(), json!("run_shell_command"));
        payload.insert("timestamp".to_owned(), json!("2026-11-29T03:10:02.429Z"));
        let hook = Copilot.hook_payload(HookEventName::BeforeTool, &payload);
        assert_eq!(
            hook.and_then(|hook| hook.get("timestamp").cloned()),
            Some(json!(1_795_921_802_429_u64))
        );
    }

    #[test]
    fn relay_matchers_name_copilot_tools() {
        let some = |text: &str| Some(text.to_owned());
        // (event, hookd matchers, the relay entry's matcher)
        let cases: Vec<MatcherCase> = vec![
            (
                HookEventName::BeforeTool,
                vec![some("run_shell_command")],
                Some("bash"),
            ),
            (
                HookEventName::AfterTool,
                vec![some("write_file"), some("read_file")],
                Some("create|view"),
            ),
            (HookEventName::BeforeTool, vec![None], None),
            (HookEventName::BeforeTool, vec![some("run_.*")], None),
            // A tool hookd does not know by name: every call is relayed.
            (HookEventName::BeforeTool, vec![some("sql")], None),
            (own("PermissionRequest"), vec![some("^Bash$")], Some("bash")),
            (own("PermissionRequest"), vec![some("Ba.*")], None),
            (HookEventName::BeforeAgent, vec![some("x")], None),
            (own("preMcpToolCall"), vec![some("^view$")], None),
        ];
        for (event, matchers, expected) in cases {
            assert_eq!(
                Copilot.relay_matcher(event, &matchers).as_deref(),
                expected,
                "{event:?} {matchers:?}"
            );
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
        // The other guard point, Copilot's permission request, in its own words.
        let relayed = Copilot.relay_input(
            "permissionRequest",
            object(json!({"sessionId": "s", "cwd": "/p", "toolName": "bash",
                          "toolInput": {"command": "rm -rf x"}})),
        );
        let Ok(relayed) = relayed else {
            panic!("{relayed:?}");
        };
        let answer = Copilot.relay_answer(&relayed, Some(&deny), &[]);
        let printed: Value = serde_json::from_str(&answer.stdout).unwrap_or_default();
        assert_eq!(
            printed,
            json!({"behavior": "deny", "message": "hookd is not running"})
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
    fn copilot_exec_handlers_and_untyped_handlers_convert() {
        let settings = json!({"version": 1, "hooks": {
            "preToolUse": [
                {"type": "command", "exec": "/opt/guard", "args": ["--strict", "a b"]},
                {"bash": "./untyped.sh"},
                {"type": "command", "powershell": "./guard.ps1"}
            ],
            "permissionRequest": [{"type": "command", "bash": "./ask.sh"}]
        }});
        let Some(conversion) = Copilot.convert_settings(&settings, Purpose::Layer) else {
            panic!("no conversion");
        };
        let commands: Vec<String> = conversion
            .hooks
            .values()
            .filter_map(Value::as_array)
            .flatten()
            .filter_map(|definition| definition["hooks"].as_array())
            .flatten()
            .filter_map(|hook| hook["command"].as_str().map(str::to_owned))
            .collect();
        assert_eq!(commands.len(), 3, "{:?}", conversion.hooks);
        assert!(
            commands
                .iter()
                .any(|c| c.contains("/opt/guard") && c.contains("'a b'")),
            "{commands:?}"
        );
        assert!(commands.iter().any(|c| c == "./untyped.sh"), "{commands:?}");
        assert!(commands.iter().any(|c| c == "./ask.sh"), "{commands:?}");
        assert!(conversion.hooks.contains_key("PermissionRequest"));
        // A PowerShell-only handler cannot run here: it stays in Copilot's file.
        assert!(!commands.iter().any(|c| c.contains("ps1")), "{commands:?}");
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
            "userPromptTransformed stays in Copilot's file: {:?}",
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
