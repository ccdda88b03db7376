//! The `hookd` command line: every default in `--help`, `--audit-log` creating its directory
//! (mode 0700), and a user error said in one line without a backtrace.

// Test fixtures may unwrap: a failure here is a failed test, not a daemon bug.
#![allow(clippy::unwrap_used)]

use hookd_testkit::{DaemonProcess, Hermetic};
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn help_shows_every_default() {
    let output = Command::new(env!("CARGO_BIN_EXE_hookd"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(output.status.success());
    let help = String::from_utf8(output.stdout).unwrap();
    // Each option is followed by its description; the description must name a default or
    // say the option is off unless given.
    let mut options = Vec::new();
    let mut current: Option<(String, String)> = None;
    for line in help.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("--") || trimmed.starts_with("-h,") || trimmed.starts_with("-V,") {
            if let Some(option) = current.take() {
                options.push(option);
            }
            let name = trimmed.split_whitespace().next().unwrap().to_owned();
            current = Some((name, trimmed.to_owned()));
        } else if let Some((_, text)) = &mut current {
            text.push(' ');
            text.push_str(trimmed);
        }
    }
    options.extend(current);
    assert!(options.len() > 15, "{help}");
    for (name, text) in options {
        if matches!(name.as_str(), "-h," | "-V,") {
            continue;
        }
        let says_default = text.contains("[default:")
            || text.contains("Off by default")
            || text.contains("off by default")
            || text.contains("Off by default.");
        let is_flag = !text.contains('<');
        assert!(
            says_default || is_flag,
            "{name} does not show its default: {text}"
        );
    }
    assert!(!help.contains("decision D"), "{help}");
}

#[test]
fn audit_log_creates_its_directory_private() {
    let fixture = DaemonProcess::prepare(None);
    let dir = &fixture.dir;
    let log = dir.path().join("state/hookd/audit.log");
    let mut child = fixture.spawn(
        fixture
            .hookd(env!("CARGO_BIN_EXE_hookd"))
            .arg("--audit-log")
            .arg(&log),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while !log.exists() {
        if let Some(status) = child.0.try_wait().unwrap() {
            panic!("hookd exited: {status}");
        }
        assert!(
            Instant::now() < deadline,
            "no audit log at {}",
            log.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    drop(child);
    for created in [dir.path().join("state"), dir.path().join("state/hookd")] {
        let mode = std::fs::metadata(&created).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "{}", created.display());
    }
}

#[test]
fn a_user_error_is_one_line_without_a_backtrace() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("file"), "").unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_hookd"))
        .arg("--socket")
        .arg(dir.path().join("file/hookd.sock"))
        .args(["--log-level", "off"])
        .env("RUST_BACKTRACE", "1")
        .hermetic(dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("hookd: cannot listen on"), "{stderr}");
    assert!(!stderr.to_lowercase().contains("backtrace"), "{stderr}");
}

#[test]
fn man_prints_the_man_page() {
    let output = Command::new(env!("CARGO_BIN_EXE_hookd"))
        .arg("--man")
        .output()
        .unwrap();
    assert!(output.status.success());
    let page = String::from_utf8(output.stdout).unwrap();
    assert!(
        page.contains(".TH hookd 1") && page.contains("audit\\-log"),
        "{page}"
    );
}

/// Writes one length-prefixed JSON frame.
fn write_frame(stream: &mut std::os::unix::net::UnixStream, value: &serde_json::Value) {
    use std::io::Write;
    let body = value.to_string();
    let mut frame = (body.len() as u32).to_be_bytes().to_vec();
    frame.extend_from_slice(body.as_bytes());
    stream.write_all(&frame).unwrap();
}

/// Reads one length-prefixed JSON frame.
fn read_frame(stream: &mut std::os::unix::net::UnixStream) -> serde_json::Value {
    use std::io::Read;
    let mut prefix = [0u8; 4];
    stream.read_exact(&mut prefix).unwrap();
    let mut body = vec![0u8; u32::from_be_bytes(prefix) as usize];
    stream.read_exact(&mut body).unwrap();
    serde_json::from_slice(&body).unwrap()
}

/// Runs `hookd --oneshot` (plus `extra`) on one event and returns its result frame.
fn oneshot(dir: &std::path::Path, socket: &std::path::Path, extra: &[&str]) -> serde_json::Value {
    let (mut ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_hookd"))
        .args(["--oneshot", "--socket"])
        .arg(socket)
        .args(extra)
        .hermetic(dir)
        .env("XDG_STATE_HOME", dir.join("state"))
        .env("GEMINI_CLI_SYSTEM_SETTINGS_PATH", dir.join("none.json"))
        .stdin(Stdio::from(std::os::fd::OwnedFd::from(theirs)))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    ours.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write_frame(
        &mut ours,
        &serde_json::json!({"type": "hello", "protocol": hookd_protocol::PROTOCOL_VERSION,
                            "client": "cli-test"}),
    );
    write_frame(
        &mut ours,
        &serde_json::json!({"type": "event", "id": 1, "event": "BeforeTool",
                            "cwd": dir.display().to_string(),
                            "input": {"tool_name": "run_shell_command",
                                      "tool_input": {"command": "ls"}}}),
    );
    assert_eq!(read_frame(&mut ours)["type"], "hello");
    let result = read_frame(&mut ours);
    drop(ours);
    // Nothing left to serve: the engine exits on its own.
    assert!(child.wait().unwrap().success());
    result
}

#[test]
fn oneshot_answers_one_connection_with_the_options_the_daemon_recorded() {
    // The daemon's home is where the one-shot engine runs too.
    let fixture = DaemonProcess::prepare(None);
    let dir = fixture.home.as_path();
    let socket = &fixture.socket;
    let marker = dir.join("ran");
    // A hook that fails without deciding, after leaving a mark; no on_failure of its own.
    std::fs::create_dir_all(dir.join(".config/hookd")).unwrap();
    let hooks = serde_json::json!({"hooks": {"BeforeTool": [{"hooks": [
        {"name": "flaky", "type": "command",
         "command": format!("touch '{}'; exit 1", marker.display())}
    ]}]}});
    std::fs::write(dir.join(".config/hookd/hooks.json"), hooks.to_string()).unwrap();
    let decision = |result: &serde_json::Value| {
        result["final_output"]["decision"]
            .as_str()
            .unwrap_or("allow")
            .to_owned()
    };
    // No daemon ever ran on this socket: the defaults (a failure allows, as Gemini CLI).
    let result = oneshot(dir, socket, &[]);
    assert_eq!(result["type"], "result", "{result}");
    assert_eq!(decision(&result), "allow", "{result}");
    assert!(marker.exists());
    // A daemon started with --on-failure deny records it for the engine.
    let daemon = fixture.spawn(
        fixture
            .hookd(env!("CARGO_BIN_EXE_hookd"))
            .args(["--on-failure", "deny"])
            .env("XDG_STATE_HOME", dir.join("state")),
    );
    // The daemon records its options once its socket listens, before it serves (the write is
    // fsynced, so it can land after a first connect succeeds): wait until it is there.
    let engine_records = || -> Vec<std::fs::DirEntry> {
        std::fs::read_dir(dir.join("state/hookd"))
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .filter(|entry| entry.file_name().to_string_lossy().starts_with("engine-"))
                    .collect()
            })
            .unwrap_or_default()
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::os::unix::net::UnixStream::connect(socket).is_err() || engine_records().is_empty() {
        assert!(
            Instant::now() < deadline,
            "hookd never listened with its options recorded"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    drop(daemon);
    let records = engine_records();
    assert_eq!(records.len(), 1);
    let mode = records[0].metadata().unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    std::fs::remove_file(&marker).unwrap();
    let result = oneshot(dir, socket, &[]);
    assert_eq!(decision(&result), "deny", "{result}");
    assert!(marker.exists());
    // Plan only: nothing runs, the failure policy decides.
    std::fs::remove_file(&marker).unwrap();
    let result = oneshot(dir, socket, &["--plan-only"]);
    assert_eq!(decision(&result), "deny", "{result}");
    assert!(!marker.exists(), "a plan-only engine ran a hook");
    // Without a socket on stdin it says what it needs, in one line.
    let output = Command::new(env!("CARGO_BIN_EXE_hookd"))
        .arg("--oneshot")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("connected Unix socket"), "{stderr}");
}
