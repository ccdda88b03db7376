//! `hookctl install`, `sync` and `uninstall` through the real binary, in a temp home: the
//! host's hooks move into hookd's file and relay entries take their place, only for the events
//! and tools hookd has hooks for, with timeouts under each hook's own default; uninstall
//! restores every file byte for byte when nothing changed, and otherwise gives back exactly
//! what each host's installs moved, whatever was added or edited on either side since
//! (table-driven sequences); `--dry-run` and a refused confirmation write nothing. The
//! installed relay entries then run the moved hooks through a daemon.

// Test fixtures may unwrap: a failure here is a failed test, not a daemon bug.
#![allow(clippy::unwrap_used)]

use crate::common;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use hookd_testkit::Hermetic;
use serde_json::{Value, json};

/// A temp home with a project, where hookctl runs.
pub(crate) struct Home {
    _dir: tempfile::TempDir,
    pub(crate) root: PathBuf,
    pub(crate) home: PathBuf,
    pub(crate) project: PathBuf,
}

/// What one hookctl run printed and exited with.
pub(crate) struct Run {
    pub(crate) ok: bool,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Home {
    pub(crate) fn new() -> Home {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let home = root.join("home");
        let project = root.join("work/project");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&project).unwrap();
        Home {
            _dir: dir,
            root,
            home,
            project,
        }
    }

    pub(crate) fn write(&self, path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// Runs hookctl in the project with this home and nothing else that moves its files.
    pub(crate) fn hookctl(&self, args: &[&str]) -> Run {
        self.hookctl_with_path(args, &std::env::var("PATH").unwrap_or_default())
    }

    /// Runs hookctl with `PATH` set to `path`.
    fn hookctl_with_path(&self, args: &[&str], path: &str) -> Run {
        let mut child = Command::new(env!("CARGO_BIN_EXE_hookctl"))
            .args(args)
            .env("PATH", path)
            .env(
                "GEMINI_CLI_SYSTEM_SETTINGS_PATH",
                self.root.join("etc/gemini-cli/settings.json"),
            )
            .current_dir(&self.project)
            .hermetic(&self.home)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Not a terminal, and an answer that would say yes if it were read.
        let _ = child.stdin.take().unwrap().write_all(b"y\n");
        let output = child.wait_with_output().unwrap();
        Run {
            ok: output.status.success(),
            stdout: String::from_utf8(output.stdout).unwrap(),
            stderr: String::from_utf8(output.stderr).unwrap(),
        }
    }

    pub(crate) fn ok(&self, args: &[&str]) -> String {
        let run = self.hookctl(args);
        assert!(run.ok, "{args:?}: {}{}", run.stdout, run.stderr);
        run.stdout
    }

    /// Every file and directory under the temp root, with file contents.
    pub(crate) fn snapshot(&self) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
        fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, Option<Vec<u8>>>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    out.insert(path.clone(), None);
                    walk(&path, out);
                } else {
                    out.insert(path.clone(), Some(std::fs::read(&path).unwrap()));
                }
            }
        }
        let mut out = BTreeMap::new();
        walk(&self.root, &mut out);
        out
    }
}

pub(crate) fn parse(path: &Path) -> Value {
    hookd_core::jsonc::parse(&std::fs::read_to_string(path).unwrap()).unwrap()
}

const GEMINI_USER: &str = r#"// My Gemini CLI settings.
{
  "theme": "GitHub", // keep this comment
  "hooks": {
    /* the guard */
    "BeforeTool": [
      {"matcher": "run_shell_command", "hooks": [
        {"type": "command", "name": "guard", "command": "guard.sh", "timeout": 90000}
      ]}
    ],
    "AfterAgent": [{"hooks": [{"type": "command", "command": "notify.sh"}]}]
  },
  "hooksConfig": {"disabled": ["old"]}
}
"#;

/// The absolute path of the hookctl under test.
fn hookctl_exe() -> String {
    std::fs::canonicalize(env!("CARGO_BIN_EXE_hookctl"))
        .unwrap()
        .display()
        .to_string()
}

/// The absolute path of the hookd-relay next to it, as install writes it into user files
/// when `hookd-relay` is not on `PATH`.
fn relay_exe() -> String {
    std::fs::canonicalize(env!("CARGO_BIN_EXE_hookd-relay"))
        .unwrap()
        .display()
        .to_string()
}

/// `PATH` with the hookctl and hookd-relay under test first.
fn path_with_hookctl() -> String {
    let dir = Path::new(&hookctl_exe()).parent().unwrap().to_owned();
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// The events of a host file's `hooks`.
pub(crate) fn events(path: &Path) -> Vec<String> {
    parse(path)["hooks"]
        .as_object()
        .map(|hooks| hooks.keys().cloned().collect())
        .unwrap_or_default()
}

#[test]
fn gemini_user_hooks_move_to_hookd_and_come_back_byte_for_byte() {
    let home = Home::new();
    let settings = home.home.join(".gemini/settings.json");
    let hooks_file = home.home.join(".config/hookd/hooks.json");
    home.write(&settings, GEMINI_USER);
    let before = home.snapshot();

    let report = home.ok(&["install", "--host", "gemini", "--yes"]);
    assert!(report.contains("--- /dev/null"), "{report}");
    assert!(report.contains("Installed"), "{report}");
    assert!(report.contains("restart running sessions"), "{report}");
    // The relay under test is linked as this build links it; install says when that costs.
    let dynamic = hookctl::elf::is_dynamically_linked(Path::new(&relay_exe()));
    assert_eq!(
        report.contains("is dynamically linked; a static build"),
        dynamic == Some(true),
        "{dynamic:?}: {report}"
    );

    // The host keeps its other settings and comments; its hooks are one relay entry for each
    // event hookd has hooks for, with the hooks' matcher, waiting for the slowest of them.
    let text = std::fs::read_to_string(&settings).unwrap();
    assert!(
        text.starts_with(
            "// My Gemini CLI settings.\n{\n  \"theme\": \"GitHub\", // keep this comment\n"
        ),
        "{text}"
    );
    let program = relay_exe();
    assert_eq!(
        parse(&settings)["hooks"],
        json!({
            "BeforeTool": [{"matcher": "run_shell_command", "hooks": [{"type": "command",
                "name": "hookd-relay", "command": format!("{program} BeforeTool"),
                "timeout": 100_000}]}],
            "AfterAgent": [{"hooks": [{"type": "command", "name": "hookd-relay",
                "command": format!("{program} AfterAgent"), "timeout": 70_000}]}]
        })
    );
    assert_eq!(
        parse(&hooks_file),
        json!({"hooks": {
            "BeforeTool": [{"matcher": "run_shell_command", "hooks": [
                {"type": "command", "name": "guard", "command": "guard.sh", "timeout": 90000}]}],
            "AfterAgent": [{"hooks": [{"type": "command", "command": "notify.sh"}]}]
        }})
    );

    // Again: nothing to do, nothing touched.
    let installed = home.snapshot();
    let report = home.ok(&["install", "--host", "gemini", "--scope", "user", "--yes"]);
    assert!(report.contains("nothing to change"), "{report}");
    assert_eq!(home.snapshot(), installed);

    let report = home.ok(&["uninstall", "--host", "gemini"]);
    assert!(report.contains("Uninstalled"), "{report}");
    assert_eq!(home.snapshot(), before);
    let report = home.ok(&["uninstall", "--host", "gemini"]);
    assert!(report.contains("not installed"), "{report}");
    assert_eq!(home.snapshot(), before);
}

#[test]
fn with_nothing_to_relay_install_writes_nothing() {
    let home = Home::new();
    let before = home.snapshot();
    let report = home.ok(&["install", "--host", "claude", "--scope", "project", "--yes"]);
    assert!(report.contains("Nothing to install"), "{report}");
    assert_eq!(home.snapshot(), before);
}

pub(crate) const CLAUDE_USER: &str = r#"{
  // Claude Code settings
  "model": "opus",
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [
          {"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/check.sh", "timeout": 120},
          {"type": "prompt", "prompt": "Is this command safe?"}
        ]
      }
    ],
    "Stop": [{"hooks": [{"type": "command", "command": "done.sh"}]}]
  }
}"#;

#[test]
fn claude_user_hooks_are_converted_and_what_hookd_cannot_run_stays() {
    let home = Home::new();
    let settings = home.home.join(".claude/settings.json");
    home.write(&settings, CLAUDE_USER);
    let hooks_file = home.home.join(".config/hookd/hooks.json");
    let before = home.snapshot();

    let report = home.ok(&["install", "--host", "claude", "--scope", "user", "--yes"]);
    assert!(report.contains("stay in"), "{report}");
    let moved = parse(&hooks_file);
    let converted = &moved["hooks"]["BeforeTool"][0];
    assert_eq!(
        converted["hooks"][0]["dialect"],
        json!("claude"),
        "{converted}"
    );
    assert_eq!(
        converted["hooks"][0]["timeout"],
        json!(120_000),
        "{converted}"
    );
    assert_eq!(
        moved["hooks"]["AfterAgent"][0]["hooks"][0]["command"],
        json!("done.sh")
    );

    let text = std::fs::read_to_string(&settings).unwrap();
    assert!(text.contains("// Claude Code settings"), "{text}");
    let host = parse(&settings);
    assert_eq!(host["model"], json!("opus"));
    // Only the events with hooks: the tool entry names only Bash; Stop's hook has no timeout,
    // so it may take Claude Code's default of 600 s.
    assert_eq!(
        events(&settings),
        ["PreToolUse", "Stop", "SubagentStop"],
        "{host}"
    );
    let pre = host["hooks"]["PreToolUse"].as_array().unwrap();
    assert_eq!(pre[0]["matcher"], json!("Bash"), "{host}");
    assert_eq!(pre[0]["hooks"][0]["timeout"], json!(130));
    assert_eq!(host["hooks"]["Stop"][0]["hooks"][0]["timeout"], json!(610));
    assert_eq!(
        pre[1],
        json!({"matcher": "Bash", "hooks": [{"type": "prompt", "prompt": "Is this command safe?"}]})
    );

    let installed = home.snapshot();
    assert!(
        home.ok(&["install", "--host", "claude", "--yes"])
            .contains("nothing to change")
    );
    assert_eq!(home.snapshot(), installed);
    home.ok(&["uninstall", "--host", "claude"]);
    assert_eq!(home.snapshot(), before);
}

#[test]
fn dry_runs_and_unconfirmed_installs_write_nothing() {
    let home = Home::new();
    home.write(&home.project.join(".gemini/settings.json"), GEMINI_USER);
    let before = home.snapshot();

    let report = home.ok(&[
        "install",
        "--host",
        "gemini",
        "--scope",
        "project",
        "--dry-run",
    ]);
    assert!(report.contains("@@"), "{report}");
    assert!(report.contains("Dry run: nothing was written."), "{report}");
    assert_eq!(home.snapshot(), before);

    // No terminal to ask on and no --yes: the changes are shown, nothing is written.
    let run = home.hookctl(&["install", "--host", "gemini", "--scope", "project"]);
    assert!(!run.ok);
    assert!(run.stdout.contains("@@"), "{}", run.stdout);
    assert!(run.stderr.contains("--yes"), "{}", run.stderr);
    assert_eq!(home.snapshot(), before);
}

#[test]
fn relay_entries_carry_the_socket_and_project_files_use_the_relay_from_path() {
    let home = Home::new();
    let settings = home.project.join(".gemini/settings.json");
    home.write(&settings, GEMINI_USER);
    // hookd-relay not on PATH: the project file still says `hookd-relay` (it is shared), with
    // a warning saying where it is.
    let run = home.hookctl_with_path(
        &[
            "--socket",
            "/run/my hookd.sock",
            "install",
            "--host",
            "gemini",
            "--scope",
            "project",
            "--yes",
        ],
        "/usr/bin:/bin",
    );
    assert!(run.ok, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("hookd-relay is not on PATH"),
        "{}",
        run.stdout
    );
    // In the shared form: nothing is said where hookd-relay is not on PATH.
    assert_eq!(
        parse(&settings)["hooks"]["BeforeTool"][0]["hooks"][0]["command"],
        json!(
            "! command -v hookd-relay >/dev/null 2>&1 || exec hookd-relay BeforeTool --socket \
             '/run/my hookd.sock'"
        )
    );
    // With hookd-relay on PATH the user file says `hookd-relay` too, so a host reading both files
    // runs one relay (same name and command); the socket of the earlier install is kept.
    home.write(&home.home.join(".gemini/settings.json"), GEMINI_USER);
    let run = home.hookctl_with_path(
        &[
            "--socket",
            "/run/my hookd.sock",
            "install",
            "--host",
            "gemini",
            "--yes",
        ],
        &path_with_hookctl(),
    );
    assert!(run.ok, "{}{}", run.stdout, run.stderr);
    assert!(!run.stdout.contains("not on PATH"), "{}", run.stdout);
    // The same text as the project's entry: a CLI reading both files runs it once.
    assert_eq!(
        parse(&home.home.join(".gemini/settings.json"))["hooks"]["BeforeTool"][0]["hooks"][0]["command"],
        parse(&settings)["hooks"]["BeforeTool"][0]["hooks"][0]["command"]
    );
}

#[test]
fn a_project_install_trusts_what_it_moved() {
    let home = Home::new();
    let settings = home.project.join(".gemini/settings.json");
    home.write(&settings, GEMINI_USER);
    home.write(&home.project.join("guard.sh"), "#!/bin/sh\nexit 0\n");
    let before = home.snapshot();
    let report = home.ok(&["install", "--host", "gemini", "--scope", "project", "--yes"]);
    let _ = report;
    let store = home.home.join(".config/hookd/trusted-hooks.json");
    let text = std::fs::read_to_string(&store).unwrap();
    let trusted = hookd_core::trust::TrustStore::parse(&text).unwrap();
    let keys = trusted.keys(&home.project.display().to_string());
    let mut commands: Vec<&str> = keys.iter().map(|key| key.command.as_str()).collect();
    commands.sort_unstable();
    assert_eq!(commands, ["guard.sh", "notify.sh"], "{text}");
    // Nothing else changed since: uninstall takes the trust back too.
    home.ok(&["uninstall", "--host", "gemini", "--scope", "project"]);
    assert_eq!(home.snapshot(), before);
}

#[test]
fn sync_follows_hookds_hooks_and_list_sees_when_it_is_needed() {
    let home = Home::new();
    let settings = home.home.join(".gemini/settings.json");
    let hooks_file = home.home.join(".config/hookd/hooks.json");
    home.write(&settings, GEMINI_USER);
    home.ok(&["install", "--host", "gemini", "--yes"]);
    let locations = hookctl::install::Locations::new(
        hookd_settings::loader::LoaderEnv::new(
            [(
                "GEMINI_CLI_SYSTEM_SETTINGS_PATH".to_owned(),
                home.root
                    .join("etc/gemini-cli/settings.json")
                    .display()
                    .to_string(),
            )]
            .into_iter()
            .collect(),
            &home.home,
        ),
        Some(home.project.clone()),
        hookctl_exe(),
    );
    assert_eq!(
        hookctl::install::stale_wiring(&locations, &home.project),
        Vec::<String>::new()
    );

    // A hook added to hookd's file on a new event, and the guard removed.
    let mut hooks = parse(&hooks_file);
    hooks["hooks"]["SessionStart"] = json!([{"hooks": [{"type": "command", "command": "hi.sh"}]}]);
    hooks["hooks"].as_object_mut().unwrap().remove("BeforeTool");
    std::fs::write(&hooks_file, hooks.to_string()).unwrap();
    let stale = hookctl::install::stale_wiring(&locations, &home.project);
    assert_eq!(stale.len(), 1, "{stale:?}");
    assert!(
        stale[0].contains("no relay entry on SessionStart")
            && stale[0].contains("no hook on BeforeTool")
            && stale[0].contains("hookctl sync"),
        "{stale:?}"
    );
    let report = home.ok(&["sync"]);
    assert!(report.contains("now relays 2 event(s)"), "{report}");
    assert_eq!(events(&settings), ["AfterAgent", "SessionStart"]);
    assert!(hookctl::install::stale_wiring(&locations, &home.project).is_empty());
    assert!(home.ok(&["sync"]).contains("in step"));

    // A project's own hookd hooks are not relayed by a user install: list says what to run.
    home.write(
        &home.project.join(".hookd/hooks.json"),
        r#"{"hooks": {"BeforeModel": [{"hooks": [{"type": "command", "command": "m.sh"}]}]}}"#,
    );
    let stale = hookctl::install::stale_wiring(&locations, &home.project);
    assert!(
        stale.len() == 1
            && stale[0].contains("BeforeModel")
            && stale[0].contains("--scope project"),
        "{stale:?}"
    );
}

/// One step of an install sequence.
#[derive(Debug, Clone, Copy)]
enum Step {
    Install(&'static str, &'static str),
    Uninstall(&'static str, &'static str),
    /// Uninstall that must be refused, naming the command that finishes it.
    UninstallRefused(&'static str, &'static str),
    UninstallForce(&'static str, &'static str),
    /// A hook added to the host's file: (host, scope, command).
    AddToHost(&'static str, &'static str, &'static str),
    /// A hook added to hookd's file of the scope: (scope, command).
    AddToHookd(&'static str, &'static str),
    /// A moved hook edited in hookd's file: (scope, old command, new command).
    EditInHookd(&'static str, &'static str, &'static str),
    Sync,
}

impl Home {
    fn host_file(&self, host: &str, scope: &str) -> PathBuf {
        let base = if scope == "user" {
            &self.home
        } else {
            &self.project
        };
        base.join(if host == "gemini" {
            ".gemini/settings.json"
        } else {
            ".claude/settings.json"
        })
    }

    fn hookd_file(&self, scope: &str) -> PathBuf {
        if scope == "user" {
            self.home.join(".config/hookd/hooks.json")
        } else {
            self.project.join(".hookd/hooks.json")
        }
    }

    /// Edits a settings file's parsed value and writes it back.
    fn edit(&self, path: &Path, change: impl FnOnce(&mut Value)) {
        let mut value = if path.exists() {
            parse(path)
        } else {
            json!({})
        };
        change(&mut value);
        self.write(path, &serde_json::to_string_pretty(&value).unwrap());
    }

    fn step(&self, step: Step) {
        let scope_args = |host: &str, scope: &str| -> Vec<String> {
            ["--host", host, "--scope", scope]
                .iter()
                .map(|arg| (*arg).to_owned())
                .collect()
        };
        let run = |verb: &str, host: &str, scope: &str, extra: &[&str]| {
            let mut args = vec![verb.to_owned()];
            args.extend(scope_args(host, scope));
            args.extend(extra.iter().map(|arg| (*arg).to_owned()));
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            self.hookctl(&args)
        };
        match step {
            Step::Install(host, scope) => {
                let run = run("install", host, scope, &["--yes"]);
                assert!(run.ok, "{step:?}: {}{}", run.stdout, run.stderr);
            }
            Step::Uninstall(host, scope) => {
                let run = run("uninstall", host, scope, &[]);
                assert!(run.ok, "{step:?}: {}{}", run.stdout, run.stderr);
            }
            Step::UninstallForce(host, scope) => {
                let run = run("uninstall", host, scope, &["--force"]);
                assert!(run.ok, "{step:?}: {}{}", run.stdout, run.stderr);
            }
            Step::UninstallRefused(host, scope) => {
                let before = self.snapshot();
                let run = run("uninstall", host, scope, &[]);
                assert!(!run.ok, "{step:?}: {}", run.stdout);
                assert!(
                    run.stderr
                        .contains(&format!("hookctl uninstall --host {host}"))
                        && run.stderr.contains("--force"),
                    "{step:?}: {}",
                    run.stderr
                );
                assert_eq!(self.snapshot(), before, "{step:?}");
            }
            Step::AddToHost(host, scope, command) => {
                let event = if host == "gemini" {
                    "AfterTool"
                } else {
                    "PostToolUse"
                };
                self.edit(&self.host_file(host, scope), |value| {
                    if !value["hooks"].is_object() {
                        value["hooks"] = json!({});
                    }
                    let list = value["hooks"]
                        .as_object_mut()
                        .unwrap()
                        .entry(event)
                        .or_insert_with(|| json!([]));
                    list.as_array_mut()
                        .unwrap()
                        .push(json!({"hooks": [{"type": "command", "command": command}]}));
                });
            }
            Step::AddToHookd(scope, command) => {
                self.edit(&self.hookd_file(scope), |value| {
                    if !value["hooks"].is_object() {
                        value["hooks"] = json!({});
                    }
                    let list = value["hooks"]
                        .as_object_mut()
                        .unwrap()
                        .entry("SessionEnd")
                        .or_insert_with(|| json!([]));
                    list.as_array_mut()
                        .unwrap()
                        .push(json!({"hooks": [{"type": "command", "command": command}]}));
                });
            }
            Step::EditInHookd(scope, old, new) => {
                let path = self.hookd_file(scope);
                let text = std::fs::read_to_string(&path).unwrap();
                assert!(text.contains(old), "{step:?}: {text}");
                std::fs::write(&path, text.replace(old, new)).unwrap();
            }
            Step::Sync => {
                let run = self.hookctl(&["sync"]);
                assert!(run.ok, "{step:?}: {}{}", run.stdout, run.stderr);
            }
        }
    }

    /// Every settings file this test can touch.
    fn all_files(&self) -> Vec<PathBuf> {
        let mut files = Vec::new();
        for scope in ["user", "project"] {
            files.push(self.host_file("gemini", scope));
            files.push(self.host_file("claude", scope));
            files.push(self.hookd_file(scope));
        }
        files
    }
}

/// The commands of every hook in a settings file.
fn commands(path: &Path) -> Vec<String> {
    if !path.exists() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let root = parse(path);
    for definitions in root["hooks"]
        .as_object()
        .into_iter()
        .flat_map(|hooks| hooks.values())
    {
        for definition in definitions.as_array().into_iter().flatten() {
            for hook in definition["hooks"].as_array().into_iter().flatten() {
                if let Some(command) = hook["command"].as_str() {
                    out.push(command.to_owned());
                }
            }
        }
    }
    out
}

const GEMINI_PROJECT: &str = r#"{"hooks": {"BeforeTool": [{"matcher": "write_file", "hooks": [
  {"type": "command", "name": "lint", "command": "lint.sh"}]}]}}"#;

const CLAUDE_PROJECT: &str = r#"{"hooks": {"PreToolUse": [{"matcher": "Edit|Write", "hooks": [
  {"type": "command", "command": "fmt.sh", "timeout": 30}]}]}}"#;

const HOOKD_USER: &str = r#"{"hooks": {"BeforeAgent": [{"hooks": [
  {"type": "command", "command": "mine.sh"}]}]}}"#;

#[test]
fn any_sequence_of_installs_edits_and_uninstalls_gets_back() {
    use Step::*;
    // (steps, where each hook must end: (command, file key), whether every file must be
    // back byte for byte). File keys: "gemini/user", "claude/project", "hookd/user", ...
    type Case = (
        &'static [Step],
        &'static [(&'static str, &'static str)],
        bool,
    );
    let cases: &[Case] = &[
        (
            &[Install("gemini", "user"), Uninstall("gemini", "user")],
            &[],
            true,
        ),
        // A hook added to the CLI's file after the install, then a second install: one
        // uninstall gives back both and leaves no relay entry.
        (
            &[
                Install("gemini", "user"),
                AddToHost("gemini", "user", "late.sh"),
                Install("gemini", "user"),
                Uninstall("gemini", "user"),
            ],
            &[("late.sh", "gemini/user")],
            false,
        ),
        // Added after the install and never moved: it stays where it is.
        (
            &[
                Install("gemini", "user"),
                AddToHost("gemini", "user", "late.sh"),
                Uninstall("gemini", "user"),
            ],
            &[("late.sh", "gemini/user")],
            false,
        ),
        // Both hosts share hookd's user file: each uninstall takes back only its own.
        (
            &[
                Install("gemini", "user"),
                Install("claude", "user"),
                Uninstall("gemini", "user"),
                Uninstall("claude", "user"),
            ],
            &[],
            false,
        ),
        (
            &[
                Install("claude", "user"),
                Install("gemini", "user"),
                Uninstall("claude", "user"),
                Uninstall("gemini", "user"),
            ],
            &[],
            false,
        ),
        // A hook added to hookd's file is hookd's: it stays there.
        (
            &[
                Install("gemini", "user"),
                AddToHookd("user", "added.sh"),
                Sync,
                Uninstall("gemini", "user"),
            ],
            &[("added.sh", "hookd/user")],
            false,
        ),
        // User and project installs of both hosts, undone in another order.
        (
            &[
                Install("gemini", "project"),
                Install("claude", "project"),
                Install("gemini", "user"),
                AddToHost("claude", "project", "late2.sh"),
                Install("claude", "project"),
                Uninstall("gemini", "user"),
                Uninstall("claude", "project"),
                Uninstall("gemini", "project"),
            ],
            &[("late2.sh", "claude/project")],
            false,
        ),
        // A moved Gemini hook edited in hookd's file goes back as edited.
        (
            &[
                Install("gemini", "user"),
                EditInHookd("user", "guard.sh", "guard-v2.sh"),
                Uninstall("gemini", "user"),
            ],
            &[("guard-v2.sh", "gemini/user")],
            false,
        ),
        // A moved Claude hook edited in hookd's file cannot be converted back: refused with
        // the command; with --force the edit stays in hookd's file and Claude gets its own.
        (
            &[
                Install("claude", "project"),
                EditInHookd("project", "fmt.sh", "fmt2.sh"),
                UninstallRefused("claude", "project"),
                UninstallForce("claude", "project"),
            ],
            &[("fmt2.sh", "hookd/project")],
            false,
        ),
    ];
    for (steps, ends, byte_for_byte) in cases {
        let home = Home::new();
        home.write(&home.host_file("gemini", "user"), GEMINI_USER);
        home.write(&home.host_file("claude", "user"), CLAUDE_USER);
        home.write(&home.host_file("gemini", "project"), GEMINI_PROJECT);
        home.write(&home.host_file("claude", "project"), CLAUDE_PROJECT);
        home.write(&home.hookd_file("user"), HOOKD_USER);
        let before = home.snapshot();
        // Where each original hook lives.
        let mut expected: Vec<(String, PathBuf)> = Vec::new();
        for (host, scope) in [
            ("gemini", "user"),
            ("claude", "user"),
            ("gemini", "project"),
            ("claude", "project"),
        ] {
            for command in commands(&home.host_file(host, scope)) {
                expected.push((command, home.host_file(host, scope)));
            }
        }
        expected.push(("mine.sh".to_owned(), home.hookd_file("user")));
        for step in *steps {
            home.step(*step);
        }
        for (command, key) in *ends {
            let (kind, scope) = key.split_once('/').unwrap();
            let file = if kind == "hookd" {
                home.hookd_file(scope)
            } else {
                home.host_file(kind, scope)
            };
            // An edited hook replaces the original of its command.
            // (A hook edited in hookd's file that goes back to the host replaces its
            // original; one that stays in hookd's file leaves the host its original.)
            if kind != "hookd" {
                expected.retain(|(old, _)| {
                    !(command.starts_with(old.trim_end_matches(".sh")) && old != command)
                });
            }
            expected.push(((*command).to_owned(), file));
        }
        // Every hook exactly once, where the user put it; no relay entry anywhere.
        for file in home.all_files() {
            for command in commands(&file) {
                assert!(
                    !hookd_core::dialect::is_relay_command(&command),
                    "{steps:?}: relay entry left in {}",
                    file.display()
                );
                let home_file = expected.iter().find(|(c, _)| *c == command);
                assert_eq!(
                    home_file.map(|(_, file)| file),
                    Some(&file),
                    "{steps:?}: {command} is in {}",
                    file.display()
                );
            }
        }
        for (command, file) in &expected {
            let count = commands(file).iter().filter(|c| *c == command).count();
            assert_eq!(count, 1, "{steps:?}: {command} in {}", file.display());
        }
        if *byte_for_byte {
            assert_eq!(home.snapshot(), before, "{steps:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn installed_relay_entries_run_the_moved_hooks_through_the_daemon() {
    let project_settings = r#"{
  "hooks": {
    "BeforeTool": [{"matcher": "run_shell_command", "hooks": [
      {"type": "command", "name": "no-rm", "command": "echo 'rm is not allowed' >&2; exit 2"}
    ]}]
  }
}"#;
    let fixture = common::Fixture::start(project_settings, None).await;
    let project = fixture.project.display().to_string();
    let home = fixture.home.clone();
    let run_install = move |args: Vec<String>| {
        let output = Command::new(env!("CARGO_BIN_EXE_hookctl"))
            .args(&args)
            .hermetic(&home)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
    };
    let args: Vec<String> = [
        "install", "--host", "gemini", "--scope", "project", "--yes", "--cwd",
    ]
    .iter()
    .map(|arg| (*arg).to_owned())
    .chain([project.clone()])
    .collect();
    tokio::task::spawn_blocking(move || run_install(args))
        .await
        .unwrap();

    // What Gemini CLI would run for a shell command: the relay entry's command line.
    let host = parse(&fixture.project.join(".gemini/settings.json"));
    let command = host["hooks"]["BeforeTool"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_owned();
    let payload = json!({"session_id": "s", "transcript_path": "", "cwd": project,
        "hook_event_name": "BeforeTool", "timestamp": "2026-01-01T00:00:00.000Z",
        "tool_name": "run_shell_command", "tool_input": {"command": "rm -rf /"}});
    let socket = fixture.socket.clone();
    let output = tokio::task::spawn_blocking(move || {
        let mut child = Command::new("bash")
            .arg("-c")
            .arg(&command)
            .env("PATH", path_with_hookctl())
            .env("HOOKD_SOCKET", &socket)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let _ = child
            .stdin
            .take()
            .unwrap()
            .write_all(payload.to_string().as_bytes());
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    assert!(output.status.success(), "{output:?}");
    let answer: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(answer["decision"], json!("deny"), "{answer}");
    assert_eq!(answer["reason"], json!("rm is not allowed"), "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn installed_claude_hooks_keep_claudes_rules_through_the_relay() {
    let fixture = common::Fixture::start("{}", None).await;
    let project = fixture.project.display().to_string();
    let claude_file = fixture.project.join(".claude/settings.json");
    std::fs::create_dir_all(claude_file.parent().unwrap()).unwrap();
    // Claude Code's rule: exit 2 blocks, with stderr as the reason.
    std::fs::write(
        &claude_file,
        r#"{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "grep -q 'rm -rf' && { echo 'no rm -rf' >&2; exit 2; }; exit 0"}
        ]}]}}"#,
    )
    .unwrap();
    let home = fixture.home.clone();
    let install = project.clone();
    tokio::task::spawn_blocking(move || {
        let output = Command::new(env!("CARGO_BIN_EXE_hookctl"))
            .args(["install", "--host", "claude", "--scope", "project", "--yes"])
            .arg("--cwd")
            .arg(&install)
            .hermetic(&home)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
    })
    .await
    .unwrap();

    let host = parse(&claude_file);
    let command = host["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_owned();
    let socket = fixture.socket.clone();
    let ask = move |tool_command: &str| {
        let payload = json!({"session_id": "s", "transcript_path": "", "cwd": project,
            "hook_event_name": "PreToolUse", "tool_name": "Bash",
            "tool_input": {"command": tool_command}});
        let mut child = Command::new("bash")
            .arg("-c")
            .arg(&command)
            .env("PATH", path_with_hookctl())
            .env("HOOKD_SOCKET", &socket)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let _ = child
            .stdin
            .take()
            .unwrap()
            .write_all(payload.to_string().as_bytes());
        child.wait_with_output().unwrap()
    };
    let (denied, allowed) = tokio::task::spawn_blocking(move || (ask("rm -rf /"), ask("ls")))
        .await
        .unwrap();
    assert!(denied.status.success(), "{denied:?}");
    let answer: Value = serde_json::from_slice(&denied.stdout).unwrap();
    assert_eq!(
        answer["hookSpecificOutput"],
        json!({"hookEventName": "PreToolUse", "permissionDecision": "deny",
               "permissionDecisionReason": "no rm -rf"}),
        "{answer}"
    );
    assert!(allowed.status.success(), "{allowed:?}");
    assert_eq!(String::from_utf8_lossy(&allowed.stdout), "");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_says_when_the_wiring_is_stale_and_when_the_relay_logged() {
    let fixture = common::Fixture::start("{}", None).await;
    let home = fixture.home.clone();
    let socket = fixture.socket.clone();
    let project = fixture.project.clone();
    let hookctl = move |args: &[&str]| {
        let output = Command::new(env!("CARGO_BIN_EXE_hookctl"))
            .arg("--socket")
            .arg(&socket)
            .args(args)
            .current_dir(&project)
            .hermetic(&home)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(output.status.success(), "{args:?}: {output:?}");
        String::from_utf8(output.stdout).unwrap()
    };
    std::fs::write(fixture.home.join(".gemini/settings.json"), GEMINI_USER).unwrap();
    let list = tokio::task::spawn_blocking(move || {
        hookctl(&["install", "--host", "gemini", "--yes"]);
        let in_step = hookctl(&["list"]);
        (in_step, hookctl)
    })
    .await
    .unwrap();
    let (in_step, hookctl) = list;
    assert!(!in_step.contains("Relay wiring"), "{in_step}");
    // hookd's file gets a hook on an event the CLI does not relay yet, and a relay logged.
    let hooks_file = fixture.home.join(".config/hookd/hooks.json");
    let mut hooks = parse(&hooks_file);
    hooks["hooks"]["SessionStart"] = json!([{"hooks": [{"type": "command", "command": "hi.sh"}]}]);
    std::fs::write(&hooks_file, hooks.to_string()).unwrap();
    let log = fixture.home.join(".local/state/hookd/relay.log");
    std::fs::write(
        &log,
        "2026-01-01T00:00:00Z hookctl relay: gemini BeforeTool: ...\n",
    )
    .unwrap();
    let stale = tokio::task::spawn_blocking(move || hookctl(&["list"]))
        .await
        .unwrap();
    assert!(
        stale.contains("Relay wiring:")
            && stale.contains("no relay entry on SessionStart")
            && stale.contains("`hookctl sync`"),
        "{stale}"
    );
    assert!(stale.contains(&log.display().to_string()), "{stale}");
}

/// What a cloned repository can put at a settings path instead of a file.
#[derive(Debug, Clone, Copy)]
enum Hostile {
    /// A FIFO nobody writes to: opening or reading it would wait forever.
    Fifo,
    /// A symlink to `/dev/zero`: reading it never ends.
    DevZero,
}

impl Hostile {
    fn plant(self, path: &Path) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        match self {
            Hostile::Fifo => {
                nix::unistd::mkfifo(path, nix::sys::stat::Mode::S_IRWXU).unwrap();
            }
            Hostile::DevZero => std::os::unix::fs::symlink("/dev/zero", path).unwrap(),
        }
    }
}

impl Home {
    /// Runs hookctl like [`Home::hookctl`], but kills it and fails the test if it has not
    /// exited within `bound` (a hookctl that hangs must not hang the test).
    fn hookctl_within(&self, args: &[&str], bound: std::time::Duration) -> Run {
        let mut child = Command::new(env!("CARGO_BIN_EXE_hookctl"))
            .args(args)
            .current_dir(&self.project)
            .hermetic(&self.home)
            .env(
                "GEMINI_CLI_SYSTEM_SETTINGS_PATH",
                self.root.join("etc/gemini-cli/settings.json"),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
        let (sender, receiver) = std::sync::mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        let stderr = child.stderr.take().unwrap();
        let waiter = std::thread::spawn(move || {
            let read = |mut pipe: Box<dyn std::io::Read + Send>| {
                std::thread::spawn(move || {
                    let mut text = String::new();
                    let _ = pipe.read_to_string(&mut text);
                    text
                })
            };
            let (out, err) = (read(Box::new(stdout)), read(Box::new(stderr)));
            let status = child.wait().unwrap();
            let _ = sender.send(Run {
                ok: status.success(),
                stdout: out.join().unwrap(),
                stderr: err.join().unwrap(),
            });
        });
        match receiver.recv_timeout(bound) {
            Ok(run) => {
                waiter.join().unwrap();
                run
            }
            Err(_) => {
                let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
                panic!("hookctl {args:?} did not exit within {bound:?}");
            }
        }
    }
}

#[test]
fn a_fifo_or_dev_zero_at_a_project_settings_path_fails_fast_with_a_clear_error() {
    // (host, the file planted, what it is)
    let cases = [
        ("gemini", ".gemini/settings.json", Hostile::Fifo),
        ("gemini", ".gemini/settings.json", Hostile::DevZero),
        ("gemini", ".hookd/hooks.json", Hostile::Fifo),
        ("gemini", ".hookd/hooks.json", Hostile::DevZero),
        ("claude", ".claude/settings.json", Hostile::Fifo),
        ("claude", ".claude/settings.json", Hostile::DevZero),
    ];
    let bound = std::time::Duration::from_secs(10);
    for (host, file, hostile) in cases {
        let home = Home::new();
        if file == ".hookd/hooks.json" {
            home.write(&home.project.join(".gemini/settings.json"), GEMINI_USER);
        }
        let path = home.project.join(file);
        hostile.plant(&path);
        let started = std::time::Instant::now();
        let run = home.hookctl_within(
            &["install", "--host", host, "--scope", "project", "--yes"],
            bound,
        );
        let took = started.elapsed();
        let case = format!("{host} {file} {hostile:?}");
        assert!(!run.ok, "{case}: {}{}", run.stdout, run.stderr);
        assert!(
            run.stderr.contains(&path.display().to_string())
                && run.stderr.contains("not a regular file"),
            "{case}: {}",
            run.stderr
        );
        assert!(took < std::time::Duration::from_secs(5), "{case}: {took:?}");
    }

    // `validate` and `migrate` read the same files the same way.
    let home = Home::new();
    let settings = home.project.join(".gemini/settings.json");
    Hostile::Fifo.plant(&settings);
    let run = home.hookctl_within(&["validate"], bound);
    assert!(
        !run.ok && run.stderr.contains("not a regular file"),
        "{}",
        run.stderr
    );
    // A migration's target: the Claude Code file is fine, the Gemini CLI one never ends.
    std::fs::remove_file(&settings).unwrap();
    Hostile::DevZero.plant(&settings);
    home.write(
        &home.project.join(".claude/settings.json"),
        r#"{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "g.sh"}]}]}}"#,
    );
    let run = home.hookctl_within(&["migrate", "--from-claude"], bound);
    assert!(!run.ok, "{}{}", run.stdout, run.stderr);
    let said = format!("{}{}", run.stdout, run.stderr);
    assert!(said.contains("not a regular file"), "{said}");
}

/// One hook of a host file, run the way its host runs it: a shell-form command with the
/// host's shell (`shell -c COMMAND`), an exec-form one (`command` and `args`) with no shell;
/// `PATH` set to `path`. Returns (exit code, stdout, stderr).
fn run_host_hook(shell: &str, hook: &Value, path: &str, cwd: &Path) -> (i32, String, String) {
    let command = hook["command"].as_str().unwrap();
    let mut child = match hook["args"].as_array() {
        Some(args) => {
            let mut child = Command::new(command);
            child.args(args.iter().map(|arg| arg.as_str().unwrap()));
            child
        }
        None => {
            let mut child = Command::new(shell);
            child.arg("-c").arg(command);
            child
        }
    };
    let output = child
        .env_clear()
        .env("PATH", path)
        .env("CLAUDE_PROJECT_DIR", cwd)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

/// Every hook object of a settings file, with its event.
fn hook_objects(path: &Path) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for (event, definitions) in parse(path)["hooks"].as_object().into_iter().flatten() {
        for definition in definitions.as_array().into_iter().flatten() {
            for hook in definition["hooks"].as_array().into_iter().flatten() {
                out.push((event.clone(), hook.clone()));
            }
        }
    }
    out
}

#[test]
fn a_project_install_keeps_the_hooks_running_on_a_machine_without_hookd() {
    // (host, its project file, its shell, its settings with a guard that blocks)
    let guard = "echo \"guard blocked in $CLAUDE_PROJECT_DIR\" >&2; exit 2 # why";
    let cases = [
        (
            "gemini",
            ".gemini/settings.json",
            "bash",
            json!({"hooks": {"BeforeTool": [{"matcher": "run_shell_command", "hooks": [
                {"type": "command", "name": "guard", "command": guard}]}]}}),
        ),
        (
            "claude",
            ".claude/settings.json",
            "sh",
            json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "command", "command": guard, "timeout": 5},
                {"type": "command", "command": "sh", "args": ["-c", "echo exec form blocked >&2; exit 2"]}
            ]}]}}),
        ),
        (
            "codex",
            ".codex/hooks.json",
            "bash",
            json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "command", "command": guard, "timeout": 5}]}]}}),
        ),
    ];
    let without_hookd = "/usr/bin:/bin";
    let with_hookd = path_with_hookctl();
    for (host, file, shell, settings) in cases {
        let home = Home::new();
        let host_file = home.project.join(file);
        let text = format!("{}\n", serde_json::to_string_pretty(&settings).unwrap());
        home.write(&host_file, &text);
        let before = home.snapshot();
        let run = home.hookctl_with_path(
            &["install", "--host", host, "--scope", "project", "--yes"],
            &with_hookd,
        );
        assert!(run.ok, "{host}: {}{}", run.stdout, run.stderr);

        let hooks = hook_objects(&host_file);
        let relays: Vec<&Value> = hooks
            .iter()
            .map(|(_, hook)| hook)
            .filter(|hook| {
                hook["command"]
                    .as_str()
                    .is_some_and(hookd_core::dialect::is_relay_command)
            })
            .collect();
        assert_eq!(relays.len(), 1, "{host}: {hooks:?}");
        assert!(
            hookd_core::dialect::is_shared_relay_command(relays[0]["command"].as_str().unwrap()),
            "{host}: {}",
            relays[0]
        );
        let copies: Vec<&Value> = hooks
            .iter()
            .map(|(_, hook)| hook)
            .filter(|hook| !relays.contains(hook))
            .collect();
        let originals = settings["hooks"]
            .as_object()
            .unwrap()
            .values()
            .next()
            .unwrap()[0]["hooks"]
            .as_array()
            .unwrap()
            .len();
        assert_eq!(copies.len(), originals, "{host}: {hooks:?}");

        // No hookd-relay on PATH (a teammate's clone): the relay entry answers nothing and
        // each copy blocks as the original would.
        let (code, stdout, stderr) = run_host_hook(shell, relays[0], without_hookd, &home.project);
        assert_eq!(
            (code, stdout.as_str(), stderr.as_str()),
            (0, "", ""),
            "{host}"
        );
        for copy in &copies {
            let (code, stdout, stderr) = run_host_hook(shell, copy, without_hookd, &home.project);
            assert_eq!(code, 2, "{host}: {copy}: {stderr}");
            assert_eq!(stdout, "", "{host}");
            assert!(
                stderr == format!("guard blocked in {}\n", home.project.display())
                    || stderr == "exec form blocked\n",
                "{host}: {stderr:?}"
            );
            // With hookd-relay on PATH the copy does nothing: hookd runs the hook.
            let (code, stdout, stderr) = run_host_hook(shell, copy, &with_hookd, &home.project);
            assert_eq!(
                (code, stdout.as_str(), stderr.as_str()),
                (0, "", ""),
                "{host}: {copy}"
            );
        }

        // Codex runs only what it trusts: install recorded every entry it wrote.
        if host == "codex" {
            let config = home.home.join(".codex/config.toml");
            let config_text = std::fs::read_to_string(&config).unwrap();
            let problems = hookd_core::dialect::Dialect::CODEX.files().wiring_problems(
                &host_file,
                &std::fs::read_to_string(&host_file).unwrap(),
                &[(config.clone(), Some(config_text.clone()))],
            );
            assert!(problems.is_empty(), "{problems:?}\n{config_text}");
            assert_eq!(
                config_text.matches("trusted_hash").count(),
                1 + copies.len(),
                "{config_text}"
            );
        }

        // Installing again and syncing change nothing; uninstall gives every file back.
        assert!(
            home.ok(&["install", "--host", host, "--scope", "project", "--yes"])
                .contains("nothing to change"),
            "{host}"
        );
        assert!(home.ok(&["sync"]).contains("in step"), "{host}");
        home.ok(&["uninstall", "--host", host, "--scope", "project"]);
        assert_eq!(home.snapshot(), before, "{host}: not back byte for byte");

        // A moved hook removed from hookd's file loses its copy at the next sync.
        home.ok(&["install", "--host", host, "--scope", "project", "--yes"]);
        let hookd_file = home.project.join(".hookd/hooks.json");
        home.write(&hookd_file, "{}\n");
        home.ok(&["sync"]);
        assert_eq!(hook_objects(&host_file), Vec::new(), "{host}");
    }
}

#[test]
fn doctor_names_relay_entries_in_a_shared_project_file() {
    let home = Home::new();
    let settings = home.project.join(".claude/settings.json");
    home.write(&settings, CLAUDE_PROJECT);
    let path = path_with_hookctl();
    let run = home.hookctl_with_path(
        &["install", "--host", "claude", "--scope", "project", "--yes"],
        &path,
    );
    assert!(run.ok, "{}{}", run.stdout, run.stderr);
    let socket = home.root.join("no-daemon.sock").display().to_string();
    let shared = |path: &str| -> Vec<(String, String)> {
        // No daemon runs: doctor says so (exit 1), and still checks the files.
        let run = home.hookctl_with_path(&["--socket", &socket, "doctor", "--json"], path);
        let report: Value = serde_json::from_str(&run.stdout).unwrap();
        report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|finding| finding["check"] == "shared")
            .map(|finding| {
                (
                    finding["status"].as_str().unwrap().to_owned(),
                    finding["message"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    let found = shared(&path);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, "note", "{found:?}");
    assert!(
        found[0].1.contains("1 relay entry") && found[0].1.contains("1 guarded copy"),
        "{found:?}"
    );
    assert!(found[0].1.contains("hookd runs the hooks"), "{found:?}");
    let found = shared("/usr/bin:/bin");
    assert!(
        found[0].1.contains("the CLI runs the copies itself"),
        "{found:?}"
    );

    // The bare form an older hookctl wrote: a problem; installing again rewrites it.
    let text = std::fs::read_to_string(&settings).unwrap();
    std::fs::write(
        &settings,
        text.replace("! command -v hookd-relay >/dev/null 2>&1 || exec ", ""),
    )
    .unwrap();
    let found = shared(&path);
    assert_eq!(found[0].0, "problem", "{found:?}");
    assert!(found[0].1.contains("command not found"), "{found:?}");
    let run = home.hookctl_with_path(
        &["install", "--host", "claude", "--scope", "project", "--yes"],
        &path,
    );
    assert!(run.ok, "{}{}", run.stdout, run.stderr);
    assert_eq!(shared(&path)[0].0, "note");
}

/// A guard only in Copilot CLI's own hooks folder runs in a daemon started with
/// `--copilot-settings` for Claude Code's events too: `install --host claude` wires the event
/// for it once the daemon's record says it reads Copilot's files (and not before), and a
/// project's `.github/hooks/` only where Copilot trusts the project.
#[test]
fn install_wires_the_events_of_copilot_files_the_daemon_reads() {
    let home = Home::new();
    let guard = r#"{"version": 1, "hooks": {"preToolUse": [
        {"type": "command", "bash": "./guard.sh", "timeoutSec": 5}]}}"#;
    home.write(&home.home.join(".copilot/hooks/guard.json"), guard);
    let claude_user = home.home.join(".claude/settings.json");
    let record_for = |copilot: bool| {
        let socket = hookd_protocol::resolve_socket_path(|_| None, nix::unistd::getuid().as_raw());
        let path = hookd_settings::loader::engine_record_path(
            &home.home.join(".local/state/hookd"),
            &socket,
        );
        home.write(
            &path,
            &json!({"copilot_settings": copilot, "claude_settings": false}).to_string(),
        );
    };
    let wired = |path: &Path| -> Vec<String> {
        commands(path)
            .into_iter()
            .filter(|command| command.contains("PreToolUse"))
            .collect()
    };

    // No daemon recorded, or one without --copilot-settings: nothing for hookd to run.
    let report = home.ok(&["install", "--host", "claude", "--yes"]);
    assert!(report.contains("Nothing to install"), "{report}");
    record_for(false);
    let report = home.ok(&["install", "--host", "claude", "--yes"]);
    assert!(report.contains("Nothing to install"), "{report}");

    // With it, Claude Code relays its tool calls to hookd, where the Copilot guard runs.
    record_for(true);
    home.ok(&["install", "--host", "claude", "--yes"]);
    assert_eq!(wired(&claude_user).len(), 1, "{:?}", commands(&claude_user));
    // Copilot CLI runs its own files: its install wires nothing for them.
    let report = home.ok(&["install", "--host", "copilot", "--yes"]);
    assert!(report.contains("Nothing to install"), "{report}");
    home.ok(&["uninstall", "--host", "claude"]);

    // A project's hooks folder counts only where Copilot trusts the project.
    std::fs::remove_file(home.home.join(".copilot/hooks/guard.json")).unwrap();
    home.write(&home.project.join(".github/hooks/repo.json"), guard);
    let claude_project = home.project.join(".claude/settings.json");
    let report = home.ok(&["install", "--host", "claude", "--scope", "project", "--yes"]);
    assert!(report.contains("Nothing to install"), "{report}");
    home.write(
        &home.home.join(".copilot/config.json"),
        &format!(
            "// managed by Copilot\n{}",
            json!({"trustedFolders": [home.project]})
        ),
    );
    home.ok(&["install", "--host", "claude", "--scope", "project", "--yes"]);
    assert_eq!(
        wired(&claude_project).len(),
        1,
        "{:?}",
        commands(&claude_project)
    );
}
