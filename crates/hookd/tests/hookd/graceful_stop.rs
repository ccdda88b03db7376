//! SIGTERM while a relayed call is in flight (what `systemctl restart` does): the call gets
//! its real answer, and the stopping daemon accepts no new connection, so a retrying client
//! reaches the next daemon instead of one that is going away.

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use hookd_testkit::DaemonProcess;

use crate::wire::{frame, receive};

const PATIENCE: Duration = Duration::from_secs(30);

fn connect(socket: &Path) -> UnixStream {
    let started = Instant::now();
    loop {
        match UnixStream::connect(socket) {
            Ok(stream) => {
                stream.set_read_timeout(Some(PATIENCE)).expect("timeout");
                return stream;
            }
            Err(_) if started.elapsed() < PATIENCE => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(error) => panic!("hookd never listened on {}: {error}", socket.display()),
        }
    }
}

fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let started = Instant::now();
    while !condition() {
        assert!(started.elapsed() < PATIENCE, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn sigterm_answers_the_call_in_flight_and_refuses_new_connections() {
    let fixture = DaemonProcess::prepare(None);
    let (home, project) = (&fixture.home, &fixture.project);
    let started = project.join("started");
    let release = project.join("release");
    // The hook runs until the test lets it go, so the signal surely lands mid-run.
    let command = format!(
        "touch {started:?}; while [ ! -e {release:?} ]; do sleep 0.01; done; \
         echo '{{\"decision\":\"deny\",\"reason\":\"the real answer\"}}'"
    );
    let settings = json!({"hooks": {"BeforeTool": [{"hooks": [
        {"name": "slow-guard", "type": "command", "command": command}]}]}});
    std::fs::write(home.join(".gemini/settings.json"), settings.to_string()).expect("write");
    let socket = &fixture.socket;
    let mut daemon = fixture.spawn(&mut fixture.hookd(env!("CARGO_BIN_EXE_hookd")));

    // As `hookctl relay` does: hello and event in one write.
    let mut relay = connect(socket);
    let mut bytes = frame(&json!({"type": "hello", "protocol": 1, "client": "relay-test"}));
    bytes.extend(frame(&json!({
        "type": "event", "id": 1, "event": "BeforeTool",
        "cwd": project.display().to_string(),
        "relayed_by": "claude",
        "input": {"tool_name": "run_shell_command", "tool_input": {"command": "rm -rf ."}}
    })));
    relay.write_all(&bytes).expect("write");
    assert_eq!(receive(&mut relay)["type"], "hello");
    wait_until("the hook to start", || started.exists());

    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(daemon.0.id()).expect("pid")),
        nix::sys::signal::Signal::SIGTERM,
    )
    .expect("SIGTERM");
    // The stopping daemon takes no new connection, though it is still running its hook.
    wait_until("new connections to be refused", || {
        UnixStream::connect(socket).is_err()
    });
    assert!(
        daemon.0.try_wait().expect("status").is_none(),
        "hookd exited before answering the call in flight"
    );

    std::fs::write(&release, "").expect("release the hook");
    let answer = receive(&mut relay);
    assert_eq!(answer["type"], "result", "{answer}");
    assert_eq!(answer["id"], 1, "{answer}");
    assert_eq!(answer["final_output"]["decision"], "deny", "{answer}");
    assert_eq!(
        answer["final_output"]["reason"], "the real answer",
        "{answer}"
    );
    drop(relay);

    let started_wait = Instant::now();
    let status = loop {
        if let Some(status) = daemon.0.try_wait().expect("status") {
            break status;
        }
        assert!(started_wait.elapsed() < PATIENCE, "hookd did not exit");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(status.success(), "hookd exited with {status}");
}

/// The audit log on a FIFO whose reader opened it and never reads: after 64 KiB the writer
/// thread is stuck in `write`. Events are still answered at once (the log never holds a
/// decision), and SIGTERM still ends the process within the stop's deadline for the audit
/// log (5 s), with a log line saying how many audit lines were lost.
#[test]
fn sigterm_with_a_stuck_audit_fifo_exits_within_its_deadline() {
    use std::os::unix::fs::OpenOptionsExt;
    let fixture = DaemonProcess::prepare(None);
    let (dir, home, project) = (&fixture.dir, &fixture.home, &fixture.project);
    let settings = json!({"hooks": {"BeforeTool": [{"hooks": [
        {"name": "gate", "type": "command", "on_failure": "deny",
         "command": "echo '{\"decision\":\"deny\",\"reason\":\"gate\"}'"}]}]}});
    std::fs::write(home.join(".gemini/settings.json"), settings.to_string()).expect("write");
    let fifo = dir.path().join("audit.fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("mkfifo");
    // The reader: opened (so the daemon's open does not wait for one), never read.
    let _reader = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
        .open(&fifo)
        .expect("open the reader");
    let log = dir.path().join("hookd.log");
    let socket = &fixture.socket;
    let mut daemon = fixture.spawn(
        fixture
            .hookd(env!("CARGO_BIN_EXE_hookd"))
            .arg("--audit-log")
            .arg(&fifo)
            .arg("--audit-stdin")
            .stderr(std::fs::File::create(&log).expect("log")),
    );

    let mut client = connect(socket);
    client
        .write_all(&frame(
            &json!({"type": "hello", "protocol": 1, "client": "fifo-test"}),
        ))
        .expect("write");
    assert_eq!(receive(&mut client)["type"], "hello");
    // Each audit line carries 32 KiB of stdin: 16 events are four times the FIFO's buffer.
    let filler = "x".repeat(32 * 1024);
    let mut slowest = Duration::ZERO;
    for id in 1..=16 {
        let sent = Instant::now();
        client
            .write_all(&frame(&json!({
                "type": "event", "id": id, "event": "BeforeTool",
                "cwd": project.display().to_string(),
                "input": {"tool_name": "run_shell_command",
                          "tool_input": {"command": "rm -rf .", "note": filler}}
            })))
            .expect("write");
        let answer = receive(&mut client);
        slowest = slowest.max(sent.elapsed());
        assert_eq!(answer["final_output"]["decision"], "deny", "{answer}");
    }
    assert!(
        slowest < Duration::from_secs(1),
        "an event waited for the stuck audit log: {slowest:?}"
    );
    drop(client);

    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(daemon.0.id()).expect("pid")),
        nix::sys::signal::Signal::SIGTERM,
    )
    .expect("SIGTERM");
    let signalled = Instant::now();
    // The audit log's 5 s, and the rest of an idle stop (milliseconds) with room for a slow
    // machine; without the deadline the process never exits.
    let deadline = Duration::from_secs(5) + Duration::from_secs(3);
    let status = loop {
        if let Some(status) = daemon.0.try_wait().expect("status") {
            break status;
        }
        assert!(
            signalled.elapsed() < deadline,
            "hookd did not exit within {deadline:?} of SIGTERM; its log:\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(status.success(), "hookd exited with {status}");
    let text = std::fs::read_to_string(&log).expect("log");
    assert!(text.contains("audit lines lost"), "{text}");
    assert!(text.contains("stopped"), "{text}");
}
