//! The `hookd` command line: every default in `--help`, `--audit-log` creating its directory
//! (mode 0700), and a user error said in one line without a backtrace.

// Test fixtures may unwrap: a failure here is a failed test, not a daemon bug.
#![allow(clippy::unwrap_used)]

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
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("state/hookd/audit.log");
    let socket = dir.path().join("run/hookd.sock");
    let mut child = Command::new(env!("CARGO_BIN_EXE_hookd"))
        .arg("--socket")
        .arg(&socket)
        .arg("--audit-log")
        .arg(&log)
        .env("HOME", dir.path())
        .env(
            "GEMINI_CLI_SYSTEM_SETTINGS_PATH",
            dir.path().join("none.json"),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !log.exists() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("hookd exited: {status}");
        }
        assert!(
            Instant::now() < deadline,
            "no audit log at {}",
            log.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    let _ = child.wait();
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
        .env("HOME", dir.path())
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
