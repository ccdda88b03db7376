//! `hookctl migrate --from-claude`, run as the real binary on temp project directories (no
//! daemon needed): what it reads, what it writes, what it reports, and what it refuses.

// Test fixtures may unwrap: a failure here is a failed test, not a hookctl bug.
#![allow(clippy::unwrap_used)]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::run_hookctl;
use serde_json::{Value, json};

/// A temp project directory.
struct Project {
    dir: tempfile::TempDir,
}

impl Project {
    fn new() -> Project {
        Project {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("proj")
    }

    fn write(&self, relative: &str, text: &str) {
        let path = self.root().join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn read(&self, relative: &str) -> Option<String> {
        std::fs::read_to_string(self.root().join(relative)).ok()
    }

    fn gemini_settings(&self) -> Value {
        serde_json::from_str(&self.read(".gemini/settings.json").unwrap()).unwrap()
    }

    /// Runs hookctl in the project directory (the socket is never used).
    fn hookctl(&self, args: &[&str]) -> Output {
        std::fs::create_dir_all(self.root()).unwrap();
        let args: Vec<String> = args.iter().map(|arg| (*arg).to_owned()).collect();
        run_hookctl(
            &self.dir.path().join("unused.sock"),
            &self.root(),
            &args,
            "",
        )
    }

    fn migrate(&self, extra: &[&str]) -> (i32, String, String) {
        let mut args = vec!["migrate", "--from-claude"];
        args.extend_from_slice(extra);
        let output = self.hookctl(&args);
        (
            output.status.code().unwrap(),
            String::from_utf8(output.stdout).unwrap(),
            String::from_utf8(output.stderr).unwrap(),
        )
    }
}

const CLAUDE_SETTINGS: &str = r#"{
  // Claude Code's project settings
  "permissions": {"allow": ["Bash(npm test)"]},
  "hooks": {
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [
        {"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.sh", "timeout": 30},
        {"type": "prompt", "prompt": "Is this command safe? $ARGUMENTS"}
      ]},
      {"matcher": "Edit|MultiEdit|Write", "hooks": [{"type": "command", "command": "npx prettier --write"}]}
    ],
    "SubagentStop": [{"hooks": [{"type": "command", "command": "./sub.sh"}]}],
    "PermissionRequest": [{"hooks": [{"type": "command", "command": "./perm.sh"}]}]
  }
}"#;

const CLAUDE_LOCAL: &str = r#"{
  "hooks": {
    "Stop": [{"hooks": [{"type": "command", "command": "./stop.sh", "timeout": 1.5}]}],
    "SessionStart": [{"matcher": "startup|resume", "hooks": [{"type": "command", "command": "./ctx.sh"}]}]
  }
}"#;

const GEMINI_SETTINGS: &str = "{\n  // my Gemini settings\n  \"theme\": \"dark\",\n  \"hooks\": {\n    \"AfterTool\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"./log.sh\"}]}]\n  },\n  \"model\": {\"name\": \"m\"}\n}\n";

fn expected_hooks() -> Value {
    json!({
        "AfterTool": [{"hooks": [{"type": "command", "command": "./log.sh"}]}],
        "BeforeTool": [
            {"matcher": "^run_shell_command$", "hooks": [
                {"type": "command", "command": "\"${GEMINI_PROJECT_DIR}\"/.claude/hooks/guard.sh", "timeout": 30000}
            ]},
            {"matcher": "^(?:replace|write_file)$", "hooks": [{"type": "command", "command": "npx prettier --write"}]}
        ],
        "AfterAgent": [
            {"hooks": [{"type": "command", "command": "./sub.sh"}]},
            {"hooks": [{"type": "command", "command": "./stop.sh", "timeout": 1500}]}
        ],
        "SessionStart": [
            {"matcher": "startup", "hooks": [{"type": "command", "command": "./ctx.sh"}]},
            {"matcher": "resume", "hooks": [{"type": "command", "command": "./ctx.sh"}]}
        ]
    })
}

#[test]
fn migrates_both_claude_files_into_the_project_settings() {
    let project = Project::new();
    project.write(".claude/settings.json", CLAUDE_SETTINGS);
    project.write(".claude/settings.local.json", CLAUDE_LOCAL);
    project.write(".gemini/settings.json", GEMINI_SETTINGS);

    let (code, stdout, stderr) = project.migrate(&[]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert_eq!(
        stdout,
        "Reading .claude/settings.json (3 event(s))\n\
         Reading .claude/settings.local.json (2 event(s))\n\
         Migrating 5 Claude Code hook event(s): 6 definition(s) for 3 Gemini CLI event(s)...\n\
         Not migrated (2):\n\
         \x20 .claude/settings.json: hooks.PreToolUse[0].hooks[1]: Claude Code's \"prompt\" hooks have no counterpart: Gemini CLI and hookd run only command hooks\n\
         \x20 .claude/settings.json: hooks.PermissionRequest: Gemini CLI has no counterpart of Claude Code's PermissionRequest event\n\
         Migrated with a change (1):\n\
         \x20 .claude/settings.json: hooks.SubagentStop: Gemini CLI has no subagent events: these hooks run as AfterAgent hooks, when the main agent finishes\n\
         ✓ Hooks successfully migrated to .gemini/settings.json\n\
         Review them before use: they now receive Gemini CLI's events, tool names and input fields, and Gemini CLI reads their exit codes and output by its own rules (see docs/dialects.md in hookd).\n"
    );

    let settings = project.gemini_settings_jsonc();
    assert_eq!(settings["hooks"], expected_hooks());
    // Everything else in the file is kept, comments included.
    assert_eq!(settings["theme"], json!("dark"));
    assert_eq!(settings["model"], json!({"name": "m"}));
    let text = project.read(".gemini/settings.json").unwrap();
    assert!(
        text.starts_with("{\n  // my Gemini settings\n  \"theme\": \"dark\",\n"),
        "{text}"
    );
    assert!(
        text.ends_with("  \"model\": {\"name\": \"m\"}\n}\n"),
        "{text}"
    );
    // The Claude files are untouched.
    assert_eq!(
        project.read(".claude/settings.json").unwrap(),
        CLAUDE_SETTINGS
    );

    // The result is valid Gemini settings.
    let validated = project.hookctl(&["validate", ".gemini/settings.json"]);
    assert!(validated.status.success(), "{validated:?}");
    let report = String::from_utf8(validated.stdout).unwrap();
    assert!(
        report.ends_with(": 7 hook(s), 0 error(s), 0 warning(s)\n"),
        "{report}"
    );

    // Running it again adds nothing.
    let (code, stdout, _) = project.migrate(&[]);
    assert_eq!(code, 0);
    assert!(
        stdout.ends_with(
            ".gemini/settings.json already has all 6 migrated definition(s); nothing to write.\n"
        ),
        "{stdout}"
    );
    assert_eq!(project.read(".gemini/settings.json").unwrap(), text);
}

impl Project {
    /// The Gemini settings file parsed as JSON with comments.
    fn gemini_settings_jsonc(&self) -> Value {
        hookd_core::jsonc::parse(&self.read(".gemini/settings.json").unwrap()).unwrap()
    }
}

#[test]
fn creates_the_gemini_settings_file_and_reads_the_local_file_alone() {
    let project = Project::new();
    project.write(".claude/settings.local.json", CLAUDE_LOCAL);
    let (code, stdout, stderr) = project.migrate(&[]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        stdout.starts_with("Reading .claude/settings.local.json (2 event(s))\n"),
        "{stdout}"
    );
    assert_eq!(
        project.gemini_settings(),
        json!({"hooks": {
            "AfterAgent": [{"hooks": [{"type": "command", "command": "./stop.sh", "timeout": 1500}]}],
            "SessionStart": [
                {"matcher": "startup", "hooks": [{"type": "command", "command": "./ctx.sh"}]},
                {"matcher": "resume", "hooks": [{"type": "command", "command": "./ctx.sh"}]}
            ]
        }})
    );
    // No temporary file is left behind.
    let names: Vec<String> = std::fs::read_dir(project.root().join(".gemini"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["settings.json"]);
}

#[test]
fn dry_run_shows_the_result_and_writes_nothing() {
    let project = Project::new();
    project.write(".claude/settings.json", CLAUDE_SETTINGS);
    project.write(".gemini/settings.json", GEMINI_SETTINGS);
    let (code, stdout, stderr) = project.migrate(&["--dry-run"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert_eq!(
        project.read(".gemini/settings.json").unwrap(),
        GEMINI_SETTINGS
    );
    let (_, shown) = stdout
        .split_once("Dry run: .gemini/settings.json was not changed. It would read:\n")
        .unwrap();
    let shown = hookd_core::jsonc::parse(shown).unwrap();
    assert_eq!(shown["theme"], json!("dark"));
    assert_eq!(
        shown["hooks"]["BeforeTool"][0]["hooks"][0]["timeout"],
        json!(30000)
    );
    assert!(!stdout.contains("successfully"), "{stdout}");
}

#[test]
fn cwd_selects_the_project() {
    let project = Project::new();
    project.write(".claude/settings.local.json", CLAUDE_LOCAL);
    let elsewhere = project.dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let root = project.root().display().to_string();
    let args: Vec<String> = ["migrate", "--from-claude", "--cwd", &root]
        .iter()
        .map(|arg| (*arg).to_owned())
        .collect();
    let output = run_hookctl(
        &project.dir.path().join("unused.sock"),
        &elsewhere,
        &args,
        "",
    );
    assert!(output.status.success(), "{output:?}");
    assert!(project.read(".gemini/settings.json").is_some());
    assert!(!elsewhere.join(".gemini").exists());
}

/// (files, exit code, stdout or stderr must contain, the Gemini file afterwards)
type FailureCase = (&'static [(&'static str, &'static str)], i32, &'static str);

#[test]
fn refusals_and_nothing_to_do() {
    let cases: Vec<FailureCase> = vec![
        (
            &[],
            1,
            "No Claude Code settings found in .claude directory. Expected settings.json or settings.local.json",
        ),
        (
            &[(".claude/settings.json", "{\"hooks\": ")],
            1,
            "Error reading ",
        ),
        (
            &[(".claude/settings.json", "[1]")],
            1,
            "the file is not a JSON object",
        ),
        (
            &[(".claude/settings.json", "{\"model\": \"x\"}")],
            0,
            "No hooks found in Claude Code settings to migrate.",
        ),
        (
            &[(".claude/settings.json", "{\"hooks\": {}}")],
            0,
            "No hooks found in Claude Code settings to migrate.",
        ),
        (
            &[(
                ".claude/settings.json",
                "{\"hooks\": {\"Stop\": [{\"hooks\": [{\"type\": \"prompt\", \"prompt\": \"done?\"}]}]}}",
            )],
            1,
            "Nothing was migrated; .gemini/settings.json was not changed.",
        ),
        // hookd's own relay wiring is not a hook to migrate.
        (
            &[(
                ".claude/settings.json",
                "{\"hooks\": {\"PreToolUse\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"hookctl relay PreToolUse --dialect claude\"}]}]}}",
            )],
            1,
            "this is hookd's relay wiring for Claude Code",
        ),
        // A Gemini settings file that is not an object is never rewritten.
        (
            &[
                (
                    ".claude/settings.json",
                    "{\"hooks\": {\"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"x\"}]}]}}",
                ),
                (".gemini/settings.json", "[]"),
            ],
            1,
            "the file is not a JSON object",
        ),
    ];
    for (files, code, message) in cases {
        let project = Project::new();
        for (path, text) in files {
            project.write(path, text);
        }
        let before = project.read(".gemini/settings.json");
        let (got, stdout, stderr) = project.migrate(&[]);
        assert_eq!(got, code, "{files:?}: {stdout}{stderr}");
        assert!(
            stdout.contains(message) || stderr.contains(message),
            "{files:?}: {stdout}{stderr}"
        );
        assert_eq!(project.read(".gemini/settings.json"), before, "{files:?}");
    }

    // Without --from-claude there is nothing to migrate from.
    let project = Project::new();
    let output = project.hookctl(&["migrate"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--from-claude"));
}

/// The files' paths are reported relative to the project, never as this machine's paths.
#[test]
fn reports_name_project_relative_files() {
    let project = Project::new();
    project.write(".claude/settings.json", CLAUDE_SETTINGS);
    let (_, stdout, _) = project.migrate(&["--dry-run"]);
    let root = project.root();
    let root: &Path = &root;
    assert!(!stdout.contains(&root.display().to_string()), "{stdout}");
}
