//! Policy hooks (`"type": "policy"`), end to end: the real daemon evaluating Rego files with
//! its own binary as a persistent worker; the decision each relaying host hears; a save picked
//! up between two events; and hostile policies (a loop, a huge array, a pathological regex, a
//! FIFO or `/dev/zero` in place of the file, an untrusted project policy), each bounded and
//! decided by its failure policy while another client's event is answered.

use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hookd_testkit::{DaemonProcess, KillOnDrop};
use serde_json::{Value, json};

use crate::wire::{frame, receive};

const PATIENCE: Duration = Duration::from_secs(30);

/// The starter shell policy of the docs, shortened: denies `rm -rf`, and denies `sudo` for
/// Claude Code only (to show the host reaches the policy).
const SHELL_POLICY: &str = r#"package hookd.shell

deny contains "rm -rf is not allowed" if {
  input.tool.kind == "shell"
  regex.match(`\brm\s+-[a-zA-Z]*[rR][a-zA-Z]*[fF]`, input.tool.command)
}

deny contains "no sudo from Claude Code" if {
  input.host == "claude"
  startswith(input.tool.command, "sudo ")
}

context contains "checked by the shell policy" if input.tool.kind == "shell"
"#;

/// A daemon whose user hooks file has the given BeforeTool hooks.
struct PolicyDaemon {
    fixture: DaemonProcess,
    config: PathBuf,
    _process: Option<KillOnDrop>,
}

impl PolicyDaemon {
    fn start(hooks: Value, extra: &[&str]) -> PolicyDaemon {
        let fixture = DaemonProcess::prepare(None);
        let config = fixture.dir.path().join("config");
        std::fs::create_dir_all(config.join("hookd")).expect("mkdir");
        let daemon = |process| PolicyDaemon {
            fixture,
            config,
            _process: process,
        };
        let mut this = daemon(None);
        this.write_hooks(&hooks);
        let mut command = this.fixture.hookd(env!("CARGO_BIN_EXE_hookd"));
        command.args(extra).env("XDG_CONFIG_HOME", &this.config);
        this._process = Some(this.fixture.spawn(&mut command));
        this
    }

    fn write_hooks(&self, hooks: &Value) {
        std::fs::write(self.config.join("hookd/hooks.json"), hooks.to_string()).expect("write");
    }

    /// Sends a BeforeTool event for a shell `command`, relayed by `host`; returns the result.
    fn shell(&self, host: &str, command: &str) -> Value {
        let project = self.fixture.project.display().to_string();
        let mut stream = UnixStream::connect(&self.fixture.socket).expect("connect");
        stream.set_read_timeout(Some(PATIENCE)).expect("timeout");
        let mut bytes = frame(&json!({"type": "hello", "protocol": 1, "client": "policy-test"}));
        bytes.extend(frame(&json!({
            "type": "event", "id": 1, "event": "BeforeTool",
            "cwd": project, "project_dir": project, "session_id": "s1",
            "relayed_by": host,
            "input": {"tool_name": "run_shell_command", "tool_input": {"command": command}}
        })));
        use std::io::Write as _;
        stream.write_all(&bytes).expect("write");
        assert_eq!(receive(&mut stream)["type"], "hello");
        let answer = receive(&mut stream);
        assert_eq!(answer["type"], "result", "{answer}");
        answer
    }
}

/// The BeforeTool hooks file with one policy hook.
fn policy_hooks(policy: &Path, extra: Value) -> Value {
    let mut hook = json!({"type": "policy", "name": "shell-policy",
        "policy": policy.display().to_string()});
    if let (Some(hook), Value::Object(extra)) = (hook.as_object_mut(), extra) {
        hook.extend(extra);
    }
    json!({"hooks": {"BeforeTool": [{"matcher": "run_shell_command", "hooks": [hook]}]}})
}

fn decision(result: &Value) -> (Option<&str>, &str) {
    let output = &result["final_output"];
    (
        output["decision"].as_str(),
        output["reason"].as_str().unwrap_or(""),
    )
}

#[test]
fn one_policy_decides_for_every_host_and_a_save_applies_to_the_next_event() {
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = dir.path().join("shell.rego");
    std::fs::write(&policy, SHELL_POLICY).expect("write");
    let daemon = PolicyDaemon::start(policy_hooks(&policy, json!({})), &[]);

    for host in ["gemini", "claude", "codex"] {
        let result = daemon.shell(host, "rm -rf build");
        assert_eq!(
            decision(&result),
            (Some("deny"), "rm -rf is not allowed"),
            "{host}: {result}"
        );
        let result = daemon.shell(host, "ls -la");
        assert_eq!(decision(&result).0, Some("allow"), "{host}: {result}");
        assert_eq!(
            result["final_output"]["hookSpecificOutput"]["additionalContext"],
            "checked by the shell policy",
            "{host}: {result}"
        );
    }
    // The host reaches the policy.
    assert_eq!(decision(&daemon.shell("claude", "sudo ls")).0, Some("deny"));
    assert_eq!(decision(&daemon.shell("codex", "sudo ls")).0, Some("allow"));

    // A save is compiled before the next event; a broken save keeps the last good version.
    let next = dir.path().join("next.rego");
    std::fs::write(
        &next,
        "package hookd.shell\n\ndeny contains \"no git push\" if contains(input.tool.command, \"git push\")\n",
    )
    .expect("write");
    std::fs::rename(&next, &policy).expect("save");
    assert_eq!(
        decision(&daemon.shell("gemini", "git push")),
        (Some("deny"), "no git push")
    );
    std::fs::write(&next, "package hookd.shell\n\ndeny if {\n").expect("write");
    std::fs::rename(&next, &policy).expect("save");
    assert_eq!(
        decision(&daemon.shell("gemini", "git push")),
        (Some("deny"), "no git push")
    );

    // No process per decision: one evaluator per session and host (three hosts here) for
    // the 13 events, kept across the saves.
    assert_eq!(evaluators(&policy), 3);
}

/// How many policy evaluators run for `policy` (processes whose command line is the
/// daemon's `--policy-worker` with that file).
fn evaluators(policy: &Path) -> usize {
    let wanted = policy.display().to_string();
    std::fs::read_dir("/proc")
        .expect("/proc")
        .filter_map(Result::ok)
        .filter_map(|entry| std::fs::read(entry.path().join("cmdline")).ok())
        .filter(|cmdline| {
            let words: Vec<&[u8]> = cmdline.split(|byte| *byte == 0).collect();
            words.contains(&&b"--policy-worker"[..]) && words.contains(&wanted.as_bytes())
        })
        .count()
}

/// The hostile policies: each must be decided by its failure policy (here `deny`), within
/// its timeout, while another hook's event is answered at once.
#[test]
fn hostile_policies_are_bounded_and_decided_by_their_failure_policy() {
    let dir = tempfile::tempdir().expect("tempdir");
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("write");
        path
    };
    let looping = write(
        "loop.rego",
        "package loop\n\ndeny contains \"x\" if {\n  count({[a, b, c] | some a in numbers.range(1, 1000); some b in numbers.range(1, 1000); some c in numbers.range(1, 1000)}) > 0\n}\n",
    );
    let huge = write(
        "huge.rego",
        "package huge\n\ndeny contains \"x\" if {\n  count(numbers.range(1, 10000000000)) > 0\n}\n",
    );
    let regex = write(
        "regex.rego",
        "package re\n\ndeny contains \"matched\" if regex.match(`^(a+)+$`, concat(\"\", [input.tool.command, \"b\"]))\n",
    );
    let fifo = dir.path().join("fifo.rego");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(status.success());
    let zero = dir.path().join("zero.rego");
    std::os::unix::fs::symlink("/dev/zero", &zero).expect("symlink");

    let allow_all = write(
        "allow.rego",
        "package ok\n\ncontext contains \"fine\" if true\n",
    );
    for (policy, bounded_by) in [
        (&looping, "time"),
        (&huge, "memory"),
        (&fifo, "file"),
        (&zero, "file"),
    ] {
        let hooks = json!({"hooks": {"BeforeTool": [
            {"matcher": "run_shell_command", "hooks": [{"type": "policy", "name": "hostile",
                "policy": policy.display().to_string(), "on_failure": "deny",
                "timeout": 3000, "max_memory_mb": 256}]},
            {"matcher": "read_file", "hooks": [{"type": "policy", "name": "fine",
                "policy": allow_all.display().to_string()}]}
        ]}});
        let daemon = PolicyDaemon::start(hooks, &[]);
        // The hostile event in one thread, another client's event in this one.
        let hostile = std::thread::scope(|scope| {
            let hostile = scope.spawn(|| {
                let started = Instant::now();
                (daemon.shell("claude", "ls"), started.elapsed())
            });
            let other = read_file(&daemon);
            assert_eq!(
                other["final_output"]["hookSpecificOutput"]["additionalContext"], "fine",
                "{policy:?}: {other}"
            );
            hostile.join().expect("hostile event")
        });
        let (result, took) = hostile;
        assert_eq!(
            decision(&result).0,
            Some("deny"),
            "{policy:?} ({bounded_by}): {result}"
        );
        assert!(took < Duration::from_secs(10), "{policy:?} took {took:?}");
    }

    // A pathological regex is linear in regorus's regex engine: answered, not stuck.
    let daemon = PolicyDaemon::start(policy_hooks(&regex, json!({"on_failure": "deny"})), &[]);
    let started = Instant::now();
    let result = daemon.shell("gemini", &"a".repeat(50_000));
    assert_eq!(decision(&result).0, Some("allow"), "{result}");
    assert!(started.elapsed() < Duration::from_secs(10));
}

/// A read_file event of another client, answered while the shell event's policy runs.
fn read_file(daemon: &PolicyDaemon) -> Value {
    let project = daemon.fixture.project.display().to_string();
    let mut stream = UnixStream::connect(&daemon.fixture.socket).expect("connect");
    stream.set_read_timeout(Some(PATIENCE)).expect("timeout");
    let mut bytes = frame(&json!({"type": "hello", "protocol": 1, "client": "other"}));
    bytes.extend(frame(&json!({
        "type": "event", "id": 1, "event": "BeforeTool",
        "cwd": project, "project_dir": project, "session_id": "s2",
        "input": {"tool_name": "read_file", "tool_input": {"file_path": "a.txt"}}
    })));
    use std::io::Write as _;
    stream.write_all(&bytes).expect("write");
    receive(&mut stream);
    receive(&mut stream)
}

#[test]
fn an_untrusted_project_policy_is_refused_under_require() {
    let fixture = DaemonProcess::prepare(None);
    let project = fixture.project.clone();
    std::fs::create_dir_all(project.join(".hookd")).expect("mkdir");
    std::fs::write(project.join(".hookd/guard.rego"), SHELL_POLICY).expect("write");
    let hooks = json!({"hooks": {"BeforeTool": [{"matcher": "run_shell_command", "hooks": [
        {"type": "policy", "name": "project-policy", "policy": "guard.rego",
         "on_failure": "deny"}]}]}});
    std::fs::write(project.join(".hookd/hooks.json"), hooks.to_string()).expect("write");
    let config = fixture.dir.path().join("config");
    let mut command = fixture.hookd(env!("CARGO_BIN_EXE_hookd"));
    command
        .args(["--project-hooks", "require"])
        .env("XDG_CONFIG_HOME", &config);
    let daemon = PolicyDaemon {
        _process: Some(fixture.spawn(&mut command)),
        fixture,
        config,
    };
    // Not trusted: not evaluated, and its failure policy (deny) decides, saying why.
    let result = daemon.shell("claude", "ls");
    assert_eq!(decision(&result).0, Some("deny"), "{result}");
    let text = result.to_string();
    assert!(text.contains("trust"), "{text}");
}
