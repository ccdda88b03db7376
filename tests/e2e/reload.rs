//! A reload request (SIGHUP in the binary) makes the next event see edited settings, and the
//! daemon reports ready → reloading → ready → stopping to its lifecycle observer.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use hookd_server::{Control, Lifecycle};
use hookd_testkit::{
    Daemon, DaemonOptions, command_hook, fire, input, settings, wait_until, write,
};
use serde_json::json;

/// Records every lifecycle call in order.
#[derive(Default)]
struct Recorder(Mutex<Vec<String>>);

impl Recorder {
    fn calls(&self) -> Vec<String> {
        self.0.lock().expect("recorder lock").clone()
    }
}

impl Lifecycle for Recorder {
    fn ready(&self, status: &str) {
        self.0
            .lock()
            .expect("recorder lock")
            .push(format!("ready: {status}"));
    }
    fn reloading(&self) {
        self.0
            .lock()
            .expect("recorder lock")
            .push("reloading".into());
    }
    fn stopping(&self) {
        self.0
            .lock()
            .expect("recorder lock")
            .push("stopping".into());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reload_request_rebuilds_registries_and_reports_lifecycle() {
    let control = Control::new();
    let recorder = Arc::new(Recorder::default());
    let options = DaemonOptions {
        configure: Box::new({
            let control = control.clone();
            let recorder = Arc::clone(&recorder);
            move |config| {
                config.control = control;
                config.lifecycle = Some(recorder);
            }
        }),
        ..DaemonOptions::default()
    };
    let first = settings(&[(
        "BeforeAgent",
        None,
        vec![command_hook("v1", "echo '{\"systemMessage\":\"one\"}'")],
    )]);
    let daemon = Daemon::start_with(first, options).await;
    let client = daemon.client().await;
    let cwd = daemon.cwd();

    let before = client
        .event(
            hookd_client::EventRequest::new("BeforeAgent", &cwd)
                .with_input(input(json!({"prompt": "p"}))),
        )
        .await
        .unwrap();
    assert_eq!(before.result.final_output.unwrap()["systemMessage"], "one");

    let second = settings(&[(
        "BeforeAgent",
        None,
        vec![command_hook("v2", "echo '{\"systemMessage\":\"two\"}'")],
    )]);
    write(
        &daemon.project.join(".gemini/settings.json"),
        &serde_json::to_string(&second).unwrap(),
    );
    control.request_reload();
    wait_until("the reload to finish", Duration::from_secs(10), || {
        recorder
            .calls()
            .iter()
            .filter(|call| call.starts_with("ready"))
            .count()
            >= 2
    })
    .await;

    let after = client
        .event(
            hookd_client::EventRequest::new("BeforeAgent", &cwd)
                .with_input(input(json!({"prompt": "p"}))),
        )
        .await
        .unwrap();
    assert_eq!(after.result.final_output.unwrap()["systemMessage"], "two");
    assert!(after.generation > before.generation);
    let unchanged = fire(&client, &cwd, "SessionEnd", json!({"reason": "exit"})).await;
    assert!(unchanged.success);

    daemon.stop().await;
    let calls = recorder.calls();
    assert_eq!(calls.len(), 4, "{calls:?}");
    assert!(
        calls[0].starts_with("ready: 0 project registries"),
        "{calls:?}"
    );
    assert_eq!(calls[1], "reloading");
    assert!(
        calls[2].starts_with("ready: 1 project registry loaded, 1 hooks"),
        "{calls:?}"
    );
    assert_eq!(calls[3], "stopping");
}
