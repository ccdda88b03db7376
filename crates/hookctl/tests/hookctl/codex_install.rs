//! `hookctl install --host codex` through the real binary, in a temp home: Codex's own hooks
//! move to hookd, the relay entries get trust records in `config.toml` (Codex's key and
//! hash), `doctor` reports a stale record, a `hooks.json` Codex would drop is refused, and
//! uninstall gives every file back byte for byte.

// Test fixtures may unwrap: a failure here is a failed test, not a daemon bug.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use crate::common::Home;
use hookd_core::dialect::codex::{codex_trust_hash, codex_trust_key};
use serde_json::Value;

/// `hooks_file` of the home.
fn hooks_file(home: &Home) -> PathBuf {
    home.home.join(".codex/hooks.json")
}

/// `config_file` of the home.
fn config_file(home: &Home) -> PathBuf {
    home.home.join(".codex/config.toml")
}

const HOOKS: &str = r#"{
  "hooks": {
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh", "timeout": 30}]}
    ]
  }
}
"#;

const CONFIG: &str =
    "# my Codex settings\nmodel = \"o5\"   # keep\n\n[features]\nplugins = false\n";

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn install_records_trust_and_uninstall_gives_every_file_back() {
    let home = Home::new(&[".codex"]);
    std::fs::write(hooks_file(&home), HOOKS).unwrap();
    std::fs::write(config_file(&home), CONFIG).unwrap();

    let (ok, out) = home.hookctl(&["install", "--host", "codex", "--scope", "user", "--yes"]);
    assert!(ok, "{out}");
    let hooks: Value = serde_json::from_str(&read(&hooks_file(&home))).unwrap();
    let handler = &hooks["hooks"]["PreToolUse"][0]["hooks"][0];
    let command = handler["command"].as_str().unwrap();
    assert!(command.contains("PreToolUse --dialect codex"), "{hooks}");
    assert!(handler["timeout"].is_u64(), "{hooks}");
    assert!(
        !read(&hooks_file(&home)).contains("guard.sh"),
        "moved to hookd"
    );

    // The record Codex looks for, under Codex's key, with Codex's hash.
    let config = read(&config_file(&home));
    assert!(config.starts_with(CONFIG), "{config}");
    let key = codex_trust_key(&hooks_file(&home), "PreToolUse", 0, 0);
    let matcher = hooks["hooks"]["PreToolUse"][0]["matcher"].as_str();
    let hash = codex_trust_hash("PreToolUse", matcher, handler.as_object().unwrap());
    let record = format!("[hooks.state.\"{key}\"]\ntrusted_hash = \"{hash}\"\n");
    assert!(config.contains(&record), "{record}\n{config}");
    let (_, doctor) = home.hookctl(&["doctor"]);
    assert!(doctor.contains("wiring"), "{doctor}");
    assert!(!doctor.contains("skips the"), "{doctor}");

    // A hand edit of the relay line: Codex would skip it, and doctor says so.
    let installed = read(&hooks_file(&home));
    std::fs::write(
        hooks_file(&home),
        installed.replace("--dialect codex", "--dialect codex --retry 0"),
    )
    .unwrap();
    let (_, list) = home.hookctl(&["doctor"]);
    assert!(list.contains("stale"), "{list}");
    std::fs::write(hooks_file(&home), &installed).unwrap();

    let (ok, out) = home.hookctl(&["uninstall", "--host", "codex", "--scope", "user"]);
    assert!(ok, "{out}");
    assert_eq!(read(&hooks_file(&home)), HOOKS);
    assert_eq!(read(&config_file(&home)), CONFIG);
}

#[test]
fn a_hooks_file_codex_would_drop_is_not_edited() {
    let home = Home::new(&[".codex"]);
    // A float timeout: Codex ignores the whole file, so relay entries there would never run.
    let broken = HOOKS.replace("\"timeout\": 30", "\"timeout\": 1.5");
    std::fs::write(hooks_file(&home), &broken).unwrap();
    let (ok, out) = home.hookctl(&["install", "--host", "codex", "--scope", "user", "--yes"]);
    assert!(!ok, "{out}");
    assert!(out.contains("timeout"), "{out}");
    assert_eq!(read(&hooks_file(&home)), broken);
    assert!(!config_file(&home).exists());
}

#[test]
fn uninstall_of_an_edited_codex_hook_names_codex_cli() {
    let home = Home::new(&[".codex"]);
    std::fs::write(hooks_file(&home), HOOKS).unwrap();
    std::fs::write(config_file(&home), CONFIG).unwrap();
    let (ok, out) = home.hookctl(&["install", "--host", "codex", "--scope", "user", "--yes"]);
    assert!(ok, "{out}");

    // The moved hook edited in hookd's file: it cannot be turned back into Codex's form.
    let hookd_file = home.home.join(".config/hookd/hooks.json");
    let moved = read(&hookd_file);
    assert!(moved.contains("guard.sh"), "{moved}");
    std::fs::write(&hookd_file, moved.replace("guard.sh", "guard-v2.sh")).unwrap();

    let (ok, out) = home.hookctl(&["uninstall", "--host", "codex", "--scope", "user"]);
    assert!(!ok, "{out}");
    assert!(
        out.contains("moved Codex CLI hook(s) were edited") && out.contains("Codex CLI's form"),
        "{out}"
    );
    assert!(!out.contains("Claude Code"), "{out}");
    assert!(out.contains("hookctl uninstall --host codex"), "{out}");
}
