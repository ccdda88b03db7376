//! A full session store keeps the daemon's memory within the bound `docs/state.md` states:
//! the `hookd` binary, its store filled to its 256 MiB bound (four projects, each at its
//! quarter) by writes as hooks make them (each session's token from a hook), then every key
//! read back, while the daemon's resident memory is watched from outside (`VmHWM`, the
//! kernel's high-water mark of the process).

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use hookd_testkit::DaemonProcess;

const PATIENCE: Duration = Duration::from_secs(60);

/// The bound `docs/state.md` and `docs/limits.md` state for a daemon with a full store.
const RSS_BOUND_MIB: u64 = 96;

/// One connection speaking the protocol: requests with increasing ids, one answer each.
struct Conn {
    stream: UnixStream,
    next_id: u64,
}

impl Conn {
    fn open(socket: &Path) -> Conn {
        let started = Instant::now();
        let stream = loop {
            match UnixStream::connect(socket) {
                Ok(stream) => break stream,
                Err(_) if started.elapsed() < PATIENCE => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(error) => panic!("hookd never listened: {error}"),
            }
        };
        stream.set_read_timeout(Some(PATIENCE)).expect("timeout");
        let mut conn = Conn { stream, next_id: 1 };
        conn.send(&json!({"type": "hello", "protocol": 1, "client": "state-memory"}));
        assert_eq!(conn.receive()["type"], "hello");
        conn
    }

    fn send(&mut self, message: &Value) {
        let body = serde_json::to_vec(message).expect("json");
        let mut frame = u32::try_from(body.len())
            .expect("len")
            .to_be_bytes()
            .to_vec();
        frame.extend_from_slice(&body);
        self.stream.write_all(&frame).expect("write");
    }

    fn receive(&mut self) -> Value {
        let mut len = [0u8; 4];
        self.stream.read_exact(&mut len).expect("read");
        let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
        self.stream.read_exact(&mut body).expect("read");
        serde_json::from_slice(&body).expect("json")
    }

    fn request(&mut self, mut message: Value) -> Value {
        message["id"] = json!(self.next_id);
        self.next_id += 1;
        self.send(&message);
        self.receive()
    }

    /// The state token of `session` in `project`: what a hook of it finds in its environment.
    fn token(&mut self, project: &Path, session: &str) -> String {
        let answer = self.request(json!({
            "type": "event", "event": "BeforeTool", "session_id": session,
            "cwd": project.display().to_string(),
            "input": {"tool_name": "state-token"}
        }));
        answer["final_output"]["systemMessage"]
            .as_str()
            .filter(|token| token.starts_with("v1."))
            .unwrap_or_else(|| panic!("no token from the hook: {answer}"))
            .to_owned()
    }
}

fn vm_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
}

#[test]
fn a_full_store_keeps_the_daemon_within_its_memory_bound() {
    let fixture = DaemonProcess::prepare(None);
    let (dir, home) = (&fixture.dir, &fixture.home);
    // The only way to a session's token: a hook of that session prints its own.
    let settings = json!({"hooks": {"BeforeTool": [{"matcher": "^state-token$", "hooks": [{
        "name": "token", "type": "command",
        "command": "printf '{\"systemMessage\":\"%s\"}' \"$HOOKD_STATE_TOKEN\""}]}]}});
    std::fs::write(home.join(".gemini/settings.json"), settings.to_string()).expect("write");
    let projects: Vec<_> = (0..5)
        .map(|n| {
            let project = dir.path().join(format!("project-{n}"));
            std::fs::create_dir_all(&project).expect("mkdir");
            project
        })
        .collect();
    let socket = &fixture.socket;
    let daemon = fixture.spawn(
        fixture
            .hookd(env!("CARGO_BIN_EXE_hookd"))
            .env("XDG_STATE_HOME", dir.path().join("state")),
    );
    let pid = daemon.0.id();
    let mut conn = Conn::open(socket);
    let mut bystander = Conn::open(socket);

    // Fill: each project's sessions until the project's share refuses, four projects.
    let value = "v".repeat(65_536 - 8);
    let mut written: Vec<(String, String)> = Vec::new();
    let mut refusals = Vec::new();
    let mut slowest_ping = Duration::ZERO;
    'projects: for (n, project) in projects.iter().take(4).enumerate() {
        for s in 0.. {
            let session = format!("p{n}-s{s}");
            let token = conn.token(project, &session);
            for k in 0.. {
                let key = format!("k{k:05}");
                let answer = conn.request(json!({
                    "type": "state", "op": "set", "session_id": session, "key": key,
                    "value": value, "token": token
                }));
                if answer["type"] == "state" {
                    written.push((session.clone(), key));
                    continue;
                }
                assert_eq!(answer["code"], "limit_reached", "{answer}");
                let message = answer["message"].as_str().unwrap_or_default().to_owned();
                let project_full = message.contains("its share of the store");
                refusals.push(message);
                if project_full {
                    continue 'projects;
                }
                break;
            }
            if written.len() % 256 == 0 {
                let asked = Instant::now();
                assert_eq!(bystander.request(json!({"type": "ping"}))["type"], "pong");
                slowest_ping = slowest_ping.max(asked.elapsed());
            }
        }
    }
    // The store is full: a fifth project's first write is refused by the store's bound.
    let token = conn.token(&projects[4], "p4-s0");
    let answer = conn.request(json!({
        "type": "state", "op": "set", "session_id": "p4-s0", "key": "k", "value": value,
        "token": token
    }));
    assert_eq!(answer["code"], "limit_reached", "{answer}");
    let message = answer["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("the store would hold more than"),
        "{message}"
    );
    assert!(written.len() > 3900, "{} values written", written.len());

    // Read everything back, twice: every page of the store goes through redb's cache.
    for _ in 0..2 {
        for (session, key) in &written {
            let answer = conn.request(json!({
                "type": "state", "op": "get", "session_id": session, "key": key
            }));
            assert_eq!(answer["found"], true, "{session} {key}");
        }
    }
    let asked = Instant::now();
    assert_eq!(bystander.request(json!({"type": "ping"}))["type"], "pong");
    slowest_ping = slowest_ping.max(asked.elapsed());
    let peak_mib = vm_kib(pid, "VmHWM") / 1024;
    let now_mib = vm_kib(pid, "VmRSS") / 1024;
    println!(
        "full store: {} values written, peak RSS {peak_mib} MiB, now {now_mib} MiB, \
         slowest bystander ping {slowest_ping:?}",
        written.len()
    );
    assert!(
        peak_mib <= RSS_BOUND_MIB,
        "the daemon took {peak_mib} MiB with a full store; the documented bound is \
         {RSS_BOUND_MIB} MiB"
    );
    assert!(slowest_ping < Duration::from_secs(1), "{slowest_ping:?}");
}
