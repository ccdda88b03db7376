//! `hookctl install --host copilot` through the real binary, in a temp home, for every Copilot
//! CLI event: hooks of events with a Claude Code counterpart move to hookd, hooks of Copilot's
//! own events stay in the file Copilot runs, relay entries carry Copilot tool-name matchers,
//! and uninstall gives the file back byte for byte.

// Test fixtures may unwrap: a failure here is a failed test, not a daemon bug.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use crate::common::Home;
use serde_json::{Value, json};

/// `hooks_file` of the home.
fn hooks_file(home: &Home) -> PathBuf {
    home.home.join(".copilot/hooks/hookd.json")
}

const HOOKS: &str = r#"{
  "version": 1,
  "hooks": {
    "preToolUse": [
      {"matcher": "bash", "hooks": [{"type": "command", "bash": "./guard.sh", "timeoutSec": 5}]}
    ],
    "permissionRequest": [{"type": "command", "bash": "./ask.sh", "timeoutSec": 5}],
    "postToolUseFailure": [{"type": "command", "bash": "./failed.sh"}],
    "userPromptTransformed": [{"type": "command", "bash": "./transformed.sh"}]
  }
}
"#;

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

/// `(event, matcher, command)` of each handler in a Copilot hooks file.
fn handlers(file: &Value) -> Vec<(String, Option<String>, String)> {
    let mut found = Vec::new();
    for (event, groups) in file["hooks"].as_object().unwrap() {
        for group in groups.as_array().unwrap() {
            let inner = group.get("hooks").and_then(Value::as_array);
            let list = inner.cloned().unwrap_or_else(|| vec![group.clone()]);
            for handler in list {
                let command = handler
                    .get("command")
                    .or_else(|| handler.get("bash"))
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                found.push((
                    event.clone(),
                    group
                        .get("matcher")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                    command.to_owned(),
                ));
            }
        }
    }
    found.sort();
    found
}

#[test]
fn every_event_is_wired_and_copilots_own_events_stay_in_its_file() {
    let home = Home::new(&[".copilot/hooks"]);
    std::fs::write(hooks_file(&home), HOOKS).unwrap();

    let (ok, out) = home.hookctl(&["install", "--host", "copilot", "--scope", "user", "--yes"]);
    assert!(ok, "{out}");
    let file: Value = serde_json::from_str(&read(&hooks_file(&home))).unwrap();
    let found = handlers(&file);
    let relay = |event: &str| {
        found
            .iter()
            .find(|(e, _, command)| e == event && command.contains("hookd-relay"))
            .cloned()
    };
    // The guard's relay entry is posted `bash` calls only, in Copilot's spelling.
    let (_, matcher, command) = relay("preToolUse").expect("preToolUse relayed");
    assert_eq!(matcher.as_deref(), Some("bash"), "{file}");
    assert!(
        command.contains("preToolUse --dialect copilot"),
        "{command}"
    );
    for event in ["permissionRequest", "postToolUseFailure"] {
        let (_, matcher, command) = relay(event).unwrap_or_else(|| panic!("{event}: {file}"));
        assert_eq!(matcher, None, "{event}");
        assert!(command.contains(&format!("{event} --dialect copilot")));
    }
    for moved in ["./guard.sh", "./ask.sh", "./failed.sh"] {
        assert!(
            !found.iter().any(|(_, _, command)| command == moved),
            "{moved} moved to hookd: {file}"
        );
    }
    // Copilot's own event has no Claude Code counterpart: its hook stays where Copilot runs
    // it, and no relay entry runs it a second time.
    assert!(
        found
            .iter()
            .any(|(event, _, command)| event == "userPromptTransformed"
                && command == "./transformed.sh"),
        "{file}"
    );
    assert!(relay("userPromptTransformed").is_none(), "{file}");

    // The moved hooks are in hookd's file, in Copilot's dialect, on hookd's events.
    let moved: Value =
        serde_json::from_str(&read(&home.home.join(".config/hookd/hooks.json"))).unwrap();
    let text = moved.to_string();
    for hook in ["./guard.sh", "./ask.sh", "./failed.sh"] {
        assert!(text.contains(hook), "{hook}: {moved}");
    }
    for event in ["BeforeTool", "PermissionRequest", "PostToolUseFailure"] {
        assert!(moved["hooks"].get(event).is_some(), "{event}: {moved}");
    }
    assert!(text.contains(r#""dialect":"copilot""#), "{moved}");

    let (ok, out) = home.hookctl(&["uninstall", "--host", "copilot", "--scope", "user"]);
    assert!(ok, "{out}");
    assert_eq!(read(&hooks_file(&home)), HOOKS);
}

#[test]
fn a_hook_in_hookds_file_for_a_copilot_event_gets_its_relay_entry() {
    let home = Home::new(&[".copilot/hooks"]);
    let config = home.home.join(".config/hookd");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("hooks.json"),
        json!({"hooks": {
            "errorOccurred": [{"matcher": "model_call", "hooks": [{"type": "command", "command": "./notify.sh"}]}],
            "PermissionRequest": [{"matcher": "^Bash$", "hooks": [{"type": "command", "command": "./ask.sh"}]}]
        }})
        .to_string(),
    )
    .unwrap();
    let (ok, out) = home.hookctl(&["install", "--host", "copilot", "--scope", "user", "--yes"]);
    assert!(ok, "{out}");
    let file: Value = serde_json::from_str(&read(&hooks_file(&home))).unwrap();
    let found = handlers(&file);
    let wired: Vec<(&str, Option<&str>)> = found
        .iter()
        .filter(|(_, _, command)| command.contains("hookd-relay"))
        .map(|(event, matcher, _)| (event.as_str(), matcher.as_deref()))
        .collect();
    assert!(wired.contains(&("errorOccurred", None)), "{file}");
    assert!(
        wired.contains(&("permissionRequest", Some("bash"))),
        "{file}"
    );
}
