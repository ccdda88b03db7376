//! The daemon binary started by a parent that ignores `SIGCHLD`: a process that ignores it has
//! its exited children reaped by the kernel, and a daemon inherits that disposition across
//! `exec`. hookd must still read its hooks' exit codes, which are decisions.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use hookd_testkit::DaemonProcess;

use crate::wire::receive;

const PATIENCE: Duration = Duration::from_secs(30);

fn send(stream: &mut UnixStream, message: &Value) {
    let body = serde_json::to_vec(message).expect("json");
    let len = u32::try_from(body.len()).expect("small frame");
    stream.write_all(&len.to_be_bytes()).expect("write");
    stream.write_all(&body).expect("write");
}

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

#[test]
fn hook_exit_codes_are_read_when_the_parent_ignored_sigchld() {
    let fixture = DaemonProcess::prepare(None);
    let (home, project) = (&fixture.home, &fixture.project);
    let hook = home.join("block.sh");
    std::fs::write(&hook, "#!/usr/bin/env bash\necho 'not here' >&2\nexit 2\n").expect("write");
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let settings = json!({"hooks": {"BeforeTool": [{"hooks": [
        {"name": "block", "type": "command", "command": hook.display().to_string()}]}]}});
    std::fs::write(home.join(".gemini/settings.json"), settings.to_string()).expect("write");
    let socket = &fixture.socket;

    // bash's `trap '' CHLD` ignores the signal, and `exec` keeps an ignored disposition.
    let daemon = fixture.spawn(
        fixture
            .command("bash")
            .arg("-c")
            .arg("trap '' CHLD; exec \"$0\" --socket \"$1\"")
            .arg(env!("CARGO_BIN_EXE_hookd"))
            .arg(socket),
    );
    let mut stream = connect(socket);
    // Read once it listens: the process is hookd by then, not the bash before its exec.
    if let Ok(status) = std::fs::read_to_string(format!("/proc/{}/status", daemon.0.id())) {
        // The daemon really started with SIGCHLD (signal 17, bit 16) ignored.
        let ignored = status
            .lines()
            .find_map(|line| line.strip_prefix("SigIgn:"))
            .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
            .unwrap_or(0);
        assert_ne!(
            ignored & (1 << 16),
            0,
            "SIGCHLD was not ignored: {ignored:x}"
        );
    }
    send(
        &mut stream,
        &json!({"type": "hello", "protocol": 1, "client": "test"}),
    );
    assert_eq!(receive(&mut stream)["type"], "hello");
    for id in 1..=3 {
        send(
            &mut stream,
            &json!({"type": "event", "id": id, "event": "BeforeTool",
                    "cwd": project.display().to_string(),
                    "input": {"tool_name": "run_shell_command", "tool_input": {"command": "ls"}}}),
        );
        let result = receive(&mut stream);
        assert_eq!(result["type"], "result", "{result}");
        let record = &result["hooks"][0];
        assert_eq!(record["exit_code"], 2, "{result}");
        assert_eq!(result["final_output"]["decision"], "deny", "{result}");
    }
}
