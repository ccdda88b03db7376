//! The `event` request: an event answered at once when no hook matches, its async hooks (or
//! the whole of a detached event) handed to the background (`crate::background`), the rest
//! run in a task of its own (`crate::eventrun`).

use std::path::Path;
use std::sync::Arc;

use hookd_core::HookEventName;
use hookd_core::dialect::Dialect;
use hookd_protocol::{EventRequest, WireEnv};

use crate::background::{self, Job};
use crate::convert;
use crate::eventrun::{RelayedChunk, Run};
use crate::httproots::SessionRoot;
use crate::limits::OUTPUT_BUDGET_KIB;
use crate::relayed::{SeriesKey, is_last_chunk};
use crate::request::context::{Connection, parse_event, parse_relayed_by};
use crate::stats::Stats;
use crate::wire::send;

/// The part of a relayed event's environment that holds for the whole session: less the
/// variables the host gives that one event's hooks only.
fn session_env(host: Dialect, env: &WireEnv) -> WireEnv {
    let only = host.relay().event_only_variables();
    env.iter()
        .filter(|(name, _)| !only.contains(&name.as_str()))
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect()
}

impl Connection {
    /// Remembers the project root and environment a relayed event of a session carries, for
    /// the events the session's host sends over HTTP, which carry neither
    /// (`crate::httproots`): always from `SessionStart`, from another event only for a session
    /// not known yet (the daemon started mid-session). Events without an environment (the
    /// HTTP listener's own) are not recorded.
    fn record_session_root(&self, host: Dialect, event: HookEventName, request: &EventRequest) {
        let (Some(project_dir), Some(env)) = (&request.project_dir, &request.env) else {
            return;
        };
        let roots = &self.shared.session_roots;
        if event == HookEventName::SessionStart
            || !roots.contains(host.as_str(), &request.session_id)
        {
            roots.record(
                host.as_str(),
                &request.session_id,
                SessionRoot {
                    project_dir: project_dir.clone(),
                    env: Some(Arc::new(session_env(host, env))),
                },
            );
        }
    }

    /// Answers an `event` request: at once when no hook matches, else from a run task.
    pub(crate) async fn event(&self, request: EventRequest) {
        let event = match parse_event(&request.id, &request.event) {
            Ok(event) => event,
            Err(error) => return send(&self.sink, &error.to_server_message()).await,
        };
        if event == HookEventName::SessionEnd {
            self.shared.state.session_ended(&request.session_id);
        }
        let relayed_by = match parse_relayed_by(&request.id, request.relayed_by.as_deref()) {
            Ok(host) => host,
            Err(error) => return send(&self.sink, &error.to_server_message()).await,
        };
        if let Some(host) = relayed_by {
            self.record_session_root(host, event, &request);
        }
        // `parse_client_message` has already refused a `cwd` or `project_dir` that is not
        // absolute. The host's project root, when it sent one, names the project: a shell
        // tool's `cd` moves `cwd`, never the project.
        let project_dir = request.project_dir.as_deref().unwrap_or(&request.cwd);
        let snapshot = self.shared.registries.get(Path::new(project_dir)).await;
        Stats::add(&self.shared.stats.events_served, 1);
        self.client.entry().count_event();
        if let Some(host) = relayed_by {
            self.shared.engine.recorder.run_stats.count_relayed(host);
        }
        // Async hooks, and every hook of a detached event, run in the background
        // (`crate::background`); the rest of the plan, if any, answers the client.
        let (plan, background) =
            match snapshot
                .registry
                .plan_relayed(event, &request.input, relayed_by)
            {
                Some(plan) => background::split(plan, request.detach),
                None => (None, None),
            };
        let backgrounded = background.is_some();
        if let Some((kind, background)) = background {
            let env = self.hook_env(request.env.as_ref());
            let job = Job {
                kind,
                request: request.clone(),
                event,
                plan: background,
                client: Arc::clone(self.client.entry()),
                relayed_by,
                env,
                env_redaction: Arc::clone(snapshot.registry.env_redaction()),
                generation: snapshot.generation,
                project_id: snapshot.project_id.clone(),
            };
            self.shared.background.start(&self.shared.engine, job);
        }
        let Some(plan) = plan else {
            if backgrounded {
                // Logged by the background run when it ends.
                let message = convert::empty_result(request.id, snapshot.generation);
                send(&self.sink, &message).await;
                return;
            }
            tracing::debug!(
                client = &*self.client.entry().name,
                event = event.as_str(),
                tool = request
                    .input
                    .get("tool_name")
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or("-"),
                relayed_by = relayed_by.map_or("-", Dialect::as_str),
                "event matched no hook"
            );
            let message = convert::empty_result(request.id, snapshot.generation);
            send(&self.sink, &message).await;
            return;
        };

        // Stdout and stderr of every hook at their caps: what this run may hold at worst.
        let worst_kib = (plan.hooks.len() * 2 * self.shared.config.max_output_bytes)
            .div_ceil(1024)
            .clamp(1, OUTPUT_BUDGET_KIB as usize);
        let Ok(output_permit) = Arc::clone(&self.output_budget)
            .acquire_many_owned(u32::try_from(worst_kib).unwrap_or(OUTPUT_BUDGET_KIB))
            .await
        else {
            return;
        };
        // A SessionEnd run is not stopped by its client going away: the host kills its
        // relay after a second or two, and the work must still be done (`crate::background`).
        let parent = if event == HookEventName::SessionEnd {
            &self.shared.hard_stop
        } else {
            &self.cancel
        };
        let Some(token) = self.register_under(&request.id, parent).await else {
            return;
        };

        let env = self.hook_env(request.env.as_ref());
        // A relayed AfterModel chunk continues its response's series (`crate::relayed`).
        let series = (relayed_by.is_some() && event == HookEventName::AfterModel).then(|| {
            let key = SeriesKey::new(
                project_dir,
                &request.session_id,
                request.input.get("llm_request"),
            );
            let series = self.shared.relayed.series(&key, std::time::Instant::now());
            let last = is_last_chunk(request.input.get("llm_response"));
            RelayedChunk { key, series, last }
        });
        let run = Run {
            started: std::time::Instant::now(),
            client: Arc::clone(self.client.entry()),
            relayed_by,
            engine: Arc::clone(&self.shared.engine),
            relayed: Arc::clone(&self.shared.relayed),
            sink: Arc::clone(&self.sink),
            inflight: Arc::clone(&self.inflight),
            token,
            event,
            series,
            env,
            env_redaction: Arc::clone(snapshot.registry.env_redaction()),
            generation: snapshot.generation,
            project_id: snapshot.project_id.clone(),
            _output_permit: output_permit,
        };
        let slot = self.limit.enter();
        self.runs.spawn(async move {
            run.execute(request, plan).await;
            drop(slot);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_keeps_its_environment_less_the_variables_of_one_event() {
        let env: WireEnv = [
            ("CLAUDE_ENV_FILE", "/tmp/env-file"),
            ("CLAUDE_PROJECT_DIR", "/p"),
            ("PATH", "/usr/bin"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        let claude = session_env(Dialect::CLAUDE, &env);
        assert_eq!(
            claude.keys().map(String::as_str).collect::<Vec<_>>(),
            ["CLAUDE_PROJECT_DIR", "PATH"]
        );
        // A host that names no such variable keeps them all.
        assert_eq!(session_env(Dialect::GEMINI, &env), env);
    }
}
