//! The life of requests beyond one answer: streaming hook results, cancelling, clients that
//! disconnect mid-run, and the `list` and `status` requests.

use std::path::Path;
use std::time::Duration;

use hookd_client::{Client, ClientError, EventRequest, EventStreamItem};
use hookd_protocol::{ErrorCode, Outcome, Severity};
use hookd_testkit::{
    Daemon, DaemonOptions, RawConn, command_hook, fire, input, process_running, script_command,
    wait_until, within,
};
use serde_json::{Value, json};

/// A hook that starts a background `sleep 60` in its process group, writes its own pid and
/// the child's to `holder.pids` in the project dir, then sleeps for a minute.
const HOLDER_SCRIPT: &str = "sleep 60 &\nchild=$!\necho \"$$ $child\" > holder.pids.tmp && mv holder.pids.tmp holder.pids\nsleep 60";

/// Waits for the holder hook's pid file and returns the hook's pid and its child's.
async fn holder_pids(project: &Path) -> (i32, i32) {
    let path = project.join("holder.pids");
    wait_until("the hook wrote its pids", Duration::from_secs(20), || {
        path.exists()
    })
    .await;
    let text = std::fs::read_to_string(&path).expect("pid file");
    let pids: Vec<i32> = text
        .split_whitespace()
        .map(|pid| pid.parse().expect("a pid"))
        .collect();
    assert_eq!(pids.len(), 2, "pid file {text:?}");
    (pids[0], pids[1])
}

/// Waits until neither process runs any more.
async fn assert_gone(what: &str, pids: (i32, i32)) {
    wait_until(what, Duration::from_secs(10), || {
        !process_running(pids.0) && !process_running(pids.1)
    })
    .await;
}

/// A daemon whose BeforeTool hooks are `fast` (answers at once) then `holder` (sleeps).
async fn holder_daemon(options: DaemonOptions) -> Daemon {
    let settings = json!({"hooks": {"BeforeTool": [{"hooks": [
        command_hook("fast", r#"printf '%s\n' '{"decision":"deny","reason":"fast"}'"#),
        command_hook("holder", &script_command("holder.sh")),
    ]}]}});
    let daemon = Daemon::start_with(settings, options).await;
    daemon.script("holder.sh", HOLDER_SCRIPT);
    daemon
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_disconnects_takes_its_hooks_with_it() {
    let daemon = holder_daemon(DaemonOptions::default()).await;
    let mut conn = RawConn::connect_hello(&daemon.socket).await;
    conn.send(
        &json!({"type": "event", "id": 1, "event": "BeforeTool", "cwd": daemon.cwd(),
                      "input": {"tool_name": "t", "tool_input": {}}}),
    )
    .await;
    let pids = holder_pids(&daemon.project).await;
    assert!(
        process_running(pids.0) && process_running(pids.1),
        "{pids:?}"
    );

    drop(conn);
    assert_gone(
        "the disconnected client's hook and its child are killed",
        pids,
    )
    .await;

    // The daemon carries on.
    daemon.client().await.ping().await.expect("ping");
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_stops_running_hooks_and_keeps_finished_ones() {
    let daemon = holder_daemon(DaemonOptions::default()).await;
    let client = daemon.client().await;
    let request = EventRequest::new("BeforeTool", daemon.cwd())
        .with_input(input(json!({"tool_name": "t", "tool_input": {}})));
    let mut stream = client.event_streaming(request).await.expect("sent");

    // The fast hook finishes first, then the holder is surely running.
    let first = within(
        "the fast hook's result",
        Duration::from_secs(20),
        stream.recv(),
    )
    .await
    .expect("a first item")
    .expect("no error");
    match first {
        EventStreamItem::Hook { index, hook } => {
            assert_eq!((index, hook.name.as_str()), (0, "fast"), "{hook:?}");
        }
        EventStreamItem::Result(response) => panic!("result before cancel: {response:?}"),
    }
    let pids = holder_pids(&daemon.project).await;

    let id = stream.id().clone();
    within("cancel", Duration::from_secs(10), client.cancel(&id))
        .await
        .expect("the daemon acknowledges the cancel");
    let response = within(
        "the cancelled event's result",
        Duration::from_secs(10),
        stream.finish(),
    )
    .await
    .expect("a result");
    let result = response.result;
    assert_eq!(result.hooks.len(), 2, "{result:?}");
    let fast = &result.hooks[0];
    assert_eq!(fast.outcome, Outcome::Exited { code: 0 }, "{fast:?}");
    assert_eq!(
        fast.output,
        Some(json!({"decision": "deny", "reason": "fast"}))
    );
    let holder = &result.hooks[1];
    assert_eq!(holder.outcome, Outcome::Cancelled, "{holder:?}");
    assert!(!holder.success, "{holder:?}");
    assert!(!result.success, "a cancelled hook is a failure: {result:?}");
    assert_gone("the cancelled hook and its child are killed", pids).await;

    // The cancelled id is no longer in flight.
    let error = client.cancel(&id).await.expect_err("nothing to cancel");
    assert!(
        matches!(
            error,
            ClientError::Server {
                code: ErrorCode::UnknownId,
                ..
            }
        ),
        "{error:?}"
    );
    daemon.stop().await;
}

/// Reads the status until `condition` holds for it, for at most ten seconds.
async fn status_until(
    client: &Client,
    what: &str,
    condition: impl Fn(&hookd_protocol::StatusResponse) -> bool,
) -> hookd_protocol::StatusResponse {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let status = client.status().await.expect("status");
        if condition(&status) {
            return status;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "status never showed {what}: {status:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_reports_the_daemon_and_its_counters() {
    let options = DaemonOptions {
        configure: Box::new(|config| config.max_hooks = 7),
        ..DaemonOptions::default()
    };
    let daemon = holder_daemon(options).await;
    let client = daemon.client().await;
    let cwd = daemon.cwd();

    // An event with no matching hook still counts as served.
    fire(&client, &cwd, "SessionEnd", json!({"reason": "exit"})).await;
    let status = client.status().await.expect("status");
    assert_eq!(status.pid, std::process::id());
    assert_eq!(status.version, env!("CARGO_PKG_VERSION"));
    assert_eq!(status.max_hooks, 7);
    assert!(status.connections >= 1, "{status:?}");
    assert!(status.events_served >= 1, "{status:?}");
    assert_eq!(status.hooks_running, 0, "{status:?}");
    let registry = status
        .registries
        .iter()
        .find(|registry| registry.cwd == cwd)
        .unwrap_or_else(|| panic!("no registry for the project: {status:?}"));
    assert_eq!(registry.hooks, 2, "{registry:?}");

    // While the holder runs, it is counted.
    let request = EventRequest::new("BeforeTool", cwd.clone())
        .with_input(input(json!({"tool_name": "t", "tool_input": {}})));
    let stream = client.event_streaming(request).await.expect("sent");
    holder_pids(&daemon.project).await;
    let busy = status_until(&client, "the running hook", |status| {
        status.hooks_running == 1
    })
    .await;
    assert!(busy.events_served >= 2, "{busy:?}");

    // Dropping the stream cancels the event; the slot is freed.
    drop(stream);
    status_until(&client, "no running hook", |status| {
        status.hooks_running == 0 && status.hooks_queued == 0
    })
    .await;
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_shows_project_hooks_with_their_settings_file() {
    let settings = json!({
        "hooksConfig": {"disabled": ["off"]},
        "hooks": {
            "BeforeTool": [{"matcher": "write_file", "sequential": true, "hooks": [
                {"name": "guard", "type": "command", "command": "./guard.sh",
                 "timeout": 5000, "description": "checks writes"}
            ]}],
            "SessionStart": [{"hooks": [
                {"type": "command", "command": "echo hi"},
                {"name": "off", "type": "command", "command": "true"}
            ]}]
        }
    });
    let daemon = Daemon::start(settings).await;
    let client = daemon.client().await;
    let cwd = daemon.cwd();
    let path = daemon
        .project
        .join(".gemini/settings.json")
        .display()
        .to_string();

    let list = client.list(cwd.clone()).await.expect("list");
    assert_eq!(list.cwd, cwd);
    assert!(list.hooks_enabled);
    let errors: Vec<_> = list
        .diagnostics
        .iter()
        .filter(|diagnostic| diagnostic.severity == Severity::Error)
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(list.hooks.len(), 3, "{:?}", list.hooks);
    for hook in &list.hooks {
        assert_eq!(hook.source, "project", "{hook:?}");
        assert_eq!(hook.path.as_deref(), Some(path.as_str()), "{hook:?}");
        assert_eq!(hook.hook_type, "command", "{hook:?}");
        assert_eq!(hook.extension, None, "{hook:?}");
    }
    let find = |name: &str| {
        list.hooks
            .iter()
            .find(|hook| hook.name == name)
            .unwrap_or_else(|| panic!("no hook {name:?} in {:?}", list.hooks))
    };
    let guard = find("guard");
    assert_eq!(guard.event, "BeforeTool");
    assert!(guard.enabled);
    assert_eq!(guard.matcher.as_deref(), Some("write_file"));
    assert!(guard.sequential);
    assert_eq!(guard.timeout_ms, 5000);
    assert_eq!(guard.description.as_deref(), Some("checks writes"));
    assert_eq!(guard.command.as_deref(), Some("./guard.sh"));
    // Without a name, a command hook is displayed by its command.
    let unnamed = find("echo hi");
    assert_eq!(unnamed.event, "SessionStart");
    assert_eq!(unnamed.matcher, None);
    assert!(!unnamed.sequential);
    assert_eq!(unnamed.timeout_ms, 60_000);
    assert!(!find("off").enabled, "a hook named in hooksConfig.disabled");

    // The disabled hook does not run; the listing and the event share a generation.
    let response = hookd_testkit::fire_request(
        &client,
        EventRequest::new("SessionStart", cwd.clone())
            .with_input(input(json!({"source": "startup"}))),
    )
    .await;
    let names: Vec<&str> = response
        .result
        .hooks
        .iter()
        .map(|hook| hook.name.as_str())
        .collect();
    assert_eq!(names, ["echo hi"]);
    assert_eq!(response.generation, list.generation);
    daemon.stop().await;
}

/// Reads a streaming event to the end: the hook items as `(index, record)`, then the result.
async fn read_stream(
    client: &Client,
    request: EventRequest,
) -> (
    Vec<(u64, hookd_protocol::HookRecord)>,
    hookd_client::EventResponse,
) {
    let mut stream = client.event_streaming(request).await.expect("sent");
    let mut hooks = Vec::new();
    loop {
        let item = within(
            "the next stream item",
            Duration::from_secs(30),
            stream.recv(),
        )
        .await
        .expect("the stream ends only after its result")
        .expect("no error");
        match item {
            EventStreamItem::Hook { index, hook } => hooks.push((index, hook)),
            EventStreamItem::Result(response) => {
                assert!(stream.recv().await.is_none(), "nothing after the result");
                return (hooks, response);
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_yields_each_hook_then_the_result() {
    let hooks = |prefix: &str| -> Vec<Value> {
        (0..3)
            .map(|n| {
                command_hook(
                    &format!("{prefix}-{n}"),
                    &format!(r#"printf '%s\n' '{{"systemMessage":"{prefix}-{n}"}}'"#),
                )
            })
            .collect()
    };
    let settings = json!({"hooks": {"BeforeTool": [
        {"matcher": "^parallel$", "hooks": hooks("p")},
        {"matcher": "^sequential$", "sequential": true, "hooks": hooks("s")}
    ]}});
    let daemon = Daemon::start(settings).await;
    let client = daemon.client().await;

    for tool in ["parallel", "sequential"] {
        let request = EventRequest::new("BeforeTool", daemon.cwd())
            .with_input(input(json!({"tool_name": tool, "tool_input": {}})));
        let (streamed, response) = read_stream(&client, request).await;
        let result = response.result;
        assert_eq!(result.hooks.len(), 3, "{tool}: {result:?}");
        assert_eq!(streamed.len(), 3, "{tool}: one item per hook: {streamed:?}");
        let mut indices: Vec<u64> = streamed.iter().map(|(index, _)| *index).collect();
        if tool == "sequential" {
            assert_eq!(indices, [0, 1, 2], "sequential hooks stream in plan order");
        }
        indices.sort_unstable();
        assert_eq!(indices, [0, 1, 2], "{tool}");
        for (index, record) in &streamed {
            let position = usize::try_from(*index).expect("small index");
            assert_eq!(
                record, &result.hooks[position],
                "{tool}: streamed record {index}"
            );
        }
        let prefix = &tool[..1];
        assert_eq!(
            result
                .final_output
                .as_ref()
                .map(|output| &output["systemMessage"]),
            Some(&json!(format!("{prefix}-0\n{prefix}-1\n{prefix}-2"))),
            "{tool}"
        );
    }
    daemon.stop().await;
}
