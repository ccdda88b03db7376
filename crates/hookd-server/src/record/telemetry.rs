//! OpenTelemetry export of every recorded run: a span per event with a child per hook,
//! metrics, and a log record per decision, sent over OTLP/HTTP (protobuf) to a collector
//! (docs/fleet.md).
//!
//! Off unless configured: export starts when the daemon's environment has
//! `OTEL_EXPORTER_OTLP_ENDPOINT` or a signal's own endpoint variable, or when hookd's own
//! setting (`hookd --otel-endpoint`) names a collector; `OTEL_SDK_DISABLED=true` wins over
//! both ([`resolve`]).
//!
//! Never in the way of a decision. The recorder hands each finished run to [`Telemetry::record`]
//! as a small owned [`Record`] through a bounded channel with `try_send`: a full channel drops
//! the record and counts it, so a collector that is down, slow or black-holed costs a decision
//! one failed `try_send` and the daemon at most the channel's capacity in memory. One thread
//! of its own takes the records every [`WAKE`] (never woken per record, so a send is a plain
//! store), turns them into spans, log records and metric points, and
//! exports spans and logs in batches (every [`TelemetrySettings::flush_interval`] or
//! [`MAX_BATCH`] records), each export bounded by the export timeout and never retried; the
//! SDK's periodic reader exports the metrics. While an export waits, records pile up in the
//! channel and, past its capacity, are dropped and counted: `status`, `stats` and `doctor`
//! show the drops and the last export error.
//!
//! Nothing sensitive by default: no payloads, commands or hook output. Each can be opted into
//! ([`ExportFields`]), and what is opted into passes hookd's `redact` filter (its default
//! patterns) and is cut to [`MAX_FIELD_CHARS`] first.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TryRecvError, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use hookd_core::aggregate::Aggregate;
use hookd_core::redact::Redactor;
use hookd_core::{HookEntry, HookResult};
use hookd_runner::fire::FireRequest;
use opentelemetry::logs::{AnyValue, LogRecord as _, Logger as _, LoggerProvider as _, Severity};
use opentelemetry::metrics::{Counter, Histogram, MeterProvider as _};
use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState,
};
use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::logs::{LogBatch, LogExporter as _, SdkLogRecord, SdkLoggerProvider};
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider, Temporality};
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanExporter as _, SpanLinks};
use serde_json::Value;

use crate::config::{ExportFields, TelemetrySettings};
use crate::otlphttp::OtlpHttp;
use crate::runstats::{final_decision, hook_decision};
use crate::story::RunContext;

/// How often the export thread takes what the queue holds (at most; sooner when the flush
/// interval is shorter): the queue's capacity over this is the sustained rate it takes
/// without drops (2048 per 100 ms by default).
const WAKE: Duration = Duration::from_millis(100);

/// The most records one span or log export carries.
pub(crate) const MAX_BATCH: usize = 512;

/// The longest opted-in text exported in one attribute, in characters.
pub(crate) const MAX_FIELD_CHARS: usize = 4096;

/// The endpoints export goes to, one per signal (`None`: that signal is not exported).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Endpoints {
    /// Where spans go (`.../v1/traces`).
    pub(crate) traces: Option<String>,
    /// Where metrics go (`.../v1/metrics`).
    pub(crate) metrics: Option<String>,
    /// Where log records go (`.../v1/logs`).
    pub(crate) logs: Option<String>,
}

impl Endpoints {
    /// The endpoints for `status`: one when they share a base, each otherwise.
    fn describe(&self) -> String {
        let all: Vec<&str> = [&self.traces, &self.metrics, &self.logs]
            .into_iter()
            .flatten()
            .map(String::as_str)
            .collect();
        all.join(", ")
    }
}

/// Where export goes, from the daemon's environment and hookd's own setting, as OpenTelemetry
/// SDKs read it: a signal's own variable (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, used as it
/// is), else the base (`OTEL_EXPORTER_OTLP_ENDPOINT`, else `setting`) with the signal's path
/// appended. `None` when `OTEL_SDK_DISABLED` is `true` or nothing names a collector.
pub(crate) fn resolve(env: &HashMap<String, String>, setting: Option<&str>) -> Option<Endpoints> {
    let var = |name: &str| {
        env.get(name)
            .map(|value| value.trim())
            .filter(|value| !value.is_empty())
    };
    if var("OTEL_SDK_DISABLED").is_some_and(|value| value.eq_ignore_ascii_case("true")) {
        return None;
    }
    let base = var("OTEL_EXPORTER_OTLP_ENDPOINT").or(setting.filter(|s| !s.is_empty()));
    let signal = |own: &str, path: &str| {
        var(own)
            .map(str::to_owned)
            .or_else(|| base.map(|base| format!("{}/{path}", base.trim_end_matches('/'))))
    };
    let endpoints = Endpoints {
        traces: signal("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "v1/traces"),
        metrics: signal("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "v1/metrics"),
        logs: signal("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "v1/logs"),
    };
    (endpoints != Endpoints::default()).then_some(endpoints)
}

/// One hook of a recorded run, as exported.
#[derive(Debug)]
struct HookRecord {
    name: String,
    layer: &'static str,
    outcome: &'static str,
    decision: String,
    exit_code: Option<i32>,
    duration: Duration,
    failure: Option<&'static str>,
    /// Opted in: the hook's command line.
    command: Option<String>,
    /// Opted in: the hook's stdout and stderr.
    output: Option<String>,
}

/// One recorded run (an event or a stream chunk), owned, as it crosses the channel.
#[derive(Debug)]
pub(crate) struct Record {
    end: SystemTime,
    duration: Duration,
    event: &'static str,
    host: Option<&'static str>,
    client: Arc<str>,
    tool: Option<String>,
    session_id: String,
    tool_call_id: Option<String>,
    project: String,
    decision: String,
    success: bool,
    background: Option<&'static str>,
    chunk: bool,
    hooks: Vec<HookRecord>,
    /// Opted in: the tool call's input.
    tool_input: Option<String>,
}

/// The counters `status`, `stats` and `doctor` show.
#[derive(Debug, Default)]
struct Counters {
    recorded: AtomicU64,
    dropped: AtomicU64,
    queued: AtomicU64,
    spans: AtomicU64,
    logs: AtomicU64,
    metric_exports: AtomicU64,
    failed: AtomicU64,
    last_error: Mutex<Option<String>>,
}

impl Counters {
    fn failed(&self, what: &str, error: impl std::fmt::Display) {
        self.failed.fetch_add(1, Ordering::Relaxed);
        let message = format!("{what}: {error}");
        // One line per failure would flood the log while a collector is down: debug only,
        // the counts and the last error are in `status` and `doctor`.
        tracing::debug!(target: "hookd::telemetry", %message, "export failed");
        *self
            .last_error
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(message);
    }
}

/// Why export could not start.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TelemetryError {
    /// An exporter could not be built from the configuration.
    #[error("cannot build the OTLP {signal} exporter: {reason}")]
    Exporter {
        /// traces, metrics or logs.
        signal: &'static str,
        /// Why.
        reason: String,
    },
    /// The export runtime or thread could not be started.
    #[error("cannot start the export thread: {0}")]
    Thread(std::io::Error),
}

/// The longest a graceful stop waits for the last batches to go out.
const CLOSE_BUDGET: Duration = Duration::from_secs(2);

/// The handle runs are recorded through; cheap to call, never blocking.
pub(crate) struct Telemetry {
    sender: SyncSender<Record>,
    /// Set by [`Telemetry::close`]: the worker sends what it holds and stops.
    closing: Arc<AtomicBool>,
    /// Answered by the worker once its last export is done.
    finished: Mutex<Option<Receiver<()>>>,
    flush_interval: Duration,
    counters: Arc<Counters>,
    endpoint: String,
    capacity: usize,
    fields: ExportFields,
    redactor: Option<Arc<Redactor>>,
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Telemetry")
            .field("endpoint", &self.endpoint)
            .field("capacity", &self.capacity)
            .finish_non_exhaustive()
    }
}

impl Telemetry {
    /// Starts export when `env` and `settings` ask for it; `Ok(None)` when they do not.
    /// `gauges` reads the daemon's own counters for their metrics.
    pub(crate) fn start(
        env: &HashMap<String, String>,
        settings: &TelemetrySettings,
        gauges: Gauges,
    ) -> Result<Option<Telemetry>, TelemetryError> {
        let Some(endpoints) = resolve(env, settings.endpoint.as_deref()) else {
            return Ok(None);
        };
        let timeout = env
            .get("OTEL_EXPORTER_OTLP_TIMEOUT")
            .and_then(|ms| ms.trim().parse::<u64>().ok())
            .map_or(settings.export_timeout, Duration::from_millis)
            .min(settings.export_timeout);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("hookd-otel-io")
            .enable_all()
            .build()
            .map_err(TelemetryError::Thread)?;
        let client = OtlpHttp {
            handle: runtime.handle().clone(),
            timeout,
        };
        let resource = resource(env);
        let headers = headers(env);
        let capacity = settings.queue.max(1);
        let counters = Arc::new(Counters::default());
        let (sender, receiver) = std::sync::mpsc::sync_channel(capacity);

        let spans = match &endpoints.traces {
            Some(url) => {
                let mut exporter = opentelemetry_otlp::SpanExporter::builder()
                    .with_http()
                    .with_http_client(client.clone())
                    .with_endpoint(url.clone())
                    .with_timeout(timeout)
                    .with_headers(headers.clone())
                    .with_retry_policy(opentelemetry_otlp::RetryPolicy::disabled())
                    .build()
                    .map_err(|err| TelemetryError::Exporter {
                        signal: "traces",
                        reason: err.to_string(),
                    })?;
                exporter.set_resource(&resource);
                Some(exporter)
            }
            None => None,
        };
        let logs = match &endpoints.logs {
            Some(url) => {
                let mut exporter = opentelemetry_otlp::LogExporter::builder()
                    .with_http()
                    .with_http_client(client.clone())
                    .with_endpoint(url.clone())
                    .with_timeout(timeout)
                    .with_headers(headers.clone())
                    .with_retry_policy(opentelemetry_otlp::RetryPolicy::disabled())
                    .build()
                    .map_err(|err| TelemetryError::Exporter {
                        signal: "logs",
                        reason: err.to_string(),
                    })?;
                exporter.set_resource(&resource);
                Some(exporter)
            }
            None => None,
        };
        let meters = match &endpoints.metrics {
            Some(url) => {
                let exporter = opentelemetry_otlp::MetricExporter::builder()
                    .with_http()
                    .with_http_client(client.clone())
                    .with_endpoint(url.clone())
                    .with_timeout(timeout)
                    .with_headers(headers.clone())
                    .with_retry_policy(opentelemetry_otlp::RetryPolicy::disabled())
                    .with_temporality(Temporality::Cumulative)
                    .build()
                    .map_err(|err| TelemetryError::Exporter {
                        signal: "metrics",
                        reason: err.to_string(),
                    })?;
                let reader = PeriodicReader::builder(CountingMetrics {
                    inner: exporter,
                    counters: Arc::clone(&counters),
                })
                .with_interval(settings.metric_interval)
                .build();
                Some(
                    SdkMeterProvider::builder()
                        .with_resource(resource.clone())
                        .with_reader(reader)
                        .build(),
                )
            }
            None => None,
        };
        let closing = Arc::new(AtomicBool::new(false));
        let (done, finished) = std::sync::mpsc::channel();
        let worker = Worker {
            receiver,
            ids: Ids::new(),
            closing: Arc::clone(&closing),
            done,
            runtime,
            spans,
            logs,
            log_buffer: Arc::new(Mutex::new(Vec::new())),
            meters,
            counters: Arc::clone(&counters),
            flush_interval: settings.flush_interval,
            timeout,
            gauges,
        };
        std::thread::Builder::new()
            .name("hookd-otel".into())
            .spawn(move || worker.run())
            .map_err(TelemetryError::Thread)?;
        let endpoint = endpoints.describe();
        tracing::info!(target: "hookd::telemetry", %endpoint, "exporting telemetry over OTLP/HTTP");
        let redactor = (settings.fields != ExportFields::default())
            .then(export_redactor)
            .flatten();
        Ok(Some(Telemetry {
            sender,
            closing,
            finished: Mutex::new(Some(finished)),
            flush_interval: settings.flush_interval,
            counters,
            endpoint,
            capacity,
            fields: settings.fields,
            redactor,
        }))
    }

    /// Hands one finished run to the export thread; never waits. A full queue drops it and
    /// counts the drop. (The run's parts as the recorder holds them, which imports this
    /// module, so it cannot hand over its own `FinishedRun`.)
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn record(
        &self,
        context: &RunContext<'_>,
        fire: &FireRequest,
        results: &[HookResult],
        aggregate: &Aggregate,
        hooks: &[Arc<HookEntry>],
        total: Duration,
        chunk: bool,
    ) {
        self.counters.recorded.fetch_add(1, Ordering::Relaxed);
        if self.counters.queued.load(Ordering::Relaxed) >= self.capacity as u64 {
            // Full: not even the record is built.
            self.counters.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let record = self.build(context, fire, results, aggregate, hooks, total, chunk);
        self.counters.queued.fetch_add(1, Ordering::Relaxed);
        match self.sender.try_send(record) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.counters.queued.fetch_sub(1, Ordering::Relaxed);
                self.counters.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn build(
        &self,
        context: &RunContext<'_>,
        fire: &FireRequest,
        results: &[HookResult],
        aggregate: &Aggregate,
        hooks: &[Arc<HookEntry>],
        total: Duration,
        chunk: bool,
    ) -> Record {
        let text = |value: Option<&Value>| value.and_then(Value::as_str).map(str::to_owned);
        let tool_call_id = text(fire.input.get("tool_use_id"))
            .or_else(|| text(fire.input.get("tool_call_id")))
            .or_else(|| text(fire.input.get("call_id")));
        let tool_input = self
            .fields
            .tool_input
            .then(|| fire.input.get("tool_input").map(Value::to_string))
            .flatten()
            .map(|input| self.scrub(&input));
        Record {
            end: SystemTime::now(),
            duration: total,
            event: fire.event.as_str(),
            host: context.relayed_by.map(|host| host.as_str()),
            client: Arc::clone(&context.client.name),
            tool: text(fire.input.get("tool_name")),
            session_id: fire.base.session_id.clone(),
            tool_call_id,
            project: fire.project_dir.clone(),
            decision: final_decision(aggregate).to_owned(),
            success: aggregate.success,
            background: context.background,
            chunk,
            hooks: results
                .iter()
                .map(|result| HookRecord {
                    name: result.name.clone(),
                    layer: result.source.label(),
                    outcome: result.outcome.kind(),
                    decision: hook_decision(result).to_owned(),
                    exit_code: result.exit_code,
                    duration: result.duration,
                    failure: result.failure.map(|failure| failure.as_str()),
                    command: self
                        .fields
                        .command
                        .then(|| {
                            hooks
                                .iter()
                                .find(|entry| entry.config.display_name() == result.name)
                                .and_then(|entry| entry.config.command.as_deref())
                                .map(|command| self.scrub(command))
                        })
                        .flatten(),
                    output: self
                        .fields
                        .output
                        .then(|| self.scrub(&format!("{}{}", result.stdout, result.stderr))),
                })
                .collect(),
            tool_input,
        }
    }

    /// Opted-in text as exported: cut to [`MAX_FIELD_CHARS`], then through the default
    /// `redact` patterns (the cut comes first so the filter's work is bounded too).
    fn scrub(&self, text: &str) -> String {
        scrub(self.redactor.as_deref(), text)
    }

    /// At a graceful stop: the worker sends what it holds (spans, log records, a last
    /// metrics collection) and stops. Waits at most [`CLOSE_BUDGET`] past the worker's next
    /// wake-up: a collector that does not answer loses the rest rather than hold the stop.
    pub(crate) async fn close(&self) {
        self.closing.store(true, Ordering::Relaxed);
        let finished = self
            .finished
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        let Some(finished) = finished else {
            return;
        };
        let bound = self.flush_interval.min(WAKE) + CLOSE_BUDGET;
        let waited =
            tokio::task::spawn_blocking(move || finished.recv_timeout(bound).is_ok()).await;
        if !matches!(waited, Ok(true)) {
            tracing::warn!(
                target: "hookd::telemetry",
                "the last telemetry was not sent within {bound:?}; it is lost"
            );
        }
    }

    /// The export's state for `status`, `stats` and `doctor`.
    pub(crate) fn status(&self) -> hookd_protocol::TelemetryStatus {
        let counters = &self.counters;
        hookd_protocol::TelemetryStatus {
            endpoint: self.endpoint.clone(),
            protocol: "http/protobuf".to_owned(),
            queued: counters.queued.load(Ordering::Relaxed),
            capacity: self.capacity as u64,
            recorded: counters.recorded.load(Ordering::Relaxed),
            dropped: counters.dropped.load(Ordering::Relaxed),
            spans_exported: counters.spans.load(Ordering::Relaxed),
            logs_exported: counters.logs.load(Ordering::Relaxed),
            metric_exports: counters.metric_exports.load(Ordering::Relaxed),
            failed_exports: counters.failed.load(Ordering::Relaxed),
            last_error: counters
                .last_error
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone(),
        }
    }
}

/// The `redact` filter with its default patterns, which opted-in text passes before export.
fn export_redactor() -> Option<Arc<Redactor>> {
    Redactor::compile(&hookd_core::redact::RedactConfig::default())
        .map(Arc::new)
        .ok()
}

/// Opted-in text as exported: cut to [`MAX_FIELD_CHARS`], then through `redactor`; with no
/// filter, nothing of the text rather than the text unfiltered.
fn scrub(redactor: Option<&Redactor>, text: &str) -> String {
    let cut: String = text.chars().take(MAX_FIELD_CHARS).collect();
    match redactor {
        Some(redactor) => redactor.redact_all(&cut).into_owned(),
        None => String::from("[not exported: the redact filter is unavailable]"),
    }
}

/// The resource every signal carries: `service.name` (`OTEL_SERVICE_NAME`, else `hookd`),
/// `service.version`, `host.name`, and `OTEL_RESOURCE_ATTRIBUTES`.
fn resource(env: &HashMap<String, String>) -> Resource {
    let mut attributes = vec![KeyValue::new("service.version", env!("CARGO_PKG_VERSION"))];
    // The kernel's hostname (a few bytes, read once at start).
    if let Ok(host) = std::fs::read_to_string("/proc/sys/kernel/hostname") {
        let host = host.trim();
        if !host.is_empty() && host.len() <= 255 {
            attributes.push(KeyValue::new("host.name", host.to_owned()));
        }
    }
    for pair in env
        .get("OTEL_RESOURCE_ATTRIBUTES")
        .map(String::as_str)
        .unwrap_or("")
        .split(',')
    {
        if let Some((key, value)) = pair.split_once('=') {
            let key = key.trim();
            if !key.is_empty() {
                attributes.push(KeyValue::new(key.to_owned(), value.trim().to_owned()));
            }
        }
    }
    let name = env
        .get("OTEL_SERVICE_NAME")
        .map(|name| name.trim())
        .filter(|name| !name.is_empty())
        .unwrap_or("hookd")
        .to_owned();
    Resource::builder_empty()
        .with_attributes(attributes)
        .with_service_name(name)
        .build()
}

/// `OTEL_EXPORTER_OTLP_HEADERS` (`key=value,...`), for collectors that want a token.
fn headers(env: &HashMap<String, String>) -> HashMap<String, String> {
    env.get("OTEL_EXPORTER_OTLP_HEADERS")
        .map(String::as_str)
        .unwrap_or("")
        .split(',')
        .filter_map(|pair| {
            let (key, value) = pair.split_once('=')?;
            Some((key.trim().to_owned(), value.trim().to_owned()))
        })
        .filter(|(key, _)| !key.is_empty())
        .collect()
}

/// The metric exporter, counting its exports.
#[derive(Debug)]
struct CountingMetrics {
    inner: opentelemetry_otlp::MetricExporter,
    counters: Arc<Counters>,
}

impl PushMetricExporter for CountingMetrics {
    async fn export(
        &self,
        metrics: &opentelemetry_sdk::metrics::data::ResourceMetrics,
    ) -> OTelSdkResult {
        let result = self.inner.export(metrics).await;
        match &result {
            Ok(()) => {
                self.counters.metric_exports.fetch_add(1, Ordering::Relaxed);
            }
            Err(err) => self.counters.failed("metrics", err),
        }
        result
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn temporality(&self) -> Temporality {
        self.inner.temporality()
    }
}

/// Keeps the log records the SDK's logger emits until the worker exports them.
#[derive(Debug)]
struct LogBuffer(Arc<Mutex<Vec<(SdkLogRecord, InstrumentationScope)>>>);

impl opentelemetry_sdk::logs::LogProcessor for LogBuffer {
    fn emit(&self, data: &mut SdkLogRecord, instrumentation: &InstrumentationScope) {
        let mut buffer = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Bounded like the spans: the worker exports at MAX_BATCH.
        if buffer.len() < MAX_BATCH * 2 {
            buffer.push((data.clone(), instrumentation.clone()));
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }
}

/// The metric instruments.
struct Instruments {
    events: Counter<u64>,
    decisions: Counter<u64>,
    hook_runs: Counter<u64>,
    hook_duration: Histogram<f64>,
    event_duration: Histogram<f64>,
    chunks: Counter<u64>,
    _breaker: opentelemetry::metrics::ObservableCounter<u64>,
    _filtered: opentelemetry::metrics::ObservableCounter<u64>,
    _dropped: opentelemetry::metrics::ObservableCounter<u64>,
}

/// The export thread's state.
struct Worker {
    receiver: Receiver<Record>,
    ids: Ids,
    closing: Arc<AtomicBool>,
    done: std::sync::mpsc::Sender<()>,
    runtime: tokio::runtime::Runtime,
    spans: Option<opentelemetry_otlp::SpanExporter>,
    logs: Option<opentelemetry_otlp::LogExporter>,
    log_buffer: Arc<Mutex<Vec<(SdkLogRecord, InstrumentationScope)>>>,
    meters: Option<SdkMeterProvider>,
    counters: Arc<Counters>,
    flush_interval: Duration,
    timeout: Duration,
    gauges: Gauges,
}

/// Counters the daemon keeps elsewhere, read by the metric reader when it collects.
pub(crate) struct Gauges {
    /// Times the circuit breaker paused a hook (`hookd.breaker.pauses`).
    pub(crate) breaker_pauses: Arc<dyn Fn() -> u64 + Send + Sync>,
    /// Chunks of filter-only streams filtered (`hookd.stream.chunks_filtered`).
    pub(crate) chunks_filtered: Arc<dyn Fn() -> u64 + Send + Sync>,
}

impl Worker {
    fn run(self) {
        let scope = InstrumentationScope::builder("hookd")
            .with_version(env!("CARGO_PKG_VERSION"))
            .build();
        let logger_provider = self.logs.as_ref().map(|_| {
            SdkLoggerProvider::builder()
                .with_log_processor(LogBuffer(Arc::clone(&self.log_buffer)))
                .build()
        });
        let logger = logger_provider
            .as_ref()
            .map(|provider| provider.logger_with_scope(scope.clone()));
        let instruments = self.meters.as_ref().map(|provider| {
            let meter = provider.meter_with_scope(scope.clone());
            let pauses = Arc::clone(&self.gauges.breaker_pauses);
            let filtered = Arc::clone(&self.gauges.chunks_filtered);
            let counters = Arc::clone(&self.counters);
            Instruments {
                events: meter
                    .u64_counter("hookd.events")
                    .with_description("Events that ran hooks")
                    .build(),
                decisions: meter
                    .u64_counter("hookd.decisions")
                    .with_description("Final decisions of events, by kind")
                    .build(),
                hook_runs: meter
                    .u64_counter("hookd.hook.runs")
                    .with_description("Hook runs, by hook, layer and outcome")
                    .build(),
                hook_duration: meter
                    .f64_histogram("hookd.hook.duration")
                    .with_unit("ms")
                    .with_description("How long each hook ran")
                    .build(),
                event_duration: meter
                    .f64_histogram("hookd.event.duration")
                    .with_unit("ms")
                    .with_description("How long each event's hooks took, as the client waited")
                    .build(),
                chunks: meter
                    .u64_counter("hookd.stream.chunks")
                    .with_description("AfterModel stream chunks that ran command hooks")
                    .build(),
                _breaker: meter
                    .u64_observable_counter("hookd.breaker.pauses")
                    .with_description("Times the circuit breaker paused a hook")
                    .with_callback(move |observer| observer.observe(pauses(), &[]))
                    .build(),
                _filtered: meter
                    .u64_observable_counter("hookd.stream.chunks_filtered")
                    .with_description(
                        "Chunks of AfterModel streams whose only hooks are filters, filtered",
                    )
                    .with_callback(move |observer| observer.observe(filtered(), &[]))
                    .build(),
                _dropped: meter
                    .u64_observable_counter("hookd.telemetry.dropped")
                    .with_description("Records dropped because the export queue was full")
                    .with_callback(move |observer| {
                        observer.observe(counters.dropped.load(Ordering::Relaxed), &[])
                    })
                    .build(),
            }
        });
        let mut spans: Vec<SpanData> = Vec::new();
        let mut last_flush = Instant::now();
        // Records taken since the last flush: each gives one log record and at least one span.
        let mut taken = 0usize;
        loop {
            // Drained on a timer rather than woken per record: a send into a channel nobody
            // waits on is a plain store, so the decision path never pays for waking this
            // thread, and the work of many records is done in one burst.
            let mut stop = self.closing.load(Ordering::Relaxed);
            loop {
                match self.receiver.try_recv() {
                    Ok(record) => {
                        self.counters.queued.fetch_sub(1, Ordering::Relaxed);
                        self.take(&record, &instruments, &logger, &scope, &mut spans);
                        taken += 1;
                    }
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => {
                        stop = true;
                        break;
                    }
                }
                if taken >= MAX_BATCH || spans.len() >= MAX_BATCH {
                    self.flush(&mut spans);
                    last_flush = Instant::now();
                    taken = 0;
                }
            }
            if stop || last_flush.elapsed() >= self.flush_interval {
                self.flush(&mut spans);
                last_flush = Instant::now();
                taken = 0;
            }
            if stop {
                break;
            }
            std::thread::sleep(self.flush_interval.min(WAKE));
        }
        if let Some(provider) = &self.meters {
            // A last collection, so that counts since the previous one are not lost.
            let _ = provider.force_flush();
            let _ = provider.shutdown_with_timeout(self.timeout);
        }
        let _ = self.done.send(());
    }

    /// Turns one record into its metric points, spans and log record.
    fn take(
        &self,
        record: &Record,
        instruments: &Option<Instruments>,
        logger: &Option<opentelemetry_sdk::logs::SdkLogger>,
        scope: &InstrumentationScope,
        spans: &mut Vec<SpanData>,
    ) {
        if let Some(instruments) = instruments {
            measure(instruments, record);
        }
        let (trace_id, span_id) = (self.ids.trace(), self.ids.span());
        if self.spans.is_some() {
            spans.extend(span_data(record, scope, (trace_id, span_id), &self.ids));
        }
        if let Some(logger) = logger {
            emit_log(logger, record, trace_id, span_id);
        }
    }

    /// Exports what is batched, each signal within the export timeout.
    fn flush(&self, spans: &mut Vec<SpanData>) {
        if let Some(exporter) = &self.spans {
            if !spans.is_empty() {
                let batch = std::mem::take(spans);
                let count = batch.len() as u64;
                match self.bounded(exporter.export(batch)) {
                    Ok(()) => {
                        self.counters.spans.fetch_add(count, Ordering::Relaxed);
                    }
                    Err(err) => self.counters.failed("traces", err),
                }
            }
        }
        if let Some(exporter) = &self.logs {
            let records = std::mem::take(
                &mut *self
                    .log_buffer
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner),
            );
            if !records.is_empty() {
                let refs: Vec<(&SdkLogRecord, &InstrumentationScope)> = records
                    .iter()
                    .map(|(record, scope)| (record, scope))
                    .collect();
                match self.bounded(exporter.export(LogBatch::new(&refs))) {
                    Ok(()) => {
                        self.counters
                            .logs
                            .fetch_add(records.len() as u64, Ordering::Relaxed);
                    }
                    Err(err) => self.counters.failed("logs", err),
                }
            }
        }
    }

    /// Runs one export on the I/O runtime, giving up past the export timeout.
    fn bounded(
        &self,
        export: impl std::future::Future<Output = OTelSdkResult>,
    ) -> Result<(), String> {
        let limit = self.timeout + Duration::from_millis(500);
        // The timer is made inside the runtime, which owns the clock it needs.
        match self
            .runtime
            .block_on(async { tokio::time::timeout(limit, export).await })
        {
            Ok(Ok(())) => Ok(()),
            Ok(Err(err)) => Err(err.to_string()),
            Err(_) => Err(format!("no answer within {limit:?}")),
        }
    }
}

/// Updates the metrics for one record.
fn measure(instruments: &Instruments, record: &Record) {
    let event = KeyValue::new("hookd.event.name", record.event);
    if record.chunk {
        instruments.chunks.add(1, std::slice::from_ref(&event));
    } else {
        instruments.events.add(1, std::slice::from_ref(&event));
        instruments.event_duration.record(
            record.duration.as_secs_f64() * 1000.0,
            std::slice::from_ref(&event),
        );
    }
    instruments.decisions.add(
        1,
        &[
            event.clone(),
            KeyValue::new("hookd.decision", record.decision.clone()),
        ],
    );
    for hook in &record.hooks {
        let attributes = [
            event.clone(),
            KeyValue::new("hookd.hook.name", hook.name.clone()),
            KeyValue::new("hookd.hook.layer", hook.layer),
            KeyValue::new("hookd.hook.outcome", hook.outcome),
        ];
        instruments.hook_runs.add(1, &attributes);
        instruments
            .hook_duration
            .record(hook.duration.as_secs_f64() * 1000.0, &attributes);
    }
}

/// The attributes an event's span and log record share: semantic-convention names where
/// they exist (`gen_ai.tool.name`, `gen_ai.tool.call.id`, `session.id`,
/// `gen_ai.conversation.id`), `hookd.*` otherwise; ids exactly as the host sent them.
fn event_attributes(record: &Record) -> Vec<KeyValue> {
    let mut attributes = vec![
        KeyValue::new("hookd.event.name", record.event),
        KeyValue::new("hookd.client", record.client.to_string()),
        KeyValue::new("hookd.project", record.project.clone()),
        KeyValue::new("hookd.decision", record.decision.clone()),
        KeyValue::new("hookd.success", record.success),
        KeyValue::new("hookd.hooks", record.hooks.len() as i64),
        KeyValue::new("hookd.duration_ms", record.duration.as_secs_f64() * 1000.0),
    ];
    if let Some(host) = record.host {
        attributes.push(KeyValue::new("hookd.host", host));
    }
    if !record.session_id.is_empty() {
        attributes.push(KeyValue::new("session.id", record.session_id.clone()));
        attributes.push(KeyValue::new(
            "gen_ai.conversation.id",
            record.session_id.clone(),
        ));
    }
    if let Some(tool) = &record.tool {
        attributes.push(KeyValue::new("gen_ai.tool.name", tool.clone()));
    }
    if let Some(id) = &record.tool_call_id {
        attributes.push(KeyValue::new("gen_ai.tool.call.id", id.clone()));
    }
    if let Some(background) = record.background {
        attributes.push(KeyValue::new("hookd.background", background));
    }
    if record.chunk {
        attributes.push(KeyValue::new("hookd.stream.chunk", true));
    }
    if let Some(input) = &record.tool_input {
        attributes.push(KeyValue::new("gen_ai.tool.call.arguments", input.clone()));
    }
    attributes
}

/// The event's span and one child span per hook. Hooks report durations, not start times:
/// each child starts with the event and lasts its hook's duration (within the event's).
fn span_data(
    record: &Record,
    scope: &InstrumentationScope,
    (trace_id, span_id): (TraceId, SpanId),
    ids: &Ids,
) -> Vec<SpanData> {
    let start = record
        .end
        .checked_sub(record.duration)
        .unwrap_or(record.end);
    let context =
        |id: SpanId| SpanContext::new(trace_id, id, TraceFlags::SAMPLED, false, TraceState::NONE);
    let failed = !record.success;
    let mut spans = Vec::with_capacity(record.hooks.len() + 1);
    spans.push(SpanData {
        span_context: context(span_id),
        parent_span_id: SpanId::INVALID,
        parent_span_is_remote: false,
        span_kind: SpanKind::Internal,
        name: Cow::Owned(format!("hookd {}", record.event)),
        start_time: start,
        end_time: record.end,
        attributes: event_attributes(record),
        dropped_attributes_count: 0,
        events: SpanEvents::default(),
        links: SpanLinks::default(),
        status: if failed {
            Status::error("a hook failed")
        } else {
            Status::Unset
        },
        instrumentation_scope: scope.clone(),
    });
    for hook in &record.hooks {
        let mut attributes = vec![
            KeyValue::new("hookd.hook.name", hook.name.clone()),
            KeyValue::new("hookd.hook.layer", hook.layer),
            KeyValue::new("hookd.hook.outcome", hook.outcome),
            KeyValue::new("hookd.hook.decision", hook.decision.clone()),
            KeyValue::new("hookd.event.name", record.event),
        ];
        if let Some(code) = hook.exit_code {
            attributes.push(KeyValue::new("process.exit.code", i64::from(code)));
        }
        if let Some(failure) = hook.failure {
            attributes.push(KeyValue::new("error.type", failure));
        }
        if let Some(command) = &hook.command {
            attributes.push(KeyValue::new("hookd.hook.command", command.clone()));
        }
        if let Some(output) = &hook.output {
            attributes.push(KeyValue::new("hookd.hook.output", output.clone()));
        }
        let end = (start + hook.duration).min(record.end);
        spans.push(SpanData {
            span_context: context(ids.span()),
            parent_span_id: span_id,
            parent_span_is_remote: false,
            span_kind: SpanKind::Internal,
            name: Cow::Owned(format!("hook {}", hook.name)),
            start_time: start,
            end_time: end,
            attributes,
            dropped_attributes_count: 0,
            events: SpanEvents::default(),
            links: SpanLinks::default(),
            status: match hook.failure {
                Some(failure) => Status::error(failure),
                None => Status::Unset,
            },
            instrumentation_scope: scope.clone(),
        });
    }
    spans
}

/// The decision's log record, in the event span's trace.
fn emit_log(
    logger: &opentelemetry_sdk::logs::SdkLogger,
    record: &Record,
    trace_id: TraceId,
    span_id: SpanId,
) {
    let mut log = logger.create_log_record();
    log.set_timestamp(record.end);
    log.set_observed_timestamp(record.end);
    let (severity, text) = match record.decision.as_str() {
        "deny" | "block" | "stop" => (Severity::Warn, "WARN"),
        _ if !record.success => (Severity::Warn, "WARN"),
        _ => (Severity::Info, "INFO"),
    };
    log.set_severity_number(severity);
    log.set_severity_text(text);
    log.set_event_name("hookd.decision");
    log.set_body(AnyValue::from(format!(
        "{} {}: {}",
        record.event,
        record.tool.as_deref().unwrap_or("-"),
        record.decision
    )));
    log.set_trace_context(trace_id, span_id, Some(TraceFlags::SAMPLED));
    for attribute in event_attributes(record) {
        log.add_attribute(attribute.key, any_value(attribute.value));
    }
    logger.emit(log);
}

/// An attribute's value as a log record's.
fn any_value(value: opentelemetry::Value) -> AnyValue {
    match value {
        opentelemetry::Value::Bool(flag) => AnyValue::Boolean(flag),
        opentelemetry::Value::I64(number) => AnyValue::Int(number),
        opentelemetry::Value::F64(number) => AnyValue::Double(number),
        opentelemetry::Value::String(text) => AnyValue::String(text),
        other => AnyValue::from(other.to_string()),
    }
}

/// Span and trace ids: SplitMix64 over a seed from the OS, one generator for the export
/// thread. Ids must be unique, not secret; drawing them from the OS would cost a system call
/// per span.
struct Ids(std::cell::Cell<u64>);

impl Ids {
    fn new() -> Ids {
        let mut seed = [0u8; 8];
        // Without the OS's bytes, the clock still tells two daemons apart.
        if getrandom::fill(&mut seed).is_err() {
            let nanos = SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |since| since.as_nanos() as u64);
            seed = (nanos ^ u64::from(std::process::id())).to_le_bytes();
        }
        Ids(std::cell::Cell::new(u64::from_le_bytes(seed)))
    }

    fn next(&self) -> u64 {
        let state = self.0.get().wrapping_add(0x9E37_79B9_7F4A_7C15);
        self.0.set(state);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        // Zero is the invalid id; skip it.
        (z ^ (z >> 31)).max(1)
    }

    fn trace(&self) -> TraceId {
        let high = u128::from(self.next());
        TraceId::from_bytes(((high << 64) | u128::from(self.next())).to_be_bytes())
    }

    fn span(&self) -> SpanId {
        SpanId::from_bytes(self.next().to_be_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn export_starts_as_the_sdks_read_the_environment() {
        let url = |s: &str| Some(s.to_owned());
        /// (variables, hookd's setting, expected endpoints)
        type Case<'a> = (Vec<(&'a str, &'a str)>, Option<&'a str>, Option<Endpoints>);
        let cases: Vec<Case<'_>> = vec![
            (vec![], None, None),
            (vec![("OTEL_EXPORTER_OTLP_ENDPOINT", "  ")], None, None),
            (
                vec![("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/")],
                None,
                Some(Endpoints {
                    traces: url("http://c:4318/v1/traces"),
                    metrics: url("http://c:4318/v1/metrics"),
                    logs: url("http://c:4318/v1/logs"),
                }),
            ),
            (
                vec![("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t:1/x")],
                None,
                Some(Endpoints {
                    traces: url("http://t:1/x"),
                    ..Endpoints::default()
                }),
            ),
            (
                vec![
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
                    ("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "http://l:2/logs"),
                ],
                Some("http://setting:1"),
                Some(Endpoints {
                    traces: url("http://c:4318/v1/traces"),
                    metrics: url("http://c:4318/v1/metrics"),
                    logs: url("http://l:2/logs"),
                }),
            ),
            (
                vec![],
                Some("http://setting:1"),
                Some(Endpoints {
                    traces: url("http://setting:1/v1/traces"),
                    metrics: url("http://setting:1/v1/metrics"),
                    logs: url("http://setting:1/v1/logs"),
                }),
            ),
            (
                vec![
                    ("OTEL_SDK_DISABLED", "TRUE"),
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
                ],
                Some("http://setting:1"),
                None,
            ),
            (
                vec![
                    ("OTEL_SDK_DISABLED", "false"),
                    ("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://m:3/m"),
                ],
                None,
                Some(Endpoints {
                    metrics: url("http://m:3/m"),
                    ..Endpoints::default()
                }),
            ),
        ];
        for (vars, setting, expected) in cases {
            let env: HashMap<String, String> = vars
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect();
            assert_eq!(resolve(&env, setting), expected, "{vars:?} {setting:?}");
        }
    }

    #[test]
    fn ids_are_valid_and_do_not_repeat() {
        let ids = Ids::new();
        let mut seen = std::collections::HashSet::new();
        for _ in 0..10_000 {
            let span = ids.span();
            assert_ne!(span, SpanId::INVALID);
            assert!(seen.insert(span));
            assert_ne!(ids.trace(), TraceId::INVALID);
        }
    }

    #[test]
    fn opted_in_text_is_cut_and_redacted() {
        let redactor = export_redactor().expect("the default filter compiles");
        let token = format!("ghp_{}", "a1B2".repeat(10));
        type Check = Box<dyn Fn(&str) -> bool>;
        let cases: Vec<(String, Check)> = vec![
            (
                format!("{{\"command\":\"curl -H 'token: {token}'\"}}"),
                Box::new(|out: &str| out.starts_with("{\"command\":\"curl -H 'token: ")),
            ),
            ("ls -la".to_owned(), Box::new(|out: &str| out == "ls -la")),
            (
                "x".repeat(MAX_FIELD_CHARS * 2),
                Box::new(|out: &str| out.len() == MAX_FIELD_CHARS),
            ),
        ];
        for (text, expected) in cases {
            let out = scrub(Some(&redactor), &text);
            assert!(!out.contains(&token), "{out}");
            assert!(expected(&out), "{out}");
        }
        assert!(!scrub(None, &token).contains(&token));
    }

    #[test]
    fn headers_and_resource_attributes_parse_like_the_sdks() {
        let env: HashMap<String, String> = [
            ("OTEL_EXPORTER_OTLP_HEADERS", "a=1, b = two ,=x,c"),
            ("OTEL_SERVICE_NAME", "hookd-ci"),
            (
                "OTEL_RESOURCE_ATTRIBUTES",
                "deployment.environment=prod,team=sec",
            ),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
        let headers = headers(&env);
        assert_eq!(headers.len(), 2);
        assert_eq!(headers["a"], "1");
        assert_eq!(headers["b"], "two");
        let resource = resource(&env);
        let get = |key: &'static str| {
            resource
                .get(&opentelemetry::Key::from_static_str(key))
                .map(|value| value.to_string())
        };
        assert_eq!(get("service.name").as_deref(), Some("hookd-ci"));
        assert_eq!(get("deployment.environment").as_deref(), Some("prod"));
        assert_eq!(get("team").as_deref(), Some("sec"));
    }
}
