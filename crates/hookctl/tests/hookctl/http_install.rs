//! `hookctl install --host claude --transport http`, `sync`, `list` and `uninstall` through
//! the real binary in a temp home: which event gets an HTTP entry (and which `onFailure`) and
//! which stays a command relay, the secret only in the user's 0600 settings file and never in
//! the report, stale entries and a stale secret seen by `doctor` and fixed by `sync`, the
//! transport shown by `list`,
//! byte-for-byte uninstall; and the written entry answered by a real daemon's HTTP listener.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use hookd_testkit::{Daemon, DaemonOptions, Hermetic};
use serde_json::{Value, json};

use crate::install::{CLAUDE_USER, Home, events, parse};

/// What `hookctl doctor` says (it exits non-zero here: no daemon runs).
fn doctor(home: &Home) -> String {
    let run = home.hookctl(&["doctor"]);
    format!("{}{}", run.stdout, run.stderr)
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

fn secret_file(home: &Home) -> PathBuf {
    home.home.join(".config/hookd/http.secret")
}

fn secret(home: &Home) -> String {
    std::fs::read_to_string(secret_file(home))
        .unwrap()
        .trim_end()
        .to_owned()
}

/// The one hook of an event's first definition.
fn first_hook(host: &Value, event: &str) -> Value {
    host["hooks"][event][0]["hooks"][0].clone()
}

/// A home whose Claude Code user settings hold [`CLAUDE_USER`], and that file.
fn claude_home() -> (Home, PathBuf) {
    let home = Home::new();
    let settings = home.home.join(".claude/settings.json");
    home.write(&settings, CLAUDE_USER);
    (home, settings)
}

/// A loopback port nothing listens on once the listener is dropped.
fn free_port() -> (std::net::TcpListener, u16) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    (listener, port)
}

#[test]
fn claude_http_install_wires_every_event_never_weaker_and_gives_back_byte_for_byte() {
    let (home, settings) = claude_home();
    std::fs::set_permissions(&settings, std::fs::Permissions::from_mode(0o644)).unwrap();
    let before = home.snapshot();
    let (listener, port) = free_port();
    let port_text = port.to_string();

    let report = home.ok(&[
        "install",
        "--host",
        "claude",
        "--transport",
        "http",
        "--port",
        &port_text,
        "--yes",
    ]);
    let secret = secret(&home);
    assert_eq!(secret.len(), 64, "{secret}");
    assert_eq!(mode(&secret_file(&home)), 0o600);
    assert_eq!(mode(&settings), 0o600, "the settings file holds the secret");
    assert!(!report.contains(&secret), "{report}");
    assert!(report.contains("When hookd cannot answer"), "{report}");

    let host = parse(&settings);
    assert_eq!(host["model"], json!("opus"));
    assert_eq!(
        events(&settings),
        [
            "PreToolUse",
            "PostToolUse",
            "UserPromptSubmit",
            "Stop",
            "SubagentStop",
            "SessionStart",
            "SessionEnd",
            "PreCompact",
            "Notification",
            "PostToolUseFailure",
            "PermissionRequest",
            "SubagentStart",
            "PostCompact",
        ],
        "{host}"
    );
    let url = |event: &str| format!("http://127.0.0.1:{port}/v1/hooks/claude/{event}");
    let bearer = format!("Bearer {secret}");
    // The moved guard can block: Claude Code blocks when hookd cannot answer. Every tool is
    // sent (no matcher), so a hook on another tool added later runs too.
    assert_eq!(
        host["hooks"]["PreToolUse"][0],
        json!({"hooks": [{"type": "http", "url": url("PreToolUse"),
            "headers": {"Authorization": bearer}, "timeout": 130, "onFailure": "block"}]}),
        "{host}"
    );
    // The prompt hook hookd cannot run stays with Claude Code.
    assert_eq!(
        host["hooks"]["PreToolUse"][1],
        json!({"matcher": "Bash", "hooks": [{"type": "prompt", "prompt": "Is this command safe?"}]})
    );
    // No hook yet: an entry that lets Claude Code go on when hookd is down.
    assert_eq!(
        first_hook(&host, "PostToolUse"),
        json!({"type": "http", "url": url("PostToolUse"),
            "headers": {"Authorization": bearer}, "timeout": 10})
    );
    // Claude Code ignores onFailure on Stop: its moved hook stays behind a command relay;
    // SessionStart is never sent over HTTP and tells hookd the project.
    for (event, timeout) in [("Stop", 610), ("SubagentStop", 610), ("SessionStart", 10)] {
        let hook = first_hook(&host, event);
        assert_eq!(hook["type"], json!("command"), "{event}: {hook}");
        let command = hook["command"].as_str().unwrap();
        assert!(
            command.contains(&format!("relay {event}"))
                || command.contains(&format!("hookd-relay {event}")),
            "{command}"
        );
        assert_eq!(hook["timeout"], json!(timeout), "{event}");
    }

    // In step: nothing to change, and list says which transport and nothing stale.
    let installed = home.snapshot();
    let again = home.ok(&["install", "--host", "claude", "--yes"]);
    assert!(again.contains("nothing to change"), "{again}");
    assert_eq!(home.snapshot(), installed);
    let list = doctor(&home);
    assert!(
        list.contains(&format!("HTTP to 127.0.0.1:{port}")),
        "{list}"
    );
    assert!(!list.contains("stale"), "{list}");
    assert!(!list.contains("nothing listens"), "{list}");
    drop(listener);
    let list = doctor(&home);
    assert!(list.contains("nothing listens"), "{list}");

    home.ok(&["uninstall", "--host", "claude"]);
    assert_eq!(mode(&settings), 0o644);
    // Everything is as before but hookd's secret file, which the daemon keeps using.
    let config = home.home.join(".config");
    let mut after = home.snapshot();
    after.retain(|path, _| !path.starts_with(&config));
    assert_eq!(after, before);
}

#[test]
fn http_transport_is_refused_where_it_would_be_weaker_or_leak_the_secret() {
    let home = Home::new();
    home.write(&home.home.join(".claude/settings.json"), CLAUDE_USER);
    let cases: [(&[&str], &str); 3] = [
        (
            &[
                "install",
                "--host",
                "claude",
                "--scope",
                "project",
                "--transport",
                "http",
                "--yes",
            ],
            "--scope user",
        ),
        (
            &[
                "install",
                "--host",
                "gemini",
                "--transport",
                "http",
                "--yes",
            ],
            "Claude Code",
        ),
        (
            &["install", "--host", "claude", "--port", "1234", "--yes"],
            "--transport http",
        ),
    ];
    let before = home.snapshot();
    for (args, expected) in cases {
        let run = home.hookctl(args);
        assert!(!run.ok, "{args:?}: {}", run.stdout);
        assert!(run.stderr.contains(expected), "{args:?}: {}", run.stderr);
        assert_eq!(home.snapshot(), before, "{args:?}");
    }
}

#[test]
fn sync_follows_new_hooks_and_a_new_secret_and_doctor_sees_both() {
    let (home, settings) = claude_home();
    let (_listener, port) = free_port();
    home.ok(&[
        "install",
        "--host",
        "claude",
        "--transport",
        "http",
        "--port",
        &port.to_string(),
        "--yes",
    ]);
    assert!(!doctor(&home).contains("stale"));

    // A guard on PostToolUse added to hookd's file: the running entry already sends the
    // event, but lets Claude Code go on when hookd is down; sync makes it block.
    let hooks_file = home.home.join(".config/hookd/hooks.json");
    let mut hooks = parse(&hooks_file);
    hooks["hooks"]["AfterTool"] = json!([{"hooks": [{"type": "command", "command": "check.sh"}]}]);
    home.write(&hooks_file, &hooks.to_string());
    let list = doctor(&home);
    assert!(
        list.contains("stale") && list.contains("onFailure"),
        "{list}"
    );
    let report = home.ok(&["sync"]);
    assert!(!report.contains(&secret(&home)), "{report}");
    let host = parse(&settings);
    assert_eq!(
        first_hook(&host, "PostToolUse")["onFailure"],
        json!("block"),
        "{host}"
    );
    assert_eq!(first_hook(&host, "PostToolUse")["timeout"], json!(70));
    assert!(!doctor(&home).contains("stale"));

    // A new secret (the file replaced): hookd would answer 401 to every entry.
    let new_secret = "ab".repeat(32);
    std::fs::write(secret_file(&home), format!("{new_secret}\n")).unwrap();
    let list = doctor(&home);
    assert!(list.contains("401"), "{list}");
    let report = home.ok(&["sync"]);
    assert!(!report.contains(&new_secret), "{report}");
    let host = parse(&settings);
    assert_eq!(
        first_hook(&host, "PreToolUse")["headers"]["Authorization"],
        json!(format!("Bearer {new_secret}"))
    );
    assert_eq!(mode(&settings), 0o600);

    // Readable by others: said.
    std::fs::set_permissions(&settings, std::fs::Permissions::from_mode(0o644)).unwrap();
    let list = doctor(&home);
    assert!(list.contains("chmod 600"), "{list}");
}

#[test]
fn events_hooked_wires_only_what_hookd_has_hooks_for_and_sync_and_doctor_keep_it() {
    let (home, settings) = claude_home();
    let (_listener, port) = free_port();
    let report = home.ok(&[
        "install",
        "--host",
        "claude",
        "--transport",
        "http",
        "--events",
        "hooked",
        "--port",
        &port.to_string(),
        "--yes",
    ]);
    assert!(report.contains("When hookd cannot answer"), "{report}");
    let host = parse(&settings);
    // The moved guard's event with its matcher (Claude Code posts Bash calls only), Stop's
    // relays (hookd's AfterAgent is both of Claude Code's stops) and SessionStart's: no
    // entry for an event without hooks.
    assert_eq!(
        events(&settings),
        ["PreToolUse", "Stop", "SubagentStop", "SessionStart"],
        "{host}"
    );
    assert_eq!(host["hooks"]["PreToolUse"][0]["matcher"], json!("Bash"));
    assert_eq!(first_hook(&host, "PreToolUse")["onFailure"], json!("block"));
    assert!(doctor(&home).contains("the events hookd has hooks for"));
    assert!(!doctor(&home).contains("stale"));

    // A hook on a new event: stale until sync wires it, with its own matcher; sync keeps
    // the choice without being told again.
    let hooks_file = home.home.join(".config/hookd/hooks.json");
    let mut hooks = parse(&hooks_file);
    hooks["hooks"]["AfterTool"] = json!([{"matcher": "write_file", "hooks": [
        {"type": "command", "command": "check.sh"}]}]);
    home.write(&hooks_file, &hooks.to_string());
    assert!(doctor(&home).contains("stale"));
    home.ok(&["sync"]);
    let host = parse(&settings);
    assert_eq!(
        events(&settings),
        [
            "PreToolUse",
            "PostToolUse",
            "Stop",
            "SubagentStop",
            "SessionStart"
        ],
        "{host}"
    );
    assert_eq!(host["hooks"]["PostToolUse"][0]["matcher"], json!("Write"));
    assert_eq!(first_hook(&host, "PostToolUse")["type"], json!("http"));
    assert!(!doctor(&home).contains("stale"));

    // Back to every event, asked for by name.
    home.ok(&["install", "--host", "claude", "--events", "all", "--yes"]);
    assert_eq!(events(&settings).len(), 13);
    // --events without HTTP is refused.
    home.ok(&["uninstall", "--host", "claude"]);
    let run = home.hookctl(&["install", "--host", "claude", "--events", "hooked", "--yes"]);
    assert!(
        !run.ok && run.stderr.contains("--transport http"),
        "{}",
        run.stderr
    );
}

/// Posts `payload` to `url` with `headers` as Claude Code does; returns status and body.
fn post(url: &str, headers: &Value, payload: &Value) -> (u16, String) {
    let rest = url.strip_prefix("http://").unwrap();
    let (authority, path) = rest.split_at(rest.find('/').unwrap());
    let mut stream = TcpStream::connect(authority).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let body = payload.to_string();
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nAccept: application/json, text/plain, */*\r\n\
         Content-Type: application/json\r\nUser-Agent: axios/1.15.2\r\n\
         Content-Length: {}\r\nHost: {authority}\r\nConnection: keep-alive\r\n",
        body.len()
    );
    for (name, value) in headers.as_object().unwrap() {
        request.push_str(&format!("{name}: {}\r\n", value.as_str().unwrap()));
    }
    request.push_str("\r\n");
    request.push_str(&body);
    stream.write_all(request.as_bytes()).unwrap();
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let status = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    let mut length = 0;
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).unwrap();
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap();
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    (status, String::from_utf8(body).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_installed_http_entry_is_answered_by_the_daemons_listener() {
    let guard = json!({"hooks": {"BeforeTool": [{"hooks": [{"type": "command", "command":
        "grep -q 'rm -rf' && echo '{\"decision\":\"deny\",\"reason\":\"no rm -rf\"}'; exit 0"}]}]}});
    let options = DaemonOptions {
        files: vec![("project/.hookd/hooks.json".into(), guard.to_string())],
        ..DaemonOptions::default()
    };
    let daemon = Daemon::start_with_http(json!({}), options).await;
    let endpoint = daemon.http.clone().unwrap();
    let root = daemon.home.parent().unwrap().to_owned();
    let home = daemon.home.clone();
    let socket = daemon.socket.clone();
    let project_dir = daemon.project.clone();
    let port = endpoint.address.port().to_string();
    // hookctl finds the daemon's secret file where the daemon keeps it.
    let hookctl = move |args: &[&str]| {
        let output = Command::new(env!("CARGO_BIN_EXE_hookctl"))
            .arg("--socket")
            .arg(&socket)
            .args(args)
            .current_dir(&project_dir)
            .hermetic(&home)
            .env("XDG_CONFIG_HOME", root.join("config"))
            .env("XDG_STATE_HOME", root.join("state"))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(output.status.success(), "{args:?}: {output:?}");
        String::from_utf8(output.stdout).unwrap()
    };
    let list = tokio::task::spawn_blocking(move || {
        hookctl(&[
            "install",
            "--host",
            "claude",
            "--transport",
            "http",
            "--port",
            &port,
            "--yes",
        ]);
        hookctl(&["list"])
    })
    .await
    .unwrap();
    assert!(
        list.contains(&format!("HTTP to {}", endpoint.address)) && !list.contains("stale"),
        "{list}"
    );
    let host = parse(&daemon.home.join(".claude/settings.json"));
    let entry = first_hook(&host, "PreToolUse");
    assert_eq!(
        entry["headers"]["Authorization"],
        json!(format!("Bearer {}", endpoint.secret))
    );

    // The session's project from its transcript path, as Claude Code writes it.
    let project = daemon.project.display().to_string();
    let slug: String = project
        .chars()
        .map(|c| if c == '/' || c == '.' { '-' } else { c })
        .collect();
    let transcript = daemon
        .home
        .join(format!(".claude/projects/{slug}/s-http.jsonl"));
    let payload = move |command: &str| {
        json!({"session_id": "s-http", "transcript_path": transcript, "cwd": project,
            "hook_event_name": "PreToolUse", "permission_mode": "default",
            "tool_name": "Bash", "tool_input": {"command": command}, "tool_use_id": "t1"})
    };
    let url = entry["url"].as_str().unwrap().to_owned();
    let headers = entry["headers"].clone();
    let (denied, allowed) = tokio::task::spawn_blocking(move || {
        (
            post(&url, &headers, &payload("rm -rf /")),
            post(&url, &headers, &payload("ls")),
        )
    })
    .await
    .unwrap();
    assert_eq!(denied.0, 200, "{denied:?}");
    let answer: Value = serde_json::from_str(&denied.1).unwrap();
    assert_eq!(
        answer["hookSpecificOutput"]["permissionDecision"],
        json!("deny"),
        "{answer}"
    );
    assert_eq!(allowed, (200, "{}".to_owned()));
}

/// Copilot CLI's own hooks file in the user's hooks folder: a guard (which can block) on
/// `preToolUse` and a logger on `sessionEnd` (which cannot).
const COPILOT_USER: &str = r#"{
  "version": 1,
  "hooks": {
    "preToolUse": [{"type": "command", "bash": "guard.sh", "timeoutSec": 20}],
    "sessionEnd": [{"type": "command", "bash": "log.sh", "timeoutSec": 5}]
  }
}
"#;

#[test]
fn copilot_http_install_keeps_guards_behind_relays_and_gives_back_byte_for_byte() {
    let home = Home::new();
    let file = home.home.join(".copilot/hooks/hookd.json");
    home.write(&file, COPILOT_USER);
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let before = home.snapshot();
    let (listener, port) = free_port();
    let port_text = port.to_string();

    // A project's hooks folder is shared: refused, nothing written.
    let run = home.hookctl(&[
        "install",
        "--host",
        "copilot",
        "--scope",
        "project",
        "--transport",
        "http",
        "--yes",
    ]);
    assert!(
        !run.ok && run.stderr.contains("--scope user"),
        "{}",
        run.stderr
    );
    assert_eq!(home.snapshot(), before);

    let report = home.ok(&[
        "install",
        "--host",
        "copilot",
        "--transport",
        "http",
        "--port",
        &port_text,
        "--events",
        "all",
        "--yes",
    ]);
    let secret = secret(&home);
    assert!(!report.contains(&secret), "{report}");
    assert!(
        report.contains("COPILOT_HOOK_ALLOW_LOCALHOST=1"),
        "{report}"
    );
    assert_eq!(mode(&file), 0o600, "the hooks file holds the secret");

    let host = parse(&file);
    let url = |event: &str| format!("http://127.0.0.1:{port}/v1/hooks/copilot/{event}");
    let bearer = format!("Bearer {secret}");
    // The guard can block: Copilot CLI skips an HTTP entry it was not started to allow, and
    // runs the call when one times out, so the event stays a command relay.
    for (event, timeout) in [("sessionStart", 10), ("preToolUse", 30)] {
        let hook = first_hook(&host, event);
        let command = hook["command"].as_str().unwrap_or_default();
        assert!(
            command.contains(&format!("relay {event} --dialect copilot")),
            "{event}: {hook}"
        );
        assert_eq!(hook["timeoutSec"], json!(timeout), "{event}: {hook}");
    }
    // The logger cannot block: an HTTP entry, its timeout in seconds, no onFailure.
    assert_eq!(
        first_hook(&host, "sessionEnd"),
        json!({"type": "http", "url": url("sessionEnd"),
            "headers": {"Authorization": bearer}, "timeoutSec": 15})
    );
    // Events without hooks that let Copilot go on when hookd is down: HTTP entries, so a hook
    // added to hookd's files later runs in sessions already started.
    for event in ["userPromptSubmitted", "postToolUse", "agentStop"] {
        assert_eq!(
            first_hook(&host, event),
            json!({"type": "http", "url": url(event),
                "headers": {"Authorization": bearer}, "timeoutSec": 10}),
            "{event}"
        );
    }

    // list and doctor say which transport and what copilot must be started with.
    let list = doctor(&home);
    assert!(
        list.contains(&format!("HTTP to 127.0.0.1:{port}"))
            && list.contains("COPILOT_HOOK_ALLOW_LOCALHOST=1")
            && list.contains("this shell does not set"),
        "{list}"
    );
    assert!(!list.contains("stale"), "{list}");
    let again = home.ok(&["install", "--host", "copilot", "--yes"]);
    assert!(again.contains("nothing to change"), "{again}");

    drop(listener);
    home.ok(&["uninstall", "--host", "copilot"]);
    assert_eq!(mode(&file), 0o644);
    let config = home.home.join(".config");
    let mut after = home.snapshot();
    after.retain(|path, _| !path.starts_with(&config));
    assert_eq!(after, before);

    // Installed again, then a guard added on postToolUse: doctor sees the HTTP entry can no
    // longer stay, and sync makes it a relay.
    home.ok(&[
        "install",
        "--host",
        "copilot",
        "--transport",
        "http",
        "--port",
        &port_text,
        "--events",
        "all",
        "--yes",
    ]);
    assert_eq!(
        first_hook(&parse(&file), "postToolUse")["type"],
        json!("http")
    );
    let hooks_file = home.home.join(".config/hookd/hooks.json");
    let mut hooks = parse(&hooks_file);
    hooks["hooks"]["AfterTool"] = json!([{"hooks": [{"type": "command", "command": "check.sh"}]}]);
    home.write(&hooks_file, &hooks.to_string());
    assert!(doctor(&home).contains("stale"));
    home.ok(&["sync"]);
    let hook = first_hook(&parse(&file), "postToolUse");
    assert!(
        hook["command"]
            .as_str()
            .is_some_and(|command| command.contains("relay postToolUse --dialect copilot")),
        "{hook}"
    );
    assert!(!doctor(&home).contains("stale"));
}

#[test]
fn a_copilot_http_install_posts_only_hooked_events_by_default() {
    let home = Home::new();
    let file = home.home.join(".copilot/hooks/hookd.json");
    home.write(&file, COPILOT_USER);
    let (_listener, port) = free_port();
    let port_text = port.to_string();
    let report = home.ok(&[
        "install",
        "--host",
        "copilot",
        "--transport",
        "http",
        "--port",
        &port_text,
        "--yes",
    ]);
    let host = parse(&file);
    let events: Vec<&String> = host["hooks"].as_object().unwrap().keys().collect();
    // Copilot pays for every post: events no hook wants get no entry.
    for unhooked in ["userPromptSubmitted", "postToolUse", "agentStop"] {
        assert!(
            !events.iter().any(|event| *event == unhooked),
            "{unhooked}: {host}\n{report}"
        );
    }
    assert_eq!(
        first_hook(&host, "sessionEnd")["type"],
        json!("http"),
        "{host}"
    );
}
