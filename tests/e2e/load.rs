//! Many clients with many requests in flight each: every answer is correct and belongs to its
//! own request.

use std::time::Duration;

use hookd_testkit::{Daemon, ECHO_N_SCRIPT, command_hook, fire, script_command, settings, within};
use serde_json::json;
use tokio::task::JoinSet;

const CLIENTS: usize = 50;
const EVENTS_PER_CLIENT: usize = 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_clients_with_twenty_events_each_get_their_own_answers() {
    let daemon = Daemon::start(settings(&[(
        "BeforeTool",
        None,
        vec![command_hook("echo-n", &script_command("echo-n.sh"))],
    )]))
    .await;
    daemon.script("echo-n.sh", ECHO_N_SCRIPT);
    let cwd = daemon.cwd();

    let mut clients = JoinSet::new();
    for client_index in 0..CLIENTS {
        let client = daemon.client().await;
        let cwd = cwd.clone();
        clients.spawn(async move {
            // All of this client's events are in flight on its one connection at once.
            let mut events = JoinSet::new();
            for event_index in 0..EVENTS_PER_CLIENT {
                let client = client.clone();
                let cwd = cwd.clone();
                events.spawn(async move {
                    let tag = format!("{client_index}-{event_index}");
                    let result = fire(
                        &client,
                        &cwd,
                        "BeforeTool",
                        json!({"tool_name": "t", "tool_input": {"n": tag}}),
                    )
                    .await;
                    let expected = json!({"continue": true, "suppressOutput": false,
                                          "decision": "deny", "reason": format!("r-{tag}")});
                    assert_eq!(
                        result.final_output,
                        Some(expected),
                        "request {tag}: {result:?}"
                    );
                    assert!(result.success, "request {tag}: {result:?}");
                });
            }
            let mut answered = 0;
            while let Some(outcome) = events.join_next().await {
                outcome.expect("a correct answer");
                answered += 1;
            }
            answered
        });
    }

    let all = within("the load run", Duration::from_secs(180), async {
        let mut answered = 0;
        while let Some(outcome) = clients.join_next().await {
            answered += outcome.expect("a client saw only correct answers");
        }
        answered
    })
    .await;
    assert_eq!(all, CLIENTS * EVENTS_PER_CLIENT);

    let status = daemon.client().await.status().await.expect("status");
    assert!(
        status.events_served >= (CLIENTS * EVENTS_PER_CLIENT) as u64,
        "events_served {}",
        status.events_served
    );
    daemon.stop().await;
}
