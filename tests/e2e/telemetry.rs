//! OpenTelemetry export against a real OTLP/HTTP receiver started by the test: hyper serving
//! `/v1/traces`, `/v1/metrics` and `/v1/logs`, each body decoded with the official protobuf
//! messages (`opentelemetry-proto`). A known run sequence must arrive as spans with the right
//! parents and attributes, a log record per decision in each event's trace, and metrics with
//! the right counts; a collector that never answers must not delay any decision, and what
//! it costs is counted as drops.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hookd_client::EventRequest;
use hookd_testkit::{Daemon, DaemonOptions, SEEN_WITHIN, command_hook, input, settings};
use http_body_util::{BodyExt, Full};
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::logs::v1::LogRecord;
use opentelemetry_proto::tonic::metrics::v1::metric;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use serde_json::json;

/// What the receiver decoded, by signal.
#[derive(Default)]
struct Received {
    spans: Vec<Span>,
    logs: Vec<LogRecord>,
    metrics: Vec<ExportMetricsServiceRequest>,
    resources: Vec<Vec<KeyValue>>,
}

/// A minimal OTLP/HTTP receiver: answers 200 with an empty protobuf body.
async fn start_receiver() -> (SocketAddr, Arc<Mutex<Received>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address");
    let received = Arc::new(Mutex::new(Received::default()));
    let store = Arc::clone(&received);
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                let service = hyper::service::service_fn(
                    move |request: hyper::Request<hyper::body::Incoming>| {
                        let store = Arc::clone(&store);
                        async move {
                            let path = request.uri().path().to_owned();
                            let content_type = request
                                .headers()
                                .get("content-type")
                                .and_then(|value| value.to_str().ok())
                                .unwrap_or("")
                                .to_owned();
                            let body = request
                                .into_body()
                                .collect()
                                .await
                                .map(|b| b.to_bytes())
                                .unwrap_or_default();
                            assert_eq!(content_type, "application/x-protobuf", "{path}");
                            let mut received = store.lock().expect("lock");
                            match path.as_str() {
                                "/v1/traces" => {
                                    let request = ExportTraceServiceRequest::decode(body)
                                        .expect("traces decode");
                                    for resource in request.resource_spans {
                                        received.resources.push(
                                            resource
                                                .resource
                                                .map(|r| r.attributes)
                                                .unwrap_or_default(),
                                        );
                                        for scope in resource.scope_spans {
                                            received.spans.extend(scope.spans);
                                        }
                                    }
                                }
                                "/v1/logs" => {
                                    let request = ExportLogsServiceRequest::decode(body)
                                        .expect("logs decode");
                                    for resource in request.resource_logs {
                                        for scope in resource.scope_logs {
                                            received.logs.extend(scope.log_records);
                                        }
                                    }
                                }
                                "/v1/metrics" => {
                                    let request = ExportMetricsServiceRequest::decode(body)
                                        .expect("metrics decode");
                                    received.metrics.push(request);
                                }
                                other => panic!("unexpected path {other}"),
                            }
                            Ok::<_, Infallible>(
                                hyper::Response::builder()
                                    .status(200)
                                    .header("content-type", "application/x-protobuf")
                                    .body(Full::new(Bytes::new()))
                                    .expect("response"),
                            )
                        }
                    },
                );
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (address, received)
}

fn attribute<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a any_value::Value> {
    attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|value: &AnyValue| value.value.as_ref())
}

fn text<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a str> {
    match attribute(attributes, key)? {
        any_value::Value::StringValue(text) => Some(text),
        _ => None,
    }
}

fn int(attributes: &[KeyValue], key: &str) -> Option<i64> {
    match attribute(attributes, key)? {
        any_value::Value::IntValue(number) => Some(*number),
        _ => None,
    }
}

/// A project whose BeforeTool runs a guard that blocks (exit 2) and a hook that allows.
fn project() -> serde_json::Value {
    settings(&[(
        "BeforeTool",
        Some("run_shell_command"),
        vec![
            command_hook("guard", "echo 'no rm here' >&2; exit 2"),
            command_hook("noted", "echo '{}'"),
        ],
    )])
}

async fn fire_shell(client: &hookd_client::Client, cwd: &str, call: &str) -> Duration {
    let mut request = EventRequest::new("BeforeTool", cwd).with_input(input(json!({
        "tool_name": "run_shell_command",
        "tool_input": {"command": "rm -rf /secret-path"},
        "tool_use_id": call,
    })));
    request.session_id = "session-42".to_owned();
    let started = Instant::now();
    let response = hookd_testkit::fire_request(client, request).await;
    let took = started.elapsed();
    assert_eq!(
        response
            .result
            .final_output
            .as_ref()
            .and_then(|o| o.get("decision"))
            .and_then(|d| d.as_str()),
        Some("deny")
    );
    took
}

async fn wait_for(what: &str, received: &Arc<Mutex<Received>>, done: impl Fn(&Received) -> bool) {
    let deadline = Instant::now() + SEEN_WITHIN;
    loop {
        if done(&received.lock().expect("lock")) {
            return;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The last cumulative value of sum metric `name` whose points have the attribute
/// `key = value` (or every point with `None`).
fn sum_of(received: &Received, name: &str, filter: Option<(&str, &str)>) -> i64 {
    let Some(export) = received.metrics.last() else {
        return 0;
    };
    let mut total = 0;
    for resource in &export.resource_metrics {
        for scope in &resource.scope_metrics {
            for metric in scope.metrics.iter().filter(|m| m.name == name) {
                if let Some(metric::Data::Sum(sum)) = &metric.data {
                    for point in &sum.data_points {
                        if filter
                            .is_none_or(|(key, value)| text(&point.attributes, key) == Some(value))
                        {
                            if let Some(opentelemetry_proto::tonic::metrics::v1::number_data_point::Value::AsInt(n)) = point.value {
                                total += n;
                            }
                        }
                    }
                }
            }
        }
    }
    total
}

fn histogram_count(received: &Received, name: &str) -> u64 {
    let Some(export) = received.metrics.last() else {
        return 0;
    };
    export
        .resource_metrics
        .iter()
        .flat_map(|r| &r.scope_metrics)
        .flat_map(|s| &s.metrics)
        .filter(|m| m.name == name)
        .filter_map(|m| match &m.data {
            Some(metric::Data::Histogram(h)) => {
                Some(h.data_points.iter().map(|p| p.count).sum::<u64>())
            }
            _ => None,
        })
        .sum()
}

/// The spans, logs and metrics of three denied `run_shell_command` calls of `cwd`.
fn check_received(received: &Received, cwd: &str) {
    assert_eq!(received.spans.len(), 9, "3 events, 2 hooks each");
    let events: Vec<&Span> = received
        .spans
        .iter()
        .filter(|s| s.parent_span_id.is_empty())
        .collect();
    assert_eq!(events.len(), 3);
    let mut calls: Vec<&str> = events
        .iter()
        .map(|span| text(&span.attributes, "gen_ai.tool.call.id").expect("tool call id"))
        .collect();
    calls.sort();
    assert_eq!(calls, ["toolu_1", "toolu_2", "toolu_3"]);
    for event in &events {
        assert_eq!(event.name, "hookd BeforeTool");
        assert_eq!(
            text(&event.attributes, "gen_ai.tool.name"),
            Some("run_shell_command")
        );
        assert_eq!(text(&event.attributes, "session.id"), Some("session-42"));
        assert_eq!(text(&event.attributes, "hookd.decision"), Some("deny"));
        assert_eq!(
            text(&event.attributes, "hookd.event.name"),
            Some("BeforeTool")
        );
        assert_eq!(text(&event.attributes, "hookd.project"), Some(cwd));
        let children: Vec<&Span> = received
            .spans
            .iter()
            .filter(|span| span.parent_span_id == event.span_id)
            .collect();
        assert_eq!(children.len(), 2, "one child per hook");
        for child in &children {
            assert_eq!(child.trace_id, event.trace_id);
            assert_eq!(text(&child.attributes, "hookd.hook.layer"), Some("project"));
            assert!(child.start_time_unix_nano >= event.start_time_unix_nano);
            assert!(child.end_time_unix_nano <= event.end_time_unix_nano);
        }
        let guard = children
            .iter()
            .find(|span| text(&span.attributes, "hookd.hook.name") == Some("guard"))
            .expect("guard span");
        assert_eq!(int(&guard.attributes, "process.exit.code"), Some(2));
        assert_eq!(text(&guard.attributes, "hookd.hook.decision"), Some("deny"));
    }
    // Nothing sensitive by default: neither the tool input nor the commands nor the output.
    let everything = format!("{:?}{:?}", received.spans, received.logs);
    assert!(!everything.contains("secret-path"), "the tool input leaked");
    assert!(!everything.contains("no rm here"), "hook output leaked");
    assert!(!everything.contains("exit 2"), "a command leaked");
    let resource = &received.resources[0];
    assert_eq!(text(resource, "service.name"), Some("hookd"));

    // A log record per decision, in its event's trace.
    assert_eq!(received.logs.len(), 3);
    for log in &received.logs {
        assert_eq!(log.event_name, "hookd.decision");
        assert_eq!(text(&log.attributes, "hookd.decision"), Some("deny"));
        assert!(
            events
                .iter()
                .any(|e| e.trace_id == log.trace_id && e.span_id == log.span_id)
        );
    }

    // Metrics: 3 events, 3 deny decisions, 6 hook durations.
    assert_eq!(sum_of(received, "hookd.events", None), 3);
    assert_eq!(
        sum_of(
            received,
            "hookd.decisions",
            Some(("hookd.decision", "deny"))
        ),
        3
    );
    assert_eq!(histogram_count(received, "hookd.hook.duration"), 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_logs_and_metrics_reach_a_real_otlp_receiver() {
    let (address, received) = start_receiver().await;
    let endpoint = format!("http://{address}");
    let options = DaemonOptions {
        configure: Box::new(move |config| {
            config.telemetry.endpoint = Some(endpoint);
            config.telemetry.flush_interval = Duration::from_millis(50);
            config.telemetry.metric_interval = Duration::from_millis(200);
        }),
        ..DaemonOptions::default()
    };
    let daemon = Daemon::start_with(project(), options).await;
    let client = daemon.client().await;
    let cwd = daemon.cwd();
    for call in ["toolu_1", "toolu_2", "toolu_3"] {
        fire_shell(&client, &cwd, call).await;
    }
    wait_for("9 spans and 3 log records", &received, |r| {
        r.spans.len() >= 9 && r.logs.len() >= 3
    })
    .await;
    wait_for("metrics counting the 3 events", &received, |r| {
        sum_of(r, "hookd.events", None) >= 3
    })
    .await;

    check_received(&received.lock().expect("lock"), &cwd);

    let stats = client.stats().await.expect("stats");
    let telemetry = stats.telemetry.expect("stats show the export");
    assert_eq!(telemetry.recorded, 3);
    assert_eq!(telemetry.dropped, 0);
    assert_eq!(telemetry.spans_exported, 9);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_black_holed_collector_delays_no_decision_and_drops_are_counted() {
    // Accepts connections and never answers: every export waits for its whole timeout.
    let hole = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = hole.local_addr().expect("address");
    let held: Arc<Mutex<Vec<tokio::net::TcpStream>>> = Arc::default();
    let keep = Arc::clone(&held);
    tokio::spawn(async move {
        while let Ok((stream, _)) = hole.accept().await {
            keep.lock().expect("lock").push(stream);
        }
    });
    let endpoint = format!("http://{address}");
    let options = DaemonOptions {
        configure: Box::new(move |config| {
            config.telemetry.endpoint = Some(endpoint);
            config.telemetry.queue = 8;
            config.telemetry.flush_interval = Duration::from_millis(10);
            config.telemetry.export_timeout = Duration::from_secs(3);
        }),
        ..DaemonOptions::default()
    };
    let daemon = Daemon::start_with(project(), options).await;
    let client = daemon.client().await;
    let cwd = daemon.cwd();
    let mut slowest = Duration::ZERO;
    for index in 0..40 {
        slowest = slowest.max(fire_shell(&client, &cwd, &format!("toolu_{index}")).await);
    }
    // Two tiny hooks answer in milliseconds; an export waits 3 s. No decision waited for one.
    assert!(
        slowest < Duration::from_secs(1),
        "slowest decision took {slowest:?}"
    );
    let status = client.status().await.expect("status");
    let telemetry = status.telemetry.expect("status shows the export");
    assert_eq!(telemetry.recorded, 40);
    assert!(telemetry.dropped > 0, "{telemetry:?}");
    assert!(telemetry.queued <= telemetry.capacity, "{telemetry:?}");
    assert!(
        !held.lock().expect("lock").is_empty(),
        "hookd did try the collector"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_graceful_stop_sends_what_is_still_batched() {
    let (address, received) = start_receiver().await;
    let endpoint = format!("http://{address}");
    let options = DaemonOptions {
        configure: Box::new(move |config| {
            config.telemetry.endpoint = Some(endpoint);
            // Nothing would go out before the stop on its own.
            config.telemetry.flush_interval = Duration::from_secs(600);
            config.telemetry.metric_interval = Duration::from_secs(600);
        }),
        ..DaemonOptions::default()
    };
    let daemon = Daemon::start_with(project(), options).await;
    let client = daemon.client().await;
    fire_shell(&client, &daemon.cwd(), "toolu_last").await;
    drop(client);
    daemon.stop().await;
    let received = received.lock().expect("lock");
    assert_eq!(received.spans.len(), 3, "the event and its two hooks");
    assert_eq!(received.logs.len(), 1);
    assert_eq!(sum_of(&received, "hookd.events", None), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opted_in_fields_are_exported_through_the_redact_filter() {
    let (address, received) = start_receiver().await;
    let endpoint = format!("http://{address}");
    let options = DaemonOptions {
        configure: Box::new(move |config| {
            config.telemetry.endpoint = Some(endpoint);
            config.telemetry.flush_interval = Duration::from_millis(50);
            config.telemetry.fields =
                hookd_server::ExportFields::parse("tool_input,command,output").expect("fields");
        }),
        ..DaemonOptions::default()
    };
    let token = format!("ghp_{}", "a1B2".repeat(10));
    let project = settings(&[(
        "BeforeTool",
        None,
        vec![command_hook(
            "echoes",
            &format!("echo 'seen {token}' >&2; exit 2"),
        )],
    )]);
    let daemon = Daemon::start_with(project, options).await;
    let client = daemon.client().await;
    let request = EventRequest::new("BeforeTool", daemon.cwd()).with_input(input(json!({
        "tool_name": "run_shell_command",
        "tool_input": {"command": format!("curl -H 'Authorization: {token}' example.test")},
    })));
    hookd_testkit::fire_request(&client, request).await;
    wait_for("the event's spans", &received, |r| r.spans.len() >= 2).await;
    let received = received.lock().expect("lock");
    let event = received
        .spans
        .iter()
        .find(|span| span.parent_span_id.is_empty())
        .expect("event span");
    let arguments = text(&event.attributes, "gen_ai.tool.call.arguments").expect("opted in");
    assert!(arguments.contains("example.test"), "{arguments}");
    let hook = received
        .spans
        .iter()
        .find(|span| !span.parent_span_id.is_empty())
        .expect("hook span");
    let command = text(&hook.attributes, "hookd.hook.command").expect("opted in");
    assert!(command.starts_with("echo 'seen "), "{command}");
    let output = text(&hook.attributes, "hookd.hook.output").expect("opted in");
    assert!(output.starts_with("seen "), "{output}");
    let everything = format!("{:?}{:?}", received.spans, received.logs);
    assert!(!everything.contains(&token), "a secret was exported");
}
