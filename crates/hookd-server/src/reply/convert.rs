//! Conversions from the engine's domain types to wire types.
//!
//! The protocol crate knows nothing of the engine, and the engine nothing of the wire; this
//! module is the one place that knows both.

use std::time::Duration;

use hookd_core::aggregate::Aggregate;
use hookd_core::settings::{Diagnostic, Severity};
use hookd_core::{HookOutcome, HookResult};
use hookd_protocol as wire;
use hookd_protocol::{RequestId, ServerMessage};

use crate::lastrun::LastRuns;
use crate::manage::Outcome as EditOutcome;
use crate::registries::{Change, Snapshot};

/// Milliseconds as a float, the wire's unit for durations.
fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// The wire record of one hook's result.
pub(crate) fn hook_record(result: &HookResult) -> wire::HookRecord {
    wire::HookRecord {
        name: result.name.clone(),
        source: result.source.label().to_owned(),
        event: result.event.as_str().to_owned(),
        success: result.success,
        exit_code: result.exit_code,
        duration_ms: millis(result.duration),
        output: result.output.clone(),
        output_format: result.output_format.map(|format| match format {
            hookd_core::OutputFormat::Json => wire::OutputFormat::Json,
            hookd_core::OutputFormat::Text => wire::OutputFormat::Text,
        }),
        stdout: result.stdout.clone(),
        stderr: result.stderr.clone(),
        error: result.error.clone(),
        outcome: outcome(&result.outcome),
        failure: result.failure.map(|kind| kind.as_str().to_owned()),
        warning: result.warning.clone(),
    }
}

/// The wire form of a typed outcome.
pub(crate) fn outcome(outcome: &HookOutcome) -> wire::Outcome {
    match outcome {
        HookOutcome::Exited { code } => wire::Outcome::Exited { code: *code },
        HookOutcome::Signalled { signal } => wire::Outcome::Signalled { signal: *signal },
        HookOutcome::TimedOut { timeout_ms } => wire::Outcome::TimedOut {
            timeout_ms: *timeout_ms,
        },
        HookOutcome::OutputTooLarge {
            stream,
            cap_bytes,
            code,
        } => wire::Outcome::OutputTooLarge {
            stream: match stream {
                hookd_core::StreamName::Stdout => wire::StreamName::Stdout,
                hookd_core::StreamName::Stderr => wire::StreamName::Stderr,
            },
            cap_bytes: *cap_bytes as u64,
            code: *code,
        },
        HookOutcome::SpawnFailed { message, .. } => wire::Outcome::SpawnFailed {
            message: message.clone(),
        },
        HookOutcome::Cancelled => wire::Outcome::Cancelled,
        HookOutcome::Refused { message } => wire::Outcome::Refused {
            message: message.clone(),
        },
    }
}

/// The `result` frame of an event that ran hooks.
pub(crate) fn result(
    id: RequestId,
    aggregate: &Aggregate,
    results: &[HookResult],
    generation: u64,
) -> ServerMessage {
    ServerMessage::Result(wire::ResultMessage {
        id,
        result: event_result(aggregate, results),
        generation,
    })
}

/// The wire form of an aggregate with the records it was made from.
pub(crate) fn event_result(aggregate: &Aggregate, results: &[HookResult]) -> wire::EventResult {
    wire::EventResult {
        success: aggregate.success,
        final_output: aggregate.final_output.clone(),
        all_outputs: aggregate.all_outputs.clone(),
        errors: aggregate.errors.clone(),
        total_duration_ms: millis(aggregate.total_duration),
        hooks: results.iter().map(hook_record).collect(),
    }
}

/// The events with at least one enabled hook in `snapshot`, in the protocol's event order.
pub(crate) fn hooked_event_names(snapshot: &Snapshot) -> Vec<String> {
    hookd_core::HookEventName::all()
        .filter(|event| {
            snapshot
                .registry
                .entries()
                .any(|entry| entry.enabled && entry.event == *event)
        })
        .map(|event| event.as_str().to_owned())
        .collect()
}

/// The `hooked_events` answer for the project of `snapshot`.
pub(crate) fn hooked_events(id: RequestId, cwd: String, snapshot: &Snapshot) -> ServerMessage {
    ServerMessage::HookedEvents(wire::HookedEventsMessage {
        id,
        cwd,
        events: hooked_event_names(snapshot),
        generation: snapshot.generation,
    })
}

/// The `result` frame of an event no hook matched (spec §3: success, nothing else).
pub(crate) fn empty_result(id: RequestId, generation: u64) -> ServerMessage {
    ServerMessage::Result(wire::ResultMessage {
        id,
        result: wire::EventResult {
            success: true,
            final_output: None,
            all_outputs: Vec::new(),
            errors: Vec::new(),
            total_duration_ms: 0.0,
            hooks: Vec::new(),
        },
        generation,
    })
}

/// The wire form of a settings diagnostic.
pub(crate) fn diagnostic(diagnostic: &Diagnostic) -> wire::Diagnostic {
    wire::Diagnostic {
        severity: match diagnostic.severity {
            Severity::Error => wire::Severity::Error,
            Severity::Warning => wire::Severity::Warning,
            Severity::Info => wire::Severity::Info,
        },
        path: diagnostic
            .path
            .as_ref()
            .map(|path| path.display().to_string()),
        key: diagnostic.key.clone(),
        line: diagnostic.line.and_then(|n| u32::try_from(n).ok()),
        column: diagnostic.column.and_then(|n| u32::try_from(n).ok()),
        message: diagnostic.message.clone(),
    }
}

/// The `list` response: every registry entry, disabled ones included, in registry order,
/// with each hook's latest run.
pub(crate) fn list(
    id: RequestId,
    cwd: String,
    snapshot: &Snapshot,
    last_runs: &LastRuns,
    breakers: &hookd_runner::breakers::Breakers,
) -> wire::ListResponse {
    let registry = &snapshot.registry;
    let paused = breakers.paused();
    wire::ListResponse {
        id,
        cwd,
        hooks_enabled: registry.hooks_enabled(),
        generation: snapshot.generation,
        hooks: registry
            .entries()
            .map(|entry| wire::ListedHook {
                event: entry.event.as_str().to_owned(),
                name: entry.config.panel_name().to_owned(),
                enabled: entry.enabled,
                source: entry.source.label().to_owned(),
                path: entry
                    .origin
                    .path
                    .as_ref()
                    .map(|path| path.display().to_string()),
                extension: entry.origin.extension.clone(),
                matcher: entry.matcher.clone(),
                sequential: entry.sequential,
                timeout_ms: entry.config.timeout_ms(),
                description: entry.config.description.clone(),
                command: entry.config.command.clone(),
                hook_type: entry.config.hook_type.as_str().to_owned(),
                last_run: last_runs.get(entry),
                untrusted: entry.trust.is_untrusted(),
                is_async: entry.config.is_async(),
                paused: paused
                    .iter()
                    .find(|hook| hook.identity == entry.identity())
                    .map(paused_hook),
                outranked_by: registry
                    .outranked_by(entry)
                    .map(|path| path.display().to_string()),
            })
            .collect(),
        diagnostics: snapshot.diagnostics().map(diagnostic).collect(),
    }
}

/// One registry's line in `status` and `reloaded`.
pub(crate) fn registry_status(snapshot: &Snapshot) -> wire::RegistryStatus {
    wire::RegistryStatus {
        cwd: snapshot.project_dir.display().to_string(),
        generation: snapshot.generation,
        hooks: snapshot.registry.entries().len() as u64,
        diagnostics: snapshot.diagnostics().map(diagnostic).collect(),
    }
}

/// The `registry_changed` frame announcing `change` to the subscription `id`.
pub(crate) fn registry_changed(id: RequestId, change: &Change, missed: u64) -> ServerMessage {
    let snapshot = &change.snapshot;
    ServerMessage::RegistryChanged(wire::RegistryChangedMessage {
        id,
        cwd: snapshot.project_dir.display().to_string(),
        generation: snapshot.generation,
        hooks_enabled: snapshot.registry.hooks_enabled(),
        hooks: snapshot.registry.entries().len() as u64,
        layers: change.layers.clone(),
        files: change
            .files
            .iter()
            .map(|path| path.display().to_string())
            .collect(),
        diagnostics: snapshot.diagnostics().map(diagnostic).collect(),
        missed,
    })
}

/// The `edited` answer of a management request.
pub(crate) fn edited(id: RequestId, outcome: EditOutcome) -> ServerMessage {
    ServerMessage::Edited(wire::EditedMessage {
        id,
        changed: outcome.changed,
        message: outcome.message,
        files: outcome
            .files
            .iter()
            .map(|path| path.display().to_string())
            .collect(),
        generation: outcome.generation,
    })
}

/// A paused hook on the wire.
pub(crate) fn paused_hook(hook: &hookd_runner::breakers::PausedHook) -> wire::PausedHook {
    wire::PausedHook {
        event: hook.event.clone(),
        name: hook.name.clone(),
        failures: hook.failures,
        retry_in_ms: hook.retry_in.as_millis() as u64,
    }
}

/// The circuit breaker's settings and paused hooks, for `status` and `stats`.
pub(crate) fn breaker_status(breakers: &hookd_runner::breakers::Breakers) -> wire::BreakerStatus {
    let settings = breakers.settings();
    wire::BreakerStatus {
        threshold: settings.threshold,
        backoff_ms: settings.backoff.as_millis() as u64,
        max_backoff_ms: settings.max_backoff.as_millis() as u64,
        pauses: breakers.pauses(),
        skipped: breakers.skipped(),
        paused: breakers.paused().iter().map(paused_hook).collect(),
    }
}
