//! Every event reaches its hook once, with the stdin payload of spec §4.4 (base fields, the
//! event's fields in Gemini CLI's order, compact JSON) and the environment of §4.3, including
//! the environment a client sends.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hookd_client::EventRequest;
use hookd_testkit::{Daemon, command_hook, fire_request, input, script_command, settings};
use serde_json::{Map, Value, json};

/// The session id every request of this module sends.
const SESSION: &str = "sess-e2e";

/// The base fields that start every payload, in order.
const BASE_KEYS: [&str; 5] = [
    "session_id",
    "transcript_path",
    "cwd",
    "hook_event_name",
    "timestamp",
];

/// Every event name.
const EVENTS: [&str; 11] = [
    "BeforeTool",
    "AfterTool",
    "BeforeAgent",
    "AfterAgent",
    "Notification",
    "SessionStart",
    "SessionEnd",
    "PreCompress",
    "BeforeModel",
    "AfterModel",
    "BeforeToolSelection",
];

/// A hook body that appends its stdin as one line to `<out>/<event>.stdin` and writes its
/// environment (plus its working directory as `__cwd`) to `<out>/<event>.env`.
fn capture_script(out: &Path) -> String {
    format!(
        r#"exec python3 -c '
import json, os, sys
raw = sys.stdin.read()
name = json.loads(raw)["hook_event_name"]
with open(os.path.join(sys.argv[1], name + ".stdin"), "a") as f:
    f.write(raw + "\n")
env = dict(os.environ)
env["__cwd"] = os.getcwd()
with open(os.path.join(sys.argv[1], name + ".env"), "w") as f:
    json.dump(env, f)
' {}"#,
        out.display()
    )
}

/// A daemon with the capture hook registered, without matcher, for every event.
async fn capture_daemon() -> (Daemon, std::path::PathBuf) {
    let definitions: Vec<(&str, Option<&str>, Vec<Value>)> = EVENTS
        .iter()
        .map(|event| {
            (
                *event,
                None,
                vec![command_hook("capture", &script_command("capture.sh"))],
            )
        })
        .collect();
    let daemon = Daemon::start(settings(&definitions)).await;
    let out = daemon.out_dir("out");
    daemon.script("capture.sh", &capture_script(&out));
    (daemon, out)
}

/// One event's input, with its fields deliberately in reverse order, and the event fields the
/// payload must carry after the base fields, in order, with their values.
fn event_case(event: &str) -> (Value, Vec<(&'static str, Value)>) {
    let llm_request = json!({
        "model": "gemini-2.5-pro",
        "messages": [{"role": "user", "content": "hi"}],
        "config": {"temperature": 0.5}
    });
    let tool_input = json!({"file_path": "notes.txt", "content": "x"});
    let expected: Vec<(&'static str, Value)> = match event {
        "BeforeTool" => vec![
            ("tool_name", json!("mcp_files_write")),
            ("tool_input", tool_input),
            (
                "mcp_context",
                json!({"server_name": "files", "tool_name": "write"}),
            ),
            ("original_request_name", json!("write_file")),
        ],
        "AfterTool" => vec![
            ("tool_name", json!("write_file")),
            ("tool_input", tool_input),
            (
                "tool_response",
                json!({"llmContent": "ok", "returnDisplay": "Wrote notes.txt"}),
            ),
        ],
        "BeforeAgent" => vec![("prompt", json!("fix the build"))],
        "AfterAgent" => vec![
            ("prompt", json!("fix the build")),
            ("prompt_response", json!("Done.")),
            ("stop_hook_active", json!(false)),
        ],
        "Notification" => vec![
            ("notification_type", json!("ToolPermission")),
            ("message", json!("Tool Shell requires execution")),
            (
                "details",
                json!({"type": "exec", "title": "Shell", "command": "ls -l", "rootCommand": "ls"}),
            ),
        ],
        "SessionStart" => vec![("source", json!("startup"))],
        "SessionEnd" => vec![("reason", json!("exit"))],
        "PreCompress" => vec![("trigger", json!("manual"))],
        "BeforeModel" | "BeforeToolSelection" => vec![("llm_request", llm_request)],
        "AfterModel" => vec![
            ("llm_request", llm_request),
            (
                "llm_response",
                json!({"candidates": [{"content": {"role": "model", "parts": ["Hel", "lo"]}}]}),
            ),
            // Not sent: derived from the chunk by hookd (decision D6).
            ("content", json!("Hello")),
            ("full_content", json!("Hello")),
        ],
        other => panic!("no case for {other}"),
    };
    let derived = ["content", "full_content"];
    let mut sent = Map::new();
    for (key, value) in expected.iter().rev() {
        if !(event == "AfterModel" && derived.contains(key)) {
            sent.insert((*key).to_owned(), value.clone());
        }
    }
    (Value::Object(sent), expected)
}

/// Parses a `YYYY-MM-DDTHH:MM:SS.mmmZ` timestamp into Unix milliseconds; `None` if it has any
/// other shape.
fn parse_timestamp(text: &str) -> Option<i64> {
    let bytes = text.as_bytes();
    let shape = "dddd-dd-ddTdd:dd:dd.dddZ";
    if bytes.len() != shape.len() {
        return None;
    }
    for (byte, expected) in bytes.iter().zip(shape.bytes()) {
        let ok = match expected {
            b'd' => byte.is_ascii_digit(),
            other => *byte == other,
        };
        if !ok {
            return None;
        }
    }
    let number = |range: std::ops::Range<usize>| -> i64 {
        text[range].parse().expect("digits were checked")
    };
    let (year, month, day) = (number(0..4), number(5..7), number(8..10));
    // Days from the civil date (proleptic Gregorian), Howard Hinnant's algorithm.
    let shifted_year = if month <= 2 { year - 1 } else { year };
    let era = shifted_year.div_euclid(400);
    let year_of_era = shifted_year - era * 400;
    let month_index = (month + 9) % 12;
    let day_of_year = (153 * month_index + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    let days = era * 146_097 + day_of_era - 719_468;
    let seconds = days * 86_400 + number(11..13) * 3600 + number(14..16) * 60 + number(17..19);
    Some(seconds * 1000 + number(20..23))
}

#[test]
fn parse_timestamp_accepts_only_iso_utc_with_millis() {
    let cases = [
        ("1970-01-01T00:00:00.000Z", Some(0)),
        ("2000-03-01T00:00:00.001Z", Some(951_868_800_001)),
        ("2024-02-29T23:59:59.999Z", Some(1_709_251_199_999)),
        ("2024-02-29T23:59:59Z", None),
        ("2024-02-29T23:59:59.999+00:00", None),
        ("2024-02-29 23:59:59.999Z", None),
    ];
    for (text, expected) in cases {
        assert_eq!(parse_timestamp(text), expected, "{text}");
    }
}

/// Reads the JSON the capture hook wrote for `event`.
fn read_env(out: &Path, event: &str) -> Map<String, Value> {
    let path = out.join(format!("{event}.env"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|err| panic!("{event}: the hook wrote no environment ({err})"));
    input(serde_json::from_str(&text).expect("env JSON"))
}

/// The value of a variable in a captured environment, if set.
fn var<'a>(env: &'a Map<String, Value>, name: &str) -> Option<&'a str> {
    env.get(name).and_then(Value::as_str)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_event_fires_once_with_its_payload_and_environment() {
    let (daemon, out) = capture_daemon().await;
    let client = daemon.client().await;
    let cwd = daemon.cwd();
    let transcript = daemon.path("chats/session.json").display().to_string();
    let plans = daemon.path("plans").display().to_string();

    for event in EVENTS {
        let (sent, expected) = event_case(event);
        let mut request = EventRequest::new(event, cwd.clone()).with_input(input(sent));
        request.session_id = SESSION.to_owned();
        request.transcript_path = transcript.clone();
        request.plans_dir = Some(plans.clone());
        let before = unix_millis();
        let response = fire_request(&client, request).await;
        let after = unix_millis();
        let result = response.result;

        assert_eq!(
            result.hooks.len(),
            1,
            "{event}: one hook planned: {result:?}"
        );
        let hook = &result.hooks[0];
        assert!(hook.success, "{event}: the capture hook failed: {hook:?}");
        assert_eq!(hook.name, "capture");
        assert_eq!(hook.event, event);
        assert_eq!(hook.source, "project");
        assert!(
            result.success && result.errors.is_empty(),
            "{event}: {result:?}"
        );

        // Exactly one firing, as one line of compact JSON.
        let raw = std::fs::read_to_string(out.join(format!("{event}.stdin")))
            .unwrap_or_else(|err| panic!("{event}: the hook wrote no stdin ({err})"));
        let lines: Vec<&str> = raw.lines().collect();
        assert_eq!(lines.len(), 1, "{event}: fired {} times", lines.len());
        let payload = input(serde_json::from_str(lines[0]).expect("stdin is JSON"));
        assert_eq!(
            lines[0],
            serde_json::to_string(&payload).expect("encode"),
            "{event}: stdin is not compact JSON"
        );

        let keys: Vec<&str> = payload.keys().map(String::as_str).collect();
        let expected_keys: Vec<&str> = BASE_KEYS
            .iter()
            .copied()
            .chain(expected.iter().map(|(key, _)| *key))
            .collect();
        assert_eq!(keys, expected_keys, "{event}: payload keys or their order");
        assert_eq!(payload["session_id"], SESSION, "{event}");
        assert_eq!(payload["transcript_path"], transcript.as_str(), "{event}");
        assert_eq!(payload["cwd"], cwd.as_str(), "{event}");
        assert_eq!(payload["hook_event_name"], event, "{event}");
        let timestamp = payload["timestamp"].as_str().expect("timestamp string");
        let millis = parse_timestamp(timestamp).unwrap_or_else(|| {
            panic!("{event}: timestamp {timestamp:?} is not ISO-8601 UTC with ms")
        });
        assert!(
            before - 1000 <= millis && millis <= after + 1000,
            "{event}: timestamp {timestamp} is not the time of the firing"
        );
        for (key, value) in &expected {
            assert_eq!(&payload[*key], value, "{event}: field {key}");
        }

        let env = read_env(&out, event);
        for name in [
            "GEMINI_PROJECT_DIR",
            "GEMINI_CWD",
            "CLAUDE_PROJECT_DIR",
            "__cwd",
        ] {
            assert_eq!(var(&env, name), Some(cwd.as_str()), "{event}: {name}");
        }
        assert_eq!(var(&env, "GEMINI_SESSION_ID"), Some(SESSION), "{event}");
        assert_eq!(
            var(&env, "GEMINI_PLANS_DIR"),
            Some(plans.as_str()),
            "{event}"
        );
    }
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_plans_dir_hooks_get_the_default_one() {
    let (daemon, out) = capture_daemon().await;
    let client = daemon.client().await;
    let mut request = EventRequest::new("SessionStart", daemon.cwd())
        .with_input(input(json!({"source": "startup"})));
    request.session_id = SESSION.to_owned();
    fire_request(&client, request).await;

    let env = read_env(&out, "SessionStart");
    let plans = var(&env, "GEMINI_PLANS_DIR").expect("GEMINI_PLANS_DIR is set");
    let tmp = daemon.home.join(".gemini/tmp").display().to_string();
    assert!(
        plans.starts_with(&format!("{tmp}/")) && plans.ends_with(&format!("/{SESSION}/plans")),
        "default plans dir {plans:?} is not ~/.gemini/tmp/<project>/<session>/plans"
    );
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_environment_reaches_hooks() {
    let (daemon, out) = capture_daemon().await;
    let cwd = daemon.cwd();
    let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".to_owned());
    let prompt = json!({"prompt": "hi"});

    // No client environment: hooks get the daemon's.
    let plain = daemon.client().await;
    hookd_testkit::fire(&plain, &cwd, "BeforeAgent", prompt.clone()).await;
    let env = read_env(&out, "BeforeAgent");
    assert!(
        var(&env, "GEMINI_CLI_SYSTEM_SETTINGS_PATH").is_some(),
        "daemon env: {env:?}"
    );
    assert_eq!(var(&env, "HOOKD_E2E_MARK"), None);

    // The hello's environment replaces the daemon's; the GEMINI_* variables are added on top.
    let with_env = daemon
        .client_with_env(vec![
            ("PATH".to_owned(), path.clone()),
            ("HOOKD_E2E_MARK".to_owned(), "from-hello".to_owned()),
        ])
        .await;
    hookd_testkit::fire(&with_env, &cwd, "BeforeAgent", prompt.clone()).await;
    let env = read_env(&out, "BeforeAgent");
    assert_eq!(var(&env, "HOOKD_E2E_MARK"), Some("from-hello"));
    assert_eq!(
        var(&env, "GEMINI_CLI_SYSTEM_SETTINGS_PATH"),
        None,
        "daemon env leaked"
    );
    assert_eq!(var(&env, "GEMINI_PROJECT_DIR"), Some(cwd.as_str()));

    // A request's own environment overrides the connection's.
    let mut request = EventRequest::new("BeforeAgent", cwd.clone()).with_input(input(prompt));
    request.env = Some(
        [
            ("PATH".to_owned(), path),
            ("HOOKD_E2E_MARK".to_owned(), "from-request".to_owned()),
        ]
        .into_iter()
        .collect(),
    );
    fire_request(&with_env, request).await;
    let env = read_env(&out, "BeforeAgent");
    assert_eq!(var(&env, "HOOKD_E2E_MARK"), Some("from-request"));
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_are_redacted_from_the_base_environment_in_github_actions_or_when_enabled() {
    let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".to_owned());
    let prompt = json!({"prompt": "hi"});
    let names = |env: &Map<String, Value>, names: &[&str]| -> Vec<String> {
        names
            .iter()
            .filter(|name| env.contains_key(**name))
            .map(|name| (*name).to_owned())
            .collect()
    };
    let env = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        let mut env = vec![("PATH".to_owned(), path.clone())];
        env.extend(
            pairs
                .iter()
                .map(|(name, value)| ((*name).to_owned(), (*value).to_owned())),
        );
        env
    };
    let candidates = [
        "PATH",
        "GITHUB_SHA",
        "EDITOR",
        "MY_TOKEN",
        "GEMINI_CLI_IDE",
        "GIT_CONFIG_COUNT",
        "DB_PASSWORD",
        "REMOTE",
        "HOOK_SECRET",
        "GEMINI_PROJECT_DIR",
    ];

    // No redaction settings, but the client runs in GitHub Actions: strict mode keeps only
    // the always-allowed names and the GEMINI_CLI_/GIT_CONFIG_ prefixes of the base; the
    // hook's own `env` and the Gemini variables are added afterwards.
    let (daemon, out) = capture_daemon().await;
    let client = daemon
        .client_with_env(env(&[
            ("GITHUB_SHA", "0123abc"),
            ("EDITOR", "vim"),
            ("MY_TOKEN", "t"),
            ("GEMINI_CLI_IDE", "1"),
            ("GIT_CONFIG_COUNT", "0"),
        ]))
        .await;
    hookd_testkit::fire(&client, &daemon.cwd(), "BeforeAgent", prompt.clone()).await;
    let seen = read_env(&out, "BeforeAgent");
    assert_eq!(
        names(&seen, &candidates),
        [
            "PATH",
            "GEMINI_CLI_IDE",
            "GIT_CONFIG_COUNT",
            "GEMINI_PROJECT_DIR"
        ],
        "{seen:?}"
    );
    // The same client outside GitHub Actions: nothing is redacted.
    let client = daemon
        .client_with_env(env(&[("EDITOR", "vim"), ("MY_TOKEN", "t")]))
        .await;
    hookd_testkit::fire(&client, &daemon.cwd(), "BeforeAgent", prompt.clone()).await;
    let seen = read_env(&out, "BeforeAgent");
    assert_eq!(
        names(&seen, &candidates),
        ["PATH", "EDITOR", "MY_TOKEN", "GEMINI_PROJECT_DIR"],
        "{seen:?}"
    );
    daemon.stop().await;

    // Enabled in the project's settings, with an allowed and a blocked name: secret-looking
    // names and values go, the lists decide the rest, the hook's own `env` stays.
    let mut hook = command_hook("capture", &script_command("capture.sh"));
    hook["env"] = json!({"HOOK_SECRET": "the hook's own"});
    let mut project = settings(&[("BeforeAgent", None, vec![hook])]);
    project["security"] = json!({"environmentVariableRedaction": {
        "enabled": true, "allowed": ["my_token"], "blocked": ["EDITOR"]}});
    let daemon = Daemon::start(project).await;
    let out = daemon.out_dir("out");
    daemon.script("capture.sh", &capture_script(&out));
    let client = daemon
        .client_with_env(env(&[
            ("EDITOR", "vim"),
            ("MY_TOKEN", "t"),
            ("DB_PASSWORD", "p"),
            ("REMOTE", "https://me:pw@git.example.com/repo.git"),
            ("GIT_CONFIG_COUNT", "0"),
        ]))
        .await;
    hookd_testkit::fire(&client, &daemon.cwd(), "BeforeAgent", prompt).await;
    let seen = read_env(&out, "BeforeAgent");
    assert_eq!(
        names(&seen, &candidates),
        [
            "PATH",
            "MY_TOKEN",
            "GIT_CONFIG_COUNT",
            "HOOK_SECRET",
            "GEMINI_PROJECT_DIR"
        ],
        "{seen:?}"
    );
    daemon.stop().await;
}

/// Milliseconds since the Unix epoch.
fn unix_millis() -> i64 {
    let elapsed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO);
    i64::try_from(elapsed.as_millis()).expect("a sane clock")
}
