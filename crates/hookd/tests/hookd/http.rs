//! The loopback HTTP listener (`hookd --http`), end to end: the real daemon on an ephemeral
//! port, real hook scripts, requests shaped as Claude Code's HTTP hooks send them (a POST of
//! the hook's stdin JSON with `Content-Type: application/json` and the user's header), and the
//! attacks the listener must refuse or bound while the user's own requests are answered.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hookd_testkit::{DaemonProcess, Hermetic, KillOnDrop};
use serde_json::{Value, json};

use crate::wire::{frame, receive};

const PATIENCE: Duration = Duration::from_secs(30);

/// A daemon serving HTTP hooks on an ephemeral loopback port, with one project whose hookd
/// file has a guard script that denies shell commands containing `rm`.
struct HttpDaemon {
    dir: tempfile::TempDir,
    project: PathBuf,
    socket: PathBuf,
    address: SocketAddr,
    secret: String,
    _process: KillOnDrop,
}

impl HttpDaemon {
    fn start(extra: &[&str]) -> HttpDaemon {
        let fixture = DaemonProcess::prepare(None);
        let project = fixture.project.clone();
        std::fs::create_dir_all(project.join(".hookd")).expect("mkdir");
        std::fs::create_dir_all(project.join("sub")).expect("mkdir");
        let guard = project.join("guard.sh");
        hookd_testkit::write_script(
            &guard,
            "#!/bin/sh\n\
             input=$(cat)\n\
             case \"$input\" in\n\
             *'rm -rf'*) echo '{\"decision\":\"deny\",\"reason\":\"no rm -rf here\"}' ;;\n\
             esac\n\
             exit 0\n",
        );
        let hooks = json!({"hooks": {"BeforeTool": [{"matcher": "run_shell_command", "hooks": [
            {"name": "guard", "type": "command", "command": guard.display().to_string()}
        ]}]}});
        std::fs::write(project.join(".hookd/hooks.json"), hooks.to_string()).expect("write");
        let config = fixture.dir.path().join("config");
        let mut command = fixture.hookd(env!("CARGO_BIN_EXE_hookd"));
        command
            .args(["--http", "127.0.0.1:0"])
            .args(extra)
            .env("XDG_CONFIG_HOME", &config);
        let process = fixture.spawn(&mut command);
        let socket = fixture.socket.clone();
        let status = status_of(&socket);
        let address: SocketAddr = status["http"]["address"]
            .as_str()
            .unwrap_or_else(|| panic!("no HTTP listener in status: {status}"))
            .parse()
            .expect("address");
        let secret_file = config.join("hookd/http.secret");
        let secret = hookd_settings::httpsecret::load(&secret_file)
            .expect("the daemon made a private secret file")
            .as_str()
            .to_owned();
        HttpDaemon {
            dir: fixture.dir,
            project,
            socket,
            address,
            secret,
            _process: process,
        }
    }

    fn status(&self) -> Value {
        status_of(&self.socket)
    }

    fn project(&self) -> String {
        self.project.display().to_string()
    }

    /// A Claude Code PreToolUse payload for a Bash command, in session `session`, run from
    /// `cwd`, with Claude Code's transcript path for the project `transcript_project`.
    fn pre_tool_use(
        &self,
        session: &str,
        cwd: &str,
        transcript_project: &str,
        command: &str,
    ) -> Value {
        let slug: String = transcript_project
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        json!({
            "session_id": session,
            "transcript_path": format!("/home/u/.claude/projects/{slug}/{session}.jsonl"),
            "cwd": cwd,
            "permission_mode": "default",
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": command, "description": "a command"},
            "tool_use_id": "toolu_01",
        })
    }

    /// Sends the relayed SessionStart the command relay sends for `session` (its
    /// `CLAUDE_PROJECT_DIR` as `project_dir`, its environment).
    fn session_start(&self, session: &str) {
        self.session_start_of("claude", session);
    }

    /// [`HttpDaemon::session_start`] as relayed for `host` (`hookd-relay sessionStart
    /// --dialect copilot` sends Copilot CLI's `COPILOT_PROJECT_DIR` as `project_dir`).
    fn session_start_of(&self, host: &str, session: &str) {
        let mut stream = UnixStream::connect(&self.socket).expect("connect");
        stream.set_read_timeout(Some(PATIENCE)).expect("timeout");
        let mut bytes = frame(&json!({"type": "hello", "protocol": 1, "client": "relay-test"}));
        bytes.extend(frame(&json!({
            "type": "event", "id": 1, "event": "SessionStart",
            "cwd": self.project(), "project_dir": self.project(),
            "session_id": session, "relayed_by": host,
            "env": {"PATH": "/usr/bin:/bin", "CLAUDE_PROJECT_DIR": self.project()},
            "input": {"source": "startup"}
        })));
        stream.write_all(&bytes).expect("write");
        assert_eq!(receive(&mut stream)["type"], "hello");
        let answer = receive(&mut stream);
        assert_eq!(answer["type"], "result", "{answer}");
    }

    fn auth(&self) -> String {
        format!("Bearer {}", self.secret)
    }

    /// Posts `body` as Claude Code does, with `headers` on top of the usual ones.
    fn post(&self, event: &str, body: &Value, headers: &[(&str, &str)]) -> (u16, String) {
        self.post_text(event, &body.to_string(), headers)
    }

    /// [`HttpDaemon::post`] with the body's text.
    fn post_text(&self, event: &str, body: &str, headers: &[(&str, &str)]) -> (u16, String) {
        self.post_to("claude", event, body, headers)
    }

    /// Posts `body` to `host`'s path for `event`.
    fn post_to(
        &self,
        host: &str,
        event: &str,
        body: &str,
        headers: &[(&str, &str)],
    ) -> (u16, String) {
        let mut stream = self.connect();
        let mut head = format!(
            "POST /v1/hooks/{host}/{event} HTTP/1.1\r\nAccept: application/json, text/plain, */*\r\n\
             Content-Type: application/json\r\nUser-Agent: axios/1.15.2\r\n\
             Content-Length: {}\r\nHost: {}\r\nConnection: keep-alive\r\n",
            body.len(),
            self.address
        );
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes()).expect("write head");
        stream.write_all(body.as_bytes()).expect("write body");
        read_response(&mut stream)
    }

    fn connect(&self) -> TcpStream {
        let stream = TcpStream::connect(self.address).expect("connect");
        stream.set_read_timeout(Some(PATIENCE)).expect("timeout");
        stream
    }
}

fn status_of(socket: &Path) -> Value {
    let started = Instant::now();
    let mut stream = loop {
        match UnixStream::connect(socket) {
            Ok(stream) => break stream,
            Err(_) if started.elapsed() < PATIENCE => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(error) => panic!("hookd never listened on {}: {error}", socket.display()),
        }
    };
    stream.set_read_timeout(Some(PATIENCE)).expect("timeout");
    let mut bytes = frame(&json!({"type": "hello", "protocol": 1, "client": "http-test"}));
    bytes.extend(frame(&json!({"type": "status", "id": 1})));
    stream.write_all(&bytes).expect("write");
    assert_eq!(receive(&mut stream)["type"], "hello");
    receive(&mut stream)
}

/// Reads one HTTP/1.1 response with a `Content-Length`: its status and body.
fn read_response(stream: &mut TcpStream) -> (u16, String) {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).expect("status line");
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {line:?}"));
    let mut length = 0usize;
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).expect("header");
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().expect("length");
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).expect("body");
    (status, String::from_utf8(body).expect("utf-8"))
}

fn deny(reason: &str) -> Value {
    json!({"hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": reason,
    }})
}

#[test]
fn a_claude_pretooluse_post_gets_the_relays_decision_for_the_sessions_project() {
    let daemon = HttpDaemon::start(&[]);
    let project = daemon.project();
    let sub = format!("{project}/sub");
    let auth = daemon.auth();
    let headers = [("Authorization", auth.as_str())];

    // The session's relayed SessionStart names the project; the model has since `cd`-ed to
    // `sub` and the transcript path is no help: the table gives the root.
    daemon.session_start("s1");
    let body = daemon.pre_tool_use("s1", &sub, "/elsewhere", "rm -rf /");
    let (status, answer) = daemon.post("PreToolUse", &body, &headers);
    assert_eq!(status, 200, "{answer}");
    let answer: Value = serde_json::from_str(&answer).expect("JSON");
    assert_eq!(answer, deny("no rm -rf here"));

    // A harmless command: the guard says nothing, the answer is `{}`.
    let body = daemon.pre_tool_use("s1", &sub, "/elsewhere", "ls");
    assert_eq!(
        daemon.post("PreToolUse", &body, &headers),
        (200, "{}".to_owned())
    );

    // A session the daemon never saw start: the transcript path's project names the root.
    let body = daemon.pre_tool_use("s2", &sub, &project, "rm -rf /");
    let (status, answer) = daemon.post("PreToolUse", &body, &headers);
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        serde_json::from_str::<Value>(&answer).expect("JSON"),
        deny("no rm -rf here")
    );

    // Neither: the project is unknown, which is a failure (the entry's onFailure decides),
    // never a silent allow.
    let body = daemon.pre_tool_use("s3", &sub, "/elsewhere", "rm -rf /");
    let (status, answer) = daemon.post("PreToolUse", &body, &headers);
    assert_eq!(status, 503, "{answer}");

    // The body must be the event the path names.
    let body = daemon.pre_tool_use("s1", &sub, "/elsewhere", "rm -rf /");
    assert_eq!(daemon.post("PostToolUse", &body, &headers).0, 400);

    // A large payload (2 MiB of command) and a deeply nested one take the relay's path too.
    let long = format!("rm -rf / # {}", "x".repeat(2 * 1024 * 1024));
    let body = daemon.pre_tool_use("s1", &sub, "/elsewhere", &long);
    let (status, answer) = daemon.post("PreToolUse", &body, &headers);
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        serde_json::from_str::<Value>(&answer).expect("JSON"),
        deny("no rm -rf here")
    );
    // 1000 levels: past serde_json's default limit of 128, as a model-shaped input can be.
    let flat = daemon
        .pre_tool_use("s1", &sub, "/elsewhere", "rm -rf /")
        .to_string();
    let text = format!(
        "{},\"deep\":{}1{}}}",
        flat.strip_suffix('}').expect("an object"),
        "[".repeat(1000),
        "]".repeat(1000)
    );
    let (status, answer) = daemon.post_text("PreToolUse", &text, &headers);
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        serde_json::from_str::<Value>(&answer).expect("JSON"),
        deny("no rm -rf here")
    );

    // Several requests on one keep-alive connection.
    let mut stream = daemon.connect();
    for command in ["ls", "rm -rf /", "pwd"] {
        let body = daemon
            .pre_tool_use("s1", &sub, "/elsewhere", command)
            .to_string();
        let request = format!(
            "POST /v1/hooks/claude/PreToolUse HTTP/1.1\r\nHost: {}\r\nAuthorization: {auth}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            daemon.address,
            body.len()
        );
        stream.write_all(request.as_bytes()).expect("write");
        let (status, answer) = read_response(&mut stream);
        assert_eq!(status, 200, "{answer}");
        let expected = if command.starts_with("rm") {
            deny("no rm -rf here")
        } else {
            json!({})
        };
        assert_eq!(
            serde_json::from_str::<Value>(&answer).expect("JSON"),
            expected
        );
    }

    let status = daemon.status();
    // Eight decisions (the 503 and the 400 are not decisions).
    assert_eq!(status["http"]["requests"], 8, "{status}");
    assert_eq!(status["http"]["refused"]["bad_body"], 1, "{status}");
    assert_eq!(status["http"]["sessions"], 1, "{status}");
    assert!(status["events_served"].as_u64() >= Some(9), "{status}");
}

/// A Copilot CLI `preToolUse` payload for a `bash` command, as Copilot CLI 1.0.102 posts it
/// (camelCase, no event name, `timestamp` in epoch milliseconds).
fn copilot_pre_tool_use(session: &str, cwd: &str, command: &str) -> Value {
    json!({
        "sessionId": session,
        "timestamp": 1_795_922_054_409_u64,
        "cwd": cwd,
        "toolName": "bash",
        "toolArgs": {"command": command, "description": "scripted command"},
    })
}

#[test]
fn a_copilot_pretooluse_post_gets_the_guards_answer_in_copilots_shape() {
    let daemon = HttpDaemon::start(&[]);
    let project = daemon.project();
    let sub = format!("{project}/sub");
    let auth = daemon.auth();
    let headers = [("Authorization", auth.as_str())];
    let post = |session: &str, cwd: &str, command: &str| {
        let body = copilot_pre_tool_use(session, cwd, command).to_string();
        daemon.post_to("copilot", "preToolUse", &body, &headers)
    };

    // Before the session's relayed sessionStart the project is unknown, even when the
    // payload's cwd is the project itself: 503, which Copilot CLI turns into a deny.
    let (status, answer) = post("c1", &project, "rm -rf /");
    assert_eq!(status, 503, "{answer}");
    // A Claude Code session of the same id names no Copilot CLI session.
    daemon.session_start("c1");
    assert_eq!(post("c1", &project, "rm -rf /").0, 503);

    daemon.session_start_of("copilot", "c1");
    // Copilot's `bash` is hookd's `run_shell_command`: the guard denies, said as Copilot's
    // `permissionDecision`, from a session started in a subfolder too.
    let (status, answer) = post("c1", &sub, "rm -rf /");
    assert_eq!(status, 200, "{answer}");
    let answer: Value = serde_json::from_str(&answer).expect("JSON");
    assert_eq!(answer["permissionDecision"], "deny", "{answer}");
    assert!(
        answer["permissionDecisionReason"]
            .as_str()
            .is_some_and(|reason| reason.contains("no rm -rf here")),
        "{answer}"
    );
    // A harmless command: no deny.
    let (status, answer) = post("c1", &sub, "ls");
    assert_eq!(status, 200, "{answer}");
    let answer: Value = serde_json::from_str(&answer).expect("JSON");
    assert_ne!(answer["permissionDecision"], "deny", "{answer}");

    // Copilot's payloads name no event: the path does, and must be one of Copilot's.
    let body = copilot_pre_tool_use("c1", &sub, "ls").to_string();
    let (status, _) = daemon.post_to("copilot", "PreToolUse", &body, &headers);
    assert_eq!(status, 404);
    // Without the secret: refused before anything runs.
    let (status, _) = daemon.post_to("copilot", "preToolUse", &body, &[]);
    assert_eq!(status, 401);
    // A payload Copilot would never send for the event (no tool name): refused, not allowed.
    let (status, answer) = daemon.post_to(
        "copilot",
        "preToolUse",
        &json!({"sessionId": "c1", "cwd": sub}).to_string(),
        &headers,
    );
    assert_eq!(status, 400, "{answer}");
}

#[test]
fn requests_without_the_secret_or_from_a_browser_or_too_large_are_refused() {
    let daemon = HttpDaemon::start(&[]);
    daemon.session_start("s1");
    let body = daemon.pre_tool_use("s1", &daemon.project(), "/x", "rm -rf /");
    let auth = daemon.auth();
    let wrong = format!("Bearer {}", "0".repeat(64));
    let cases: [(&[(&str, &str)], u16); 5] = [
        (&[], 401),
        (&[("Authorization", wrong.as_str())], 401),
        (&[("Authorization", daemon.secret.as_str())], 401),
        (
            &[
                ("Authorization", auth.as_str()),
                ("Origin", "https://evil.example"),
            ],
            403,
        ),
        (&[("Authorization", auth.as_str()), ("Origin", "null")], 403),
    ];
    for (headers, expected) in cases {
        assert_eq!(
            daemon.post("PreToolUse", &body, headers).0,
            expected,
            "{headers:?}"
        );
    }

    // A raw request whose head is refused before any body is sent: the daemon answers
    // without waiting for the body it declared.
    let raw = |head: String| {
        let mut stream = daemon.connect();
        stream.write_all(head.as_bytes()).expect("write");
        read_response(&mut stream).0
    };
    let host = daemon.address;
    // DNS rebinding: the attacker's name in Host.
    assert_eq!(
        raw(format!(
            "POST /v1/hooks/claude/PreToolUse HTTP/1.1\r\nHost: evil.example:{}\r\n\
             Authorization: {auth}\r\nContent-Length: 10\r\n\r\n",
            host.port()
        )),
        421
    );
    assert_eq!(
        raw(format!(
            "GET /v1/hooks/claude/PreToolUse HTTP/1.1\r\nHost: {host}\r\nAuthorization: {auth}\r\n\r\n"
        )),
        405
    );
    assert_eq!(
        raw(format!(
            "POST /v1/hooks/nohost/PreToolUse HTTP/1.1\r\nHost: {host}\r\nAuthorization: {auth}\r\n\
             Content-Length: 2\r\n\r\n"
        )),
        404
    );
    // 1 GiB declared: refused at once, nothing read.
    assert_eq!(
        raw(format!(
            "POST /v1/hooks/claude/PreToolUse HTTP/1.1\r\nHost: {host}\r\nAuthorization: {auth}\r\n\
             Content-Length: 1073741824\r\n\r\n"
        )),
        413
    );
    // A head larger than the cap.
    let mut stream = daemon.connect();
    let huge = format!(
        "POST /v1/hooks/claude/PreToolUse HTTP/1.1\r\nHost: {host}\r\nX-Pad: {}\r\n\r\n",
        "a".repeat(64 * 1024)
    );
    let _ = stream.write_all(huge.as_bytes());
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 431"),
        "{answer}"
    );

    let status = daemon.status();
    let refused = &status["http"]["refused"];
    assert_eq!(refused["secret"], 3, "{status}");
    assert_eq!(refused["origin"], 2, "{status}");
    assert_eq!(refused["host"], 1, "{status}");
    assert_eq!(refused["method"], 1, "{status}");
    assert_eq!(refused["path"], 1, "{status}");
    assert_eq!(refused["too_large"], 1, "{status}");
    assert_eq!(status["http"]["requests"], 0, "{status}");
}

#[test]
fn a_slow_sender_times_out_while_other_requests_are_answered() {
    let daemon = HttpDaemon::start(&[]);
    daemon.session_start("s1");
    let body = daemon
        .pre_tool_use("s1", &daemon.project(), "/x", "rm -rf /")
        .to_string();
    // A connection that never sends a request, beside the slow one.
    let mut silent = daemon.connect();
    let mut slow = daemon.connect();
    let head = format!(
        "POST /v1/hooks/claude/PreToolUse HTTP/1.1\r\nHost: {}\r\nAuthorization: {}\r\n\
         Content-Length: {}\r\n\r\n",
        daemon.address,
        daemon.auth(),
        body.len()
    );
    slow.write_all(head.as_bytes()).expect("write");
    slow.write_all(&body.as_bytes()[..10]).expect("write");
    let began = Instant::now();
    // Meanwhile the user's requests are answered at their usual speed.
    let auth = daemon.auth();
    for _ in 0..5 {
        let asked = Instant::now();
        let (status, _) = daemon.post(
            "PreToolUse",
            &serde_json::from_str::<Value>(&body).expect("json"),
            &[("Authorization", auth.as_str())],
        );
        assert_eq!(status, 200);
        assert!(
            asked.elapsed() < Duration::from_secs(2),
            "{:?}",
            asked.elapsed()
        );
    }
    let (status, _) = read_response(&mut slow);
    assert_eq!(status, 408);
    let waited = began.elapsed();
    assert!(
        waited >= Duration::from_secs(8) && waited < Duration::from_secs(20),
        "{waited:?}"
    );
    assert_eq!(daemon.status()["http"]["refused"]["slow_body"], 1);
    // By now the silent connection has been closed too (10 s without a request).
    let mut byte = [0u8; 1];
    assert_eq!(silent.read(&mut byte).expect("EOF, not a timeout"), 0);
    assert!(daemon.status()["http"]["refused"]["idle"].as_u64() >= Some(1));
}

#[test]
fn a_stop_answers_the_http_request_in_flight_and_takes_no_new_connection() {
    let daemon = HttpDaemon::start(&[]);
    daemon.session_start("s1");
    let started = daemon.dir.path().join("started");
    let release = daemon.dir.path().join("release");
    // The guard waits until the test lets it go, so the stop surely lands mid-run.
    hookd_testkit::write_script(
        &daemon.project.join("guard.sh"),
        &format!(
            "#!/bin/sh\ncat >/dev/null\ntouch {started:?}\n\
             while [ ! -e {release:?} ]; do sleep 0.01; done\n\
             echo '{{\"decision\":\"deny\",\"reason\":\"the real answer\"}}'\n"
        ),
    );
    let body = daemon.pre_tool_use("s1", &daemon.project(), "/x", "ls");
    let address = daemon.address;
    let auth = daemon.auth();
    let request = std::thread::spawn({
        let body = body.to_string();
        move || {
            let mut stream = TcpStream::connect(address).expect("connect");
            stream.set_read_timeout(Some(PATIENCE)).expect("timeout");
            let head = format!(
                "POST /v1/hooks/claude/PreToolUse HTTP/1.1\r\nHost: {address}\r\n\
                 Authorization: {auth}\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            stream.write_all(head.as_bytes()).expect("write");
            read_response(&mut stream)
        }
    });
    let waited = Instant::now();
    while !started.exists() {
        assert!(waited.elapsed() < PATIENCE, "the hook never started");
        std::thread::sleep(Duration::from_millis(10));
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(daemon._process.0.id()).expect("pid")),
        nix::sys::signal::Signal::SIGTERM,
    )
    .expect("SIGTERM");
    let waited = Instant::now();
    while TcpStream::connect(address).is_ok() {
        assert!(
            waited.elapsed() < PATIENCE,
            "new connections still accepted"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    std::fs::write(&release, "").expect("release the hook");
    let (status, answer) = request.join().expect("the request");
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        serde_json::from_str::<Value>(&answer).expect("JSON"),
        deny("the real answer")
    );
}

#[test]
fn thousands_of_idle_connections_are_bounded_and_the_user_still_gets_answers() {
    let limit = hookd_testkit::raise_open_files_limit();
    let wanted: usize = 10_000;
    if limit < wanted as u64 + 200 {
        eprintln!("skipped: the open-files limit ({limit}) is below {wanted} connections");
        return;
    }
    let daemon = HttpDaemon::start(&["--http-max-connections", "512"]);
    daemon.session_start("s1");
    let body = daemon.pre_tool_use("s1", &daemon.project(), "/x", "rm -rf /");
    let auth = daemon.auth();
    // The median time of 20 requests, each on a new connection, every one answered right.
    let median = || {
        let mut times: Vec<Duration> = (0..20)
            .map(|_| {
                let asked = Instant::now();
                let (status, answer) =
                    daemon.post("PreToolUse", &body, &[("Authorization", auth.as_str())]);
                let took = asked.elapsed();
                assert_eq!(status, 200, "{answer}");
                assert_eq!(
                    serde_json::from_str::<Value>(&answer).expect("JSON"),
                    deny("no rm -rf here")
                );
                assert!(took < Duration::from_secs(2), "{took:?}");
                took
            })
            .collect();
        times.sort();
        times[times.len() / 2]
    };
    let quiet = median();
    // The user's keep-alive connection, opened before the flood.
    let mut keep = daemon.connect();
    let keep_alive = |stream: &mut TcpStream| {
        let text = body.to_string();
        let request = format!(
            "POST /v1/hooks/claude/PreToolUse HTTP/1.1\r\nHost: {}\r\nAuthorization: {auth}\r\n\
             Content-Length: {}\r\n\r\n{text}",
            daemon.address,
            text.len()
        );
        stream.write_all(request.as_bytes()).expect("write");
        read_response(stream).0
    };
    assert_eq!(keep_alive(&mut keep), 200);
    let mut idle = Vec::with_capacity(wanted);
    let opened = Instant::now();
    for at in 0..wanted {
        let stream = TcpStream::connect(daemon.address).expect("connect");
        if at % 2 == 1 {
            // Half of them start a head and never finish it (slowloris).
            let _ = (&stream).write_all(b"POST /v1/hooks/claude/PreToolUse HTTP/1.1\r\nHost: ");
        }
        idle.push(stream);
    }
    let opening = opened.elapsed();
    let flooded = median();
    // The flood closed the strangers' connections, not the user's.
    assert_eq!(keep_alive(&mut keep), 200);
    eprintln!(
        "{wanted} idle connections opened in {opening:?}; median request {quiet:?} before, \
         {flooded:?} with them open"
    );
    let status = daemon.status();
    let http = &status["http"];
    assert!(http["connections"].as_u64() <= Some(512), "{status}");
    assert!(
        http["refused"]["evicted"].as_u64() >= Some((wanted - 512) as u64),
        "{status}"
    );
    drop(idle);
}

#[test]
fn another_user_is_refused_by_owner_even_with_the_secret() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: only root can run a client as another uid (65534)");
        return;
    }
    let daemon = HttpDaemon::start(&[]);
    let secret_file = daemon.dir.path().join("config/hookd/http.secret");
    let secret = std::fs::read_to_string(&secret_file).expect("the daemon's secret");
    // The other user's client: read the secret if it can (else use the one it was handed:
    // a leaked copy), then post with it.
    let script = format!(
        "secret=$(cat {file:?} 2>/dev/null) || {{ echo cannot-read >&2; secret=$LEAKED; }}\n\
         exec 3<>/dev/tcp/127.0.0.1/{port}\n\
         printf 'POST /v1/hooks/claude/PreToolUse HTTP/1.1\\r\\nHost: 127.0.0.1:{port}\\r\\nAuthorization: Bearer %s\\r\\nContent-Length: 2\\r\\n\\r\\n{{}}' \"$secret\" >&3 2>/dev/null\n\
         head -n 1 <&3\n",
        file = secret_file,
        port = daemon.address.port()
    );
    use std::os::unix::process::CommandExt as _;
    for (leaked, refused) in [("", 1), (secret.trim(), 2)] {
        let output = Command::new("bash")
            .args(["-c", &script])
            .env("LEAKED", leaked)
            .uid(65534)
            .gid(65534)
            .current_dir("/")
            .output()
            .expect("run the other user's client");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("cannot-read"), "{stderr}");
        // Answered 403 at once, or closed before the answer could be read: never a decision.
        assert!(
            stdout.is_empty() || stdout.starts_with("HTTP/1.1 403"),
            "{stdout} {stderr}"
        );
        let status = daemon.status();
        assert_eq!(status["http"]["refused"]["peer"], refused, "{status}");
        assert!(
            status["http"]["refused"].get("secret").is_none(),
            "{status}"
        );
        assert_eq!(status["http"]["requests"], 0, "{status}");
    }
    // The user's own request on the same listener is answered.
    let (code, body) = daemon.post(
        "PreToolUse",
        &json!({"hook_event_name": "PreToolUse",
        "session_id": "s", "transcript_path": "/nonexistent/s.jsonl", "cwd": "/",
        "tool_name": "Bash", "tool_input": {"command": "ls"}}),
        &[],
    );
    assert_ne!(code, 403, "{body}");
    assert_eq!(daemon.status()["http"]["refused"]["peer"], 2);
}

#[test]
fn a_non_loopback_address_is_refused_at_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let output = Command::new(env!("CARGO_BIN_EXE_hookd"))
        .arg("--socket")
        .arg(dir.path().join("hookd.sock"))
        .args(["--http", "0.0.0.0:0"])
        .isolated(dir.path(), dir.path())
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .output()
        .expect("run hookd");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("not a loopback address"), "{stderr}");
}

#[test]
fn under_socket_activation_the_socket_named_http_is_the_http_listener() {
    let Some(tool) = [
        "/usr/bin/systemd-socket-activate",
        "/bin/systemd-socket-activate",
    ]
    .into_iter()
    .map(PathBuf::from)
    .find(|path| path.is_file()) else {
        eprintln!("skipped: systemd-socket-activate is not installed (Debian package `systemd`)");
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    let project = dir.path().join("project");
    std::fs::create_dir_all(home.join(".gemini")).expect("mkdir");
    std::fs::create_dir_all(project.join(".hookd")).expect("mkdir");
    let hooks = json!({"hooks": {"BeforeTool": [{"hooks": [{"name": "no", "type": "command",
        "command": "echo '{\"decision\":\"deny\",\"reason\":\"activated\"}'"}]}]}});
    std::fs::write(project.join(".hookd/hooks.json"), hooks.to_string()).expect("write");
    let config = dir.path().join("config");
    let secret = hookd_settings::httpsecret::load_or_create(
        &hookd_settings::httpsecret::secret_path(&config),
    )
    .expect("secret");
    let socket = dir.path().join("hookd.sock");
    // A free port: the kernel picks it, the probe lets it go, the tool binds it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("probe")
        .local_addr()
        .expect("address")
        .port();
    let address: SocketAddr = format!("127.0.0.1:{port}").parse().expect("address");
    let etc = dir.path().join("etc");
    let _activator = KillOnDrop(
        Command::new(tool)
            .arg("-l")
            .arg(&socket)
            .arg("-l")
            .arg(address.to_string())
            .arg("--fdname=hookd.socket:http")
            .arg("-E")
            .arg(format!("XDG_CONFIG_HOME={}", config.display()))
            .arg("-E")
            .arg(format!(
                "GEMINI_CLI_SYSTEM_SETTINGS_PATH={}",
                etc.join("settings.json").display()
            ))
            .arg("-E")
            .arg(format!(
                "GEMINI_CLI_SYSTEM_DEFAULTS_PATH={}",
                etc.join("system-defaults.json").display()
            ))
            .arg("--")
            .arg(env!("CARGO_BIN_EXE_hookd"))
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .hermetic(&home)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start systemd-socket-activate"),
    );
    // The first HTTP connection starts hookd, which answers it.
    let started = Instant::now();
    let mut stream = loop {
        match TcpStream::connect(address) {
            Ok(stream) => break stream,
            Err(_) if started.elapsed() < PATIENCE => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(error) => panic!("the activation socket never listened: {error}"),
        }
    };
    stream.set_read_timeout(Some(PATIENCE)).expect("timeout");
    let project = project.display().to_string();
    let slug: String = project
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let body = json!({
        "session_id": "s", "transcript_path": format!("/h/.claude/projects/{slug}/s.jsonl"),
        "cwd": project, "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": "ls"},
    })
    .to_string();
    let request = format!(
        "POST /v1/hooks/claude/PreToolUse HTTP/1.1\r\nHost: {address}\r\n\
         Authorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        secret.as_str(),
        body.len()
    );
    stream.write_all(request.as_bytes()).expect("write");
    let (status, answer) = read_response(&mut stream);
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        serde_json::from_str::<Value>(&answer).expect("JSON"),
        deny("activated")
    );
    // The Unix socket passed beside it is the protocol socket, and status names the address.
    let status = status_of(&socket);
    assert_eq!(status["http"]["address"], address.to_string(), "{status}");
}
