//! A graceful stop: in-flight events finish and get their results, new requests are refused
//! with `shutting_down`, and the daemon returns.

use std::time::Duration;

use hookd_client::{ClientError, EventRequest};
use hookd_protocol::ErrorCode;
use hookd_testkit::{Daemon, command_hook, input, wait_until, within};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_finishes_in_flight_runs_and_refuses_new_requests() {
    let settings = json!({"hooks": {"BeforeAgent": [{"hooks": [command_hook(
        "slow",
        "touch started; sleep 2; echo '{\"systemMessage\":\"finished\"}'",
    )]}]}});
    let daemon = Daemon::start(settings).await;
    let client = daemon.client().await;
    let started = daemon.project.join("started");
    let request =
        EventRequest::new("BeforeAgent", daemon.cwd()).with_input(input(json!({"prompt": "p"})));
    let in_flight = tokio::spawn({
        let client = client.clone();
        async move { client.event(request).await }
    });
    wait_until("the hook started", Duration::from_secs(20), || {
        started.exists()
    })
    .await;

    let stopped = tokio::spawn(daemon.stop());
    // The stop is under way once a new request is refused.
    let refused = within("a refusal", Duration::from_secs(20), async {
        loop {
            match client.ping().await {
                Err(ClientError::Server { code, .. }) => break code,
                Ok(()) => tokio::task::yield_now().await,
                Err(other) => panic!("unexpected error {other:?}"),
            }
        }
    })
    .await;
    assert_eq!(refused, ErrorCode::ShuttingDown);

    let answer = within("the in-flight result", Duration::from_secs(20), in_flight)
        .await
        .expect("task")
        .expect("the in-flight event is answered");
    assert!(answer.result.success);
    assert_eq!(
        answer.result.final_output.expect("output")["systemMessage"],
        "finished"
    );
    within("the daemon to stop", Duration::from_secs(20), stopped)
        .await
        .expect("daemon task");
}
