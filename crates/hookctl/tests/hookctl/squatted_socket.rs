//! `hookctl` against a socket another local user could have planted: a listener in a
//! directory others can write to, or behind a symbolic link. The relay must answer with its
//! unreachable policy (the reason in a deny's answer, or in the relay's log when it allows,
//! since an allowing relay prints nothing the host would show), the other commands must fail with a clear error,
//! and the listener must never receive a byte (no hello, no environment, no event).

// Test fixtures may unwrap: a failure here is a failed test, not a daemon bug.
#![allow(clippy::unwrap_used)]

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The state directory the runs against `socket` use: one per socket directory, beside it.
fn state_dir(socket: &Path) -> std::path::PathBuf {
    socket.parent().unwrap().with_extension("state")
}

/// Runs `hookctl ARGS --socket SOCKET` with `stdin`; returns (exit code, stdout, stderr, time).
fn hookctl(args: &[&str], socket: &Path, stdin: &str) -> (i32, String, String, Duration) {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_hookctl"))
        .args(args)
        .arg("--socket")
        .arg(socket)
        .env_remove("HOOKD_SOCKET")
        .env_remove("HOOKD_RELAY_UNREACHABLE")
        .env("XDG_STATE_HOME", state_dir(socket))
        .env("SECRET_FOR_TEST", "must-not-leak")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
    let output = child.wait_with_output().unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
        started.elapsed(),
    )
}

/// Whatever connected to `listener` and what it sent, without waiting.
fn received(listener: &UnixListener) -> Vec<u8> {
    listener.set_nonblocking(true).unwrap();
    let mut bytes = Vec::new();
    while let Ok((mut stream, _)) = listener.accept() {
        stream
            .set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        let _ = stream.read_to_end(&mut bytes);
        bytes.push(b'|');
    }
    bytes
}

#[test]
fn a_planted_socket_gets_nothing_and_the_relay_follows_its_unreachable_policy() {
    let tmp = tempfile::tempdir().unwrap();
    // A directory every user can write to (as /tmp/hookd-<uid> created first by someone else
    // would be, modulo its owner), and a symbolic link to a private one.
    let wide = tmp.path().join("wide");
    std::fs::create_dir(&wide).unwrap();
    std::fs::set_permissions(&wide, std::fs::Permissions::from_mode(0o777)).unwrap();
    let private = tmp.path().join("private");
    std::fs::create_dir(&private).unwrap();
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).unwrap();
    let link = tmp.path().join("link");
    std::os::unix::fs::symlink(&private, &link).unwrap();
    let planted = [
        (
            wide.join("hookd.sock"),
            wide.join("hookd.sock"),
            "written by other users",
        ),
        (
            private.join("hookd.sock"),
            link.join("hookd.sock"),
            "symbolic link",
        ),
    ];
    let payload = r#"{"tool_name":"run_shell_command","tool_input":{"command":"ls"}}"#;
    for (bound, used, why) in &planted {
        let listener = UnixListener::bind(bound).unwrap();

        let (code, stdout, stderr, elapsed) = hookctl(
            &["relay", "BeforeTool", "--unreachable", "deny"],
            used,
            payload,
        );
        assert_eq!(code, 0, "{stderr}");
        let answer: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(answer["decision"], "deny", "{answer}");
        // The reason reaches the host (and the user) in the deny itself.
        assert!(
            answer["reason"].as_str().unwrap_or("").contains(why),
            "{used:?}: {answer}"
        );
        assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");

        // `allow` allows as if there were no hook (nothing on stdout or stderr) and still
        // says why, in the relay's log.
        let (code, stdout, stderr, _) = hookctl(
            &["relay", "BeforeTool", "--unreachable", "allow"],
            used,
            payload,
        );
        assert_eq!((code, stdout.as_str(), stderr.as_str()), (0, "", ""));
        let log =
            std::fs::read_to_string(state_dir(used).join("hookd/relay.log")).unwrap_or_default();
        assert!(log.contains(why), "{log}");

        // Other commands fail, naming the reason.
        for command in [
            &["status"][..],
            &["ping"][..],
            &["emit", "BeforeTool", "--input", "-"],
        ] {
            let (code, _, stderr, _) = hookctl(command, used, payload);
            assert_ne!(code, 0, "{command:?}");
            assert!(
                stderr.contains("refusing to talk to the hookd socket") && stderr.contains(why),
                "{command:?}: {stderr}"
            );
        }

        let sent = received(&listener);
        assert!(sent.is_empty(), "the planted socket received {sent:?}");
        std::fs::remove_file(bound).unwrap();
    }
}
