//! Events as `hookctl relay` sends them: the host's project root (`project_dir`) names the
//! project whatever directory the agent's shell moved to, hooks see that root as
//! `$CLAUDE_PROJECT_DIR`/`$GEMINI_PROJECT_DIR`, and a host's relay (`relayed_by`) gets only the
//! hooks that host does not run itself.

use std::os::unix::fs::PermissionsExt;

use hookd_testkit::{Daemon, DaemonOptions, RawConn, command_hook, settings, write};
use serde_json::{Value, json};

/// A BeforeTool hook named `name` that denies with the reason `name`.
fn denying(name: &str) -> Value {
    command_hook(
        name,
        &format!("echo '{{\"decision\":\"deny\",\"reason\":\"{name}\"}}'"),
    )
}

/// Sends one BeforeTool event for a shell command with the given extra fields and returns
/// the daemon's answer frame.
async fn before_tool(conn: &mut RawConn, id: u64, cwd: &str, extra: Value) -> Value {
    let mut request = json!({
        "type": "event",
        "id": id,
        "event": "BeforeTool",
        "cwd": cwd,
        "session_id": "s1",
        "input": {"tool_name": "run_shell_command", "tool_input": {"command": "rm -rf ."}},
    });
    if let (Some(request), Some(extra)) = (request.as_object_mut(), extra.as_object()) {
        request.extend(extra.clone());
    }
    conn.send(&request).await;
    let answer = conn.recv().await.expect("an answer");
    assert_eq!(answer["id"], id, "{answer}");
    answer
}

/// The names of the hooks that ran, from a result frame.
fn ran(answer: &Value) -> Vec<String> {
    assert_eq!(answer["type"], "result", "{answer}");
    answer["hooks"]
        .as_array()
        .map(|hooks| {
            hooks
                .iter()
                .filter_map(|hook| hook["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hosts_project_root_names_the_project_and_reaches_the_hooks() {
    // hookd's project file runs a project script by a path relative to the project root, as
    // Claude Code's documentation shows it; the script records what it saw and denies.
    let guard = json!({"hooks": {"BeforeTool": [{"matcher": "run_shell_command", "hooks": [
        {"name": "guard", "type": "command",
         "command": "\"$CLAUDE_PROJECT_DIR\"/scripts/guard.sh"}
    ]}]}});
    let options = DaemonOptions {
        files: vec![("project/.hookd/hooks.json".into(), guard.to_string())],
        ..DaemonOptions::default()
    };
    let daemon = Daemon::start_with(json!({}), options).await;
    let script = daemon.project.join("scripts/guard.sh");
    write(
        &script,
        "#!/usr/bin/env bash\n\
         input=$(cat)\n\
         printf '%s\\n%s\\n%s\\n%s\\n' \"$CLAUDE_PROJECT_DIR\" \"$GEMINI_PROJECT_DIR\" \"$PWD\" \
         \"$input\" > \"$CLAUDE_PROJECT_DIR/seen\"\n\
         echo '{\"decision\":\"deny\",\"reason\":\"guarded\"}'\n",
    );
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let sub = daemon.project.join("sub");
    std::fs::create_dir_all(&sub).expect("sub");
    let project = daemon.cwd();
    let sub = sub.display().to_string();

    let mut conn = RawConn::connect_hello(&daemon.socket).await;
    // The shell tool moved to `sub`: with the host's root the project's guard applies.
    for (id, relayed_by) in [(1, json!("claude")), (2, Value::Null)] {
        let mut extra = json!({"project_dir": project});
        if !relayed_by.is_null() {
            extra["relayed_by"] = relayed_by.clone();
        }
        let answer = before_tool(&mut conn, id, &sub, extra).await;
        assert_eq!(ran(&answer), ["guard"], "{relayed_by}: {answer}");
        assert_eq!(answer["final_output"]["decision"], "deny", "{answer}");
        assert_eq!(answer["final_output"]["reason"], "guarded", "{answer}");
        assert_eq!(answer["hooks"][0]["exit_code"], 0, "{answer}");

        let seen = std::fs::read_to_string(daemon.project.join("seen")).expect("the hook ran");
        let lines: Vec<&str> = seen.lines().collect();
        assert_eq!(lines.first(), Some(&project.as_str()), "CLAUDE_PROJECT_DIR");
        assert_eq!(lines.get(1), Some(&project.as_str()), "GEMINI_PROJECT_DIR");
        // The hook runs where the session is, and its payload says so.
        assert_eq!(lines.get(2), Some(&sub.as_str()), "working directory");
        let payload: Value = serde_json::from_str(lines.get(3).unwrap_or(&"")).expect("payload");
        assert_eq!(payload["cwd"], sub.as_str(), "{payload}");
        std::fs::remove_file(daemon.project.join("seen")).expect("reset");
    }
    // Without it `sub` is a project of its own, with no hooks: what the root prevents.
    let answer = before_tool(&mut conn, 3, &sub, json!({})).await;
    assert_eq!(ran(&answer), Vec::<String>::new(), "{answer}");

    // A relative root is refused like a relative cwd.
    let answer = before_tool(&mut conn, 4, &sub, json!({"project_dir": "proj"})).await;
    assert_eq!(answer["type"], "error", "{answer}");
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hosts_relay_skips_the_hooks_of_files_that_host_runs_itself() {
    let gemini_file = settings(&[("BeforeTool", None, vec![denying("gemini-file")])]);
    let hookd_file = settings(&[("BeforeTool", None, vec![denying("hookd-file")])]);
    let user_file = settings(&[("BeforeTool", None, vec![denying("gemini-user")])]);
    let options = DaemonOptions {
        files: vec![
            ("project/.hookd/hooks.json".into(), hookd_file.to_string()),
            ("home/.gemini/settings.json".into(), user_file.to_string()),
        ],
        ..DaemonOptions::default()
    };
    let daemon = Daemon::start_with(gemini_file, options).await;
    let cwd = daemon.cwd();
    let mut conn = RawConn::connect_hello(&daemon.socket).await;

    // (relayed_by, hooks that run)
    let cases: [(Value, &[&str]); 3] = [
        (Value::Null, &["gemini-file", "hookd-file", "gemini-user"]),
        (
            json!("claude"),
            &["gemini-file", "hookd-file", "gemini-user"],
        ),
        // Gemini CLI has run its own files' hooks already.
        (json!("gemini"), &["hookd-file"]),
    ];
    for (id, (relayed_by, expected)) in (1..).zip(cases) {
        let extra = if relayed_by.is_null() {
            json!({})
        } else {
            json!({"relayed_by": relayed_by})
        };
        let answer = before_tool(&mut conn, id, &cwd, extra).await;
        assert_eq!(ran(&answer), expected, "{relayed_by}: {answer}");
        assert_eq!(answer["final_output"]["decision"], "deny", "{answer}");
    }

    // An unknown host is a bad request, and the connection goes on.
    let answer = before_tool(&mut conn, 10, &cwd, json!({"relayed_by": "cursor"})).await;
    assert_eq!(answer["type"], "error", "{answer}");
    assert_eq!(answer["code"], "bad_request", "{answer}");
    let answer = before_tool(&mut conn, 11, &cwd, json!({"relayed_by": "gemini"})).await;
    assert_eq!(ran(&answer), ["hookd-file"], "{answer}");
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopping_daemon_answers_what_was_sent_before_the_stop() {
    let slow = command_hook(
        "slow",
        "touch started; while [ ! -e release ]; do sleep 0.01; done; \
         echo '{\"decision\":\"deny\",\"reason\":\"first\"}'",
    );
    let project = settings(&[("BeforeTool", None, vec![slow])]);
    let options = DaemonOptions {
        // The second event waits, received but unread, behind the first.
        configure: Box::new(|config| config.max_inflight_per_connection = 1),
        ..DaemonOptions::default()
    };
    let daemon = Daemon::start_with(project, options).await;
    let cwd = daemon.cwd();
    let socket = daemon.socket.clone();
    let started = daemon.project.join("started");
    let release = daemon.project.join("release");

    let mut conn = RawConn::connect_hello(&socket).await;
    let event = |id: u64| {
        json!({"type": "event", "id": id, "event": "BeforeTool", "cwd": cwd,
               "relayed_by": "claude",
               "input": {"tool_name": "run_shell_command", "tool_input": {"command": "ls"}}})
    };
    let mut bytes = Vec::new();
    for id in [1, 2] {
        let body = serde_json::to_vec(&event(id)).expect("json");
        bytes.extend_from_slice(&u32::try_from(body.len()).expect("len").to_be_bytes());
        bytes.extend_from_slice(&body);
    }
    conn.send_bytes(&bytes).await;
    hookd_testkit::wait_until(
        "the first hook to start",
        std::time::Duration::from_secs(20),
        || started.exists(),
    )
    .await;

    let stopped = tokio::spawn(daemon.stop());
    // The listener closes at once, while the first hook still runs.
    hookd_testkit::within(
        "new connections refused",
        std::time::Duration::from_secs(20),
        async {
            while tokio::net::UnixStream::connect(&socket).await.is_ok() {
                tokio::task::yield_now().await;
            }
        },
    )
    .await;
    std::fs::write(&release, "").expect("release");

    // Both were sent before the stop: both get their real answers, in order.
    for id in [1, 2] {
        let answer = conn.recv().await.expect("an answer");
        assert_eq!(answer["type"], "result", "{answer}");
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(answer["final_output"]["reason"], "first", "{answer}");
    }
    hookd_testkit::within(
        "the daemon to stop",
        std::time::Duration::from_secs(20),
        stopped,
    )
    .await
    .expect("daemon task");
}

/// The text a relayed AfterModel answer passes on: the replacement, else the chunk itself.
fn passed_on(answer: &Value, chunk: &Value) -> String {
    let response = &answer["final_output"]["hookSpecificOutput"]["llm_response"];
    let response = if response.is_object() {
        response
    } else {
        chunk
    };
    hookd_core::payload::chunk_text(response)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relayed_model_chunks_are_one_stream_for_filters_and_hooks() {
    // A filter and a hook that keeps every payload it gets, one per line.
    let hooks = json!({"hooks": {"AfterModel": [{"hooks": [
        {"name": "log", "type": "command", "command": "{ cat; echo; } >> seen.jsonl"},
        {"name": "redact", "type": "builtin", "builtin": "redact", "holdback": 16}
    ]}]}});
    let options = DaemonOptions {
        files: vec![("project/.hookd/hooks.json".into(), hooks.to_string())],
        ..DaemonOptions::default()
    };
    let daemon = Daemon::start_with(json!({}), options).await;
    let cwd = daemon.cwd();
    let key = "AKIAABCDEFGHIJKLMNOP";
    let (head, tail) = key.split_at(9);
    let texts = [
        "Here is the key: ".to_owned(),
        head.to_owned(),
        format!("{tail} and more text"),
        " that ends here.".to_owned(),
    ];
    let request = json!({"model": "m", "messages": [{"role": "user", "content": "key?"}]});
    let mut passed = String::new();
    for (index, text) in texts.iter().enumerate() {
        let last = index + 1 == texts.len();
        let mut candidate = json!({"content": {"role": "model", "parts": [text]}, "index": 0});
        if last {
            candidate["finishReason"] = json!("STOP");
        }
        let chunk = json!({"text": text, "candidates": [candidate]});
        // Each chunk on a connection of its own, as the relay sends them.
        let mut conn = RawConn::connect_hello(&daemon.socket).await;
        conn.send(
            &json!({"type": "event", "id": index, "event": "AfterModel", "cwd": cwd,
            "session_id": "s1", "relayed_by": "gemini",
            "input": {"llm_request": request, "llm_response": chunk}}),
        )
        .await;
        let answer = conn.recv().await.expect("an answer");
        assert_eq!(answer["type"], "result", "{answer}");
        // Filters first: the log hook's record follows the filter's.
        assert_eq!(ran(&answer), ["redact", "log"], "{answer}");
        passed.push_str(&passed_on(&answer, &chunk));
    }
    let whole = "Here is the key: [REDACTED:aws-access-key-id] and more text that ends here.";
    assert_eq!(passed, whole);

    let seen = std::fs::read_to_string(daemon.project.join("seen.jsonl")).expect("the hook ran");
    let payloads: Vec<Value> = seen
        .lines()
        .map(|line| serde_json::from_str(line).expect("a payload"))
        .collect();
    assert_eq!(payloads.len(), texts.len(), "{seen}");
    assert!(!seen.contains(head), "the hook saw part of the key: {seen}");
    // `full_content` is the response so far, as it was passed on.
    let last = payloads.last().expect("payloads");
    assert_eq!(last["full_content"], whole, "{last}");
    for payload in &payloads {
        let full = payload["full_content"].as_str().unwrap_or_default();
        assert!(whole.starts_with(full), "{payload}");
    }

    // The response is over: the same request starts a new series.
    let mut conn = RawConn::connect_hello(&daemon.socket).await;
    let chunk = json!({"candidates": [{"content": {"role": "model", "parts": ["again"]},
        "finishReason": "STOP"}]});
    conn.send(
        &json!({"type": "event", "id": 9, "event": "AfterModel", "cwd": cwd,
        "session_id": "s1", "relayed_by": "gemini",
        "input": {"llm_request": request, "llm_response": chunk}}),
    )
    .await;
    let answer = conn.recv().await.expect("an answer");
    assert_eq!(passed_on(&answer, &chunk), "again", "{answer}");
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_system_file_gemini_cli_refuses_is_not_loaded_and_says_why() {
    use std::os::unix::fs::PermissionsExt;
    let system = settings(&[("BeforeTool", None, vec![denying("system-guard")])]);
    let options = DaemonOptions {
        files: vec![("etc/settings.json".into(), system.to_string())],
        ..DaemonOptions::default()
    };
    let daemon = Daemon::start_with(json!({}), options).await;
    let client = daemon.client().await;
    let cwd = daemon.cwd();
    let file = daemon.path("etc/settings.json");
    let names = |listing: &hookd_protocol::ListResponse| -> Vec<String> {
        listing.hooks.iter().map(|hook| hook.name.clone()).collect()
    };
    let listing = client.list(cwd.clone()).await.expect("list");
    assert_eq!(names(&listing), ["system-guard"], "{listing:?}");

    // Writable by others: Gemini CLI does not load it, nor does hookd after a reload.
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).expect("chmod");
    client.reload().await.expect("reload");
    let listing = client.list(cwd.clone()).await.expect("list");
    assert_eq!(names(&listing), Vec::<String>::new(), "{listing:?}");
    let path = file.display().to_string();
    let said = listing.diagnostics.iter().any(|diagnostic| {
        diagnostic.path.as_deref() == Some(path.as_str())
            && diagnostic
                .message
                .contains("writable by its group or others")
    });
    assert!(said, "{:?}", listing.diagnostics);
    daemon.stop().await;
}
