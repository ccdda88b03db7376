//! The real `hookd` binary started by hand: it refuses a socket directory it did not create
//! and that is not safe (without changing it), removes at stop only the socket it bound, and
//! raises its open-files limit while its hooks keep the original one.

// Test fixtures may unwrap: a failure here is a failed test, not a daemon bug.
#![allow(clippy::unwrap_used)]

use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::{Value, json};

use hookd_testkit::DaemonProcess;
use hookd_testkit::Hermetic;

const PATIENCE: Duration = Duration::from_secs(30);

fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `hookd --socket SOCKET` under bash, after `ulimit_args` (e.g. `-Sn 256`), with a temp home.
fn hookd(home: &Path, socket: &Path, ulimit_args: &str) -> Command {
    let mut command = Command::new("bash");
    command
        .arg("-c")
        .arg(format!(
            "ulimit {ulimit_args} && exec \"$0\" --socket \"$1\" --log-level debug"
        ))
        .arg(env!("CARGO_BIN_EXE_hookd"))
        .arg(socket)
        .isolated(home, home)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

fn send(stream: &mut UnixStream, message: &Value) {
    let body = serde_json::to_vec(message).unwrap();
    stream
        .write_all(&u32::try_from(body.len()).unwrap().to_be_bytes())
        .unwrap();
    stream.write_all(&body).unwrap();
}

fn receive(stream: &mut UnixStream) -> Value {
    let mut len = [0u8; 4];
    stream.read_exact(&mut len).unwrap();
    let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
    stream.read_exact(&mut body).unwrap();
    serde_json::from_slice(&body).unwrap()
}

/// The soft and hard "Max open files" of `pid`.
fn open_files_limits(pid: u32) -> (String, String) {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let line = limits
        .lines()
        .find(|line| line.starts_with("Max open files"))
        .unwrap();
    let fields: Vec<&str> = line.split_whitespace().collect();
    (fields[3].to_owned(), fields[4].to_owned())
}

#[test]
fn unsafe_socket_directories_are_refused_and_left_as_they_are() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    // A directory anyone may write to (a 1777 one like /tmp, or another user's), and a
    // symbolic link planted to point at one of the user's own directories.
    let wide = tmp.path().join("wide");
    std::fs::create_dir(&wide).unwrap();
    std::fs::set_permissions(&wide, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let victim = tmp.path().join("victim");
    std::fs::create_dir(&victim).unwrap();
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o755)).unwrap();
    let planted = tmp.path().join("planted");
    std::os::unix::fs::symlink(&victim, &planted).unwrap();
    for (dir, mode) in [(&wide, 0o1777), (&planted, 0o755)] {
        let output = hookd(&home, &dir.join("hookd.sock"), "-Sn 1024")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_ne!(output.status.code(), Some(0), "{stderr}");
        assert!(
            stderr.contains(&dir.display().to_string()) && stderr.contains("HOOKD_SOCKET"),
            "{stderr}"
        );
        assert_eq!(std::fs::metadata(dir).unwrap().mode() & 0o7777, mode);
        assert!(!dir.join("hookd.sock").exists());
    }
}

#[test]
fn a_stopping_daemon_leaves_a_socket_it_did_not_bind_and_raises_its_fd_limit() {
    let fixture = DaemonProcess::prepare(None);
    let (home, project) = (&fixture.home, &fixture.project);
    // A hook that reports its own soft open-files limit.
    let report = home.join("nofile");
    let settings = json!({"hooks": {"BeforeTool": [{"hooks": [{
        "name": "limit", "type": "command",
        "command": format!("ulimit -Sn > {}", report.display()),
    }]}]}});
    std::fs::write(home.join(".gemini/settings.json"), settings.to_string()).unwrap();
    let socket = &fixture.socket;
    let (_, hard) =
        nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE).unwrap();
    let soft = 256.min(hard);
    let mut daemon = fixture.spawn(
        fixture
            .command("bash")
            .arg("-c")
            .arg(format!(
                "ulimit -Sn {soft} && exec \"$0\" --socket \"$1\" --log-level debug"
            ))
            .arg(env!("CARGO_BIN_EXE_hookd"))
            .arg(socket),
    );
    wait_until("hookd to listen", || UnixStream::connect(socket).is_ok());

    // The daemon's soft limit is its hard limit now.
    let (daemon_soft, daemon_hard) = open_files_limits(daemon.0.id());
    assert_eq!(daemon_soft, daemon_hard);
    assert_eq!(daemon_hard, hard.to_string());
    // Its hooks get the soft limit it was started with.
    let mut stream = UnixStream::connect(socket).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    send(
        &mut stream,
        &json!({"type": "hello", "protocol": 1, "client": "t"}),
    );
    assert_eq!(receive(&mut stream)["type"], "hello");
    send(
        &mut stream,
        &json!({"type": "event", "id": 1, "event": "BeforeTool",
                "cwd": project.display().to_string(), "input": {"tool_name": "x"}}),
    );
    assert_eq!(receive(&mut stream)["type"], "result");
    assert_eq!(
        std::fs::read_to_string(&report).unwrap().trim(),
        soft.to_string()
    );
    drop(stream);

    // Another process binds the path now (as systemd does after `hookctl service install`).
    std::fs::remove_file(socket).unwrap();
    let other = UnixListener::bind(socket).unwrap();
    let other_inode = std::fs::metadata(socket).unwrap().ino();
    kill(
        Pid::from_raw(i32::try_from(daemon.0.id()).unwrap()),
        Signal::SIGTERM,
    )
    .unwrap();
    let mut status = None;
    wait_until("hookd to stop", || {
        status = daemon.0.try_wait().unwrap();
        status.is_some()
    });
    assert_eq!(status.unwrap().code(), Some(0));
    assert_eq!(
        std::fs::metadata(socket).map(|meta| meta.ino()).ok(),
        Some(other_inode),
        "the stopping daemon removed a socket it did not bind"
    );
    drop(other);
}
