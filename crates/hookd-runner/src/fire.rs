//! Running the plan of one firing (spec §4.7): every hook of it, in parallel or one at a time.
//!
//! The pure rules come from `hookd-core`: the stdin payload, command expansion, the hook's
//! environment, interpreting its output and sequential chaining. This module only adds the
//! processes and the scheduling around them:
//!
//! - **Parallel** plans start every hook at once. The firing's payload is serialised once and
//!   shared by all its hooks. Results come back in plan order; `on_result` hears about each
//!   as it completes.
//! - **Sequential** plans run the hooks one at a time in plan order and never stop early; each
//!   hook's payload is built from the input as chained by the hooks before it.
//!
//! Every hook process holds a permit of the daemon-wide [`RunnerConfig::hook_slots`] semaphore
//! from just before it is spawned until its result is known, so the number of hook processes
//! across all clients is bounded; hooks beyond the cap wait in line and are never dropped.
//!
//! Each hook's record gets its failure policy applied right after its output is
//! interpreted: the hook's own `on_failure`, else [`RunnerConfig::default_on_failure`]. So the
//! streamed records, sequential chaining and the aggregate all see the same record.
//!
//! Project hooks need the user's trust (hookd's project-hook trust; the registry marks them, see
//! `hookd_core::trust`). Under [`RunnerConfig::project_hooks`] `require` an untrusted one is
//! not spawned: its record's outcome is `Refused`, with an error naming the hook and the
//! command that trusts it, and everything a trusted one's key covers is read and hashed again
//! just before it is spawned (`crate::verify`), so a file edited since the registry was built
//! is refused too; a one-shot hook then runs its shell and Python scripts from sealed copies of
//! the bytes just hashed, so a swap after the check cannot run. Under `warn` it
//! runs, and the first run of each untrusted hook (per project, name, command and script
//! contents, for the daemon's lifetime) carries a warning saying so.
//!
//! Each hook runs the way its settings entry says (`hookd_core::exec`): a fresh process per
//! event (`process`), the same process kept started ahead of the event (`"prewarm": true`,
//! `crate::prewarm`), or one JSON line to a persistent worker (`"mode": "persistent"`,
//! `crate::worker`). Trust and the failure policy apply the same way to all three. Workers and
//! spares live in [`RunnerConfig::workers`] and [`RunnerConfig::prewarm`], shared by every
//! firing, and count against [`RunnerConfig::hook_slots`] for as long as they are alive;
//! [`RunnerConfig::shutdown`] stops them.
//!
//! A builtin filter (`"type": "builtin"`, `hookd_core::redact`) on a plain AfterModel firing
//! runs in the firing's task with no process and no hook slot: its record is a success whose
//! output replaces the chunk's text (`{"content": ...}`, hookd's chunk text) when the filter changed
//! it. The filters run before the plan's other hooks, which get the filtered text as
//! `content` and in `llm_response` ([`set_chunk_text`]). (Streamed AfterModel chunks run their
//! filters in the server, with state across chunks.)
//!
//! All hooks of a firing are driven by the caller's task: no task is spawned per hook
//! (workers and spares have a task each, owned by their pools).

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use hookd_core::chain::apply_chain;
use hookd_core::command::CommandVars;
use hookd_core::dialect::Dialect;
use hookd_core::env::STATE_TOKEN_ENV_VAR;
use hookd_core::event::HookEventName;
use hookd_core::exec::ExecMode;
use hookd_core::model::{HookEntry, HookType};
use hookd_core::output::hook_result;
use hookd_core::payload::{BaseFields, build_payload, chunk_text, write_payload};
use hookd_core::plan::Plan;
use hookd_core::policy::{FailurePolicy, apply_failure_policy};
use hookd_core::redact::Redactor;
use hookd_core::result::{HookOutcome, HookResult, HookRun, OutputFormat};
use hookd_core::sanitize::EnvRedaction;
use hookd_core::trust::{
    HookTrust, ProjectHookPolicy, TrustGap, TrustKey, changed_script, changed_script_message,
    refusal_message, uncovered_message, warning_message,
};
use hookd_settings::verify;
use serde_json::{Map, Value};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::breakers::Breakers;
use crate::direct::run_one_shot;
use crate::prewarm::{PrewarmRequest, Prewarmer};
use crate::process::{ProcessLimits, ProcessSpec, run_process};
use crate::shares::{RunClass, ShareLimits, SharePlace, SlotShares};
use crate::slots::SlotSource;
use crate::spawn::HookEnv;
use crate::worker::{ProcessKey, WorkerPools, WorkerRequest};

/// The default number of hook processes that may run at once across the whole daemon.
pub const DEFAULT_HOOK_SLOTS: usize = 64;

/// The error Gemini CLI reports for a `runtime` hook read from a file: it has no function.
const RUNTIME_HOOK_ERROR: &str = "hookConfig.action is not a function";

/// The error Gemini CLI reports for a command-like hook without a command.
const MISSING_COMMAND_ERROR: &str = "Command hook missing command";

/// The refusal of a builtin hook whose filter was not compiled (settings validation keeps
/// such a hook out of the registry; this is the runner's safety net).
const BUILTIN_WITHOUT_FILTER_ERROR: &str = "builtin hook has no compiled filter";

/// The refusal of a policy hook where no evaluator is configured (a runner without the
/// daemon's binary).
const POLICY_WITHOUT_EVALUATOR_ERROR: &str = "policy hooks need hookd's evaluator, which this \
                                              engine does not have";

/// The refusal of a builtin filter outside AfterModel, the one event it applies to.
const BUILTIN_EVENT_ERROR: &str = "builtin filters only run on AfterModel";

/// How hook processes are run, shared by every firing of the daemon.
#[derive(Debug, Clone)]
pub struct RunnerConfig {
    /// Output caps and the kill grace period that apply to every hook process.
    pub limits: ProcessLimits,
    /// The shell a command runs in as `<shell> -c <command>` (`bash`, looked up in the hook's
    /// `PATH`, unless this is a path).
    pub shell: PathBuf,
    /// Caps how many hook processes run at once across the daemon; each one-shot process
    /// holds one permit from spawn to result, and each persistent worker and pre-warmed spare
    /// one for as long as it is alive (an idle one gives it up when a hook needs it).
    pub hook_slots: Arc<Semaphore>,
    /// The failure policy of hooks whose settings entry has no valid `on_failure` key.
    pub default_on_failure: FailurePolicy,
    /// What an untrusted project hook does: run with a warning, or not run.
    pub project_hooks: ProjectHookPolicy,
    /// The untrusted project hooks already warned about, shared by every firing.
    pub trust_warnings: Arc<TrustWarnings>,
    /// The persistent workers (`"mode": "persistent"` hooks), shared by every firing.
    pub workers: Arc<WorkerPools>,
    /// The spares of pre-warmed hooks (`"prewarm": true`), shared by every firing.
    pub prewarm: Arc<Prewarmer>,
    /// Hook environments already built, shared by every firing.
    pub envs: Arc<EnvCache>,
    /// Every hook's circuit breaker, shared by every firing (`crate::breakers`).
    pub breakers: Arc<Breakers>,
    /// The shares of `hook_slots` per project and for background work (`crate::shares`):
    /// every hook process takes its place there before its slot.
    pub shares: Arc<SlotShares>,
    /// Decide without running anything: when set, every hook is refused with this message
    /// before it would start, so each decides by its failure policy. The relay asks for this
    /// when a daemon has the event but has not answered in time: the hooks may be running
    /// there, so they are not run a second time, and a fail-closed guard still blocks.
    pub plan_only: Option<Arc<str>>,
    /// The program that evaluates policy hooks (`"type": "policy"`), started as
    /// `<program> --policy-worker ...` and kept as a persistent worker: the daemon's own
    /// binary. `None`: policy hooks are refused (their failure policy decides).
    pub policy_program: Option<PathBuf>,
}

impl RunnerConfig {
    /// Stops every persistent worker and pre-warmed spare (their whole process groups) and
    /// waits for them; runs from now on that need one are answered as cancelled. Returns
    /// within the kill grace period plus a small slack. Called by the daemon's graceful stop
    /// once in-flight runs are done; dropping the last copy of the pools kills them too.
    pub async fn shutdown(&self) {
        tokio::join!(self.workers.shutdown(), self.prewarm.shutdown());
    }
}

/// Remembers which untrusted project hooks have been warned about, so each is warned about
/// once. Bounded: past [`TrustWarnings::CAPACITY`] hooks it starts over, which at worst
/// repeats a warning.
#[derive(Debug, Default)]
pub struct TrustWarnings {
    /// Per project directory, the hooks warned about.
    warned: Mutex<HashMap<String, HashSet<TrustKey>>>,
}

impl TrustWarnings {
    /// The most hooks remembered at once.
    pub const CAPACITY: usize = 4096;

    /// Whether this is the first time `key` of `project_dir` is seen (and remembers it).
    pub fn first_time(&self, project_dir: &str, key: &TrustKey) -> bool {
        let mut warned = self.warned.lock().unwrap_or_else(PoisonError::into_inner);
        // Looked up by reference first: every run of a hook asks, only its first inserts.
        if warned
            .get(project_dir)
            .is_some_and(|keys| keys.contains(key))
        {
            return false;
        }
        if warned.values().map(HashSet::len).sum::<usize>() >= Self::CAPACITY {
            warned.clear();
        }
        warned
            .entry(project_dir.to_owned())
            .or_default()
            .insert(key.clone())
    }
}

impl Default for RunnerConfig {
    fn default() -> Self {
        RunnerConfig {
            limits: ProcessLimits::default(),
            shell: PathBuf::from("bash"),
            hook_slots: Arc::new(Semaphore::new(DEFAULT_HOOK_SLOTS)),
            default_on_failure: FailurePolicy::Allow,
            project_hooks: ProjectHookPolicy::Warn,
            trust_warnings: Arc::new(TrustWarnings::default()),
            workers: Arc::new(WorkerPools::new()),
            prewarm: Arc::new(Prewarmer::new()),
            envs: Arc::new(EnvCache::default()),
            breakers: Arc::new(Breakers::default()),
            shares: Arc::new(SlotShares::new(ShareLimits::for_slots(DEFAULT_HOOK_SLOTS))),
            plan_only: None,
            policy_program: None,
        }
    }
}

/// Hook environments, built once per (client environment, session, dialect, hook environment) and
/// reused: an agent's session fires the same hooks with the same environment over and over,
/// and building one (tens of variables, as strings and then as the C strings `execve` takes)
/// costs more than looking it up. Bounded: the least recently used entry makes room.
#[derive(Debug, Default)]
pub struct EnvCache {
    entries: Mutex<Vec<CachedEnv>>,
}

#[derive(Debug)]
struct CachedEnv {
    /// The client's environment it was built from (kept alive, so a pointer match is exact).
    base: Arc<Vec<(String, String)>>,
    /// The workspace's redaction settings it was built under (kept alive likewise).
    redaction: Arc<EnvRedaction>,
    project_dir: String,
    plans_dir: String,
    session_id: String,
    state_token: String,
    dialect: Dialect,
    hook_env: Vec<(String, String)>,
    env: Arc<HookEnv>,
}

impl CachedEnv {
    fn matches(
        &self,
        base: &Arc<Vec<(String, String)>>,
        redaction: &Arc<EnvRedaction>,
        vars: &CommandVars<'_>,
        state_token: &str,
        dialect: Dialect,
        hook_env: &[(String, String)],
    ) -> bool {
        self.dialect == dialect
            && (Arc::ptr_eq(&self.base, base) || self.base == *base)
            && self.state_token == state_token
            && (Arc::ptr_eq(&self.redaction, redaction) || self.redaction == *redaction)
            && self.project_dir == vars.project_dir
            && self.plans_dir == vars.plans_dir
            && self.session_id == vars.session_id
            && self.hook_env == hook_env
    }
}

impl EnvCache {
    /// The most environments kept.
    pub const CAPACITY: usize = 64;

    /// The environment of a hook of `dialect` with `hook_env` run for a client whose
    /// environment is `base` in the session `vars` describe, under the workspace's `redaction`
    /// settings: `Dialect::hook_environment`, built on first use, with the session's state
    /// token ([`FireRequest::state_token`]) set last, so neither the client's environment
    /// nor the hook's own `env` can put another there.
    pub fn get(
        &self,
        base: &Arc<Vec<(String, String)>>,
        redaction: &Arc<EnvRedaction>,
        vars: &CommandVars<'_>,
        state_token: &str,
        dialect: Dialect,
        hook_env: &[(String, String)],
    ) -> Arc<HookEnv> {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(index) = entries
            .iter()
            .rposition(|entry| entry.matches(base, redaction, vars, state_token, dialect, hook_env))
        {
            // Most recently used last.
            let entry = entries.remove(index);
            let env = Arc::clone(&entry.env);
            entries.push(entry);
            return env;
        }
        let mut built = dialect.hook_environment(base, redaction, vars, hook_env);
        built.retain(|(name, _)| name != STATE_TOKEN_ENV_VAR);
        if !state_token.is_empty() {
            built.push((STATE_TOKEN_ENV_VAR.to_owned(), state_token.to_owned()));
        }
        let env = Arc::new(HookEnv::new(built));
        if entries.len() >= Self::CAPACITY {
            entries.remove(0);
        }
        entries.push(CachedEnv {
            base: Arc::clone(base),
            redaction: Arc::clone(redaction),
            project_dir: vars.project_dir.to_owned(),
            plans_dir: vars.plans_dir.to_owned(),
            session_id: vars.session_id.to_owned(),
            state_token: state_token.to_owned(),
            dialect,
            hook_env: hook_env.to_vec(),
            env: Arc::clone(&env),
        });
        env
    }
}

/// One firing of an event, as a client asked for it.
#[derive(Debug, Clone, PartialEq)]
pub struct FireRequest {
    /// The event that fired.
    pub event: HookEventName,
    /// The event's own fields (`tool_name`, `tool_input`, `prompt`, ...), as the client sent
    /// them.
    pub input: Map<String, Value>,
    /// The base fields of the payload; `base.cwd` is also every hook's working directory.
    pub base: BaseFields,
    /// What `$GEMINI_PROJECT_DIR` and friends expand to: the host's project root (the
    /// request's `project_dir`), else the session's working directory.
    pub project_dir: String,
    /// What `$GEMINI_PLANS_DIR` expands to.
    pub plans_dir: String,
    /// The client's environment, which every hook's environment starts from.
    pub env: Arc<Vec<(String, String)>>,
    /// The workspace's `security.environmentVariableRedaction` settings
    /// (`hookd_core::registry::Registry::env_redaction`): what of `env` hooks get.
    pub env_redaction: Arc<EnvRedaction>,
    /// Fields of `input` already serialised as JSON, written as they are into the hooks'
    /// payloads (`hookd_core::payload::write_payload`); each must be exactly the JSON of the
    /// input's value. An AfterModel stream keeps its `llm_request` and the text emitted so far
    /// this way, so that neither is serialised again for every chunk. (An `Arc<String>`
    /// rather than an `Arc<str>`: a stream refills its `full_content` in place for each chunk
    /// once the previous chunk's payloads are written.)
    pub serialized: Vec<(&'static str, Arc<String>)>,
    /// The process keys of this request's persistent and pre-warmed hooks, computed by its
    /// first run and reused by the later ones (a stream's chunks). Start it empty.
    pub process_keys: ProcessKeys,
    /// Whether a client waits for these hooks: background hooks take their places from the
    /// background share (`crate::shares`).
    pub class: RunClass,
    /// The session state token of this session and project, put in every hook's environment
    /// as `HOOKD_STATE_TOKEN` (`docs/state.md`); empty: none.
    pub state_token: String,
    /// The host that relayed the event (`claude`, ...), empty when a client fired it itself:
    /// what a policy sees as `input.host`.
    pub host: &'static str,
}

/// The [`ProcessKey`]s a request's runs computed, per hook.
///
/// A key depends only on the hook and on the request's session fields (directories, session
/// id, environment), which stay the same for a request's life, so a stream computes each of
/// its hooks' keys (the expanded command, the environment, a dozen strings) once rather than
/// per chunk, and its chunks find the hook's worker pool with the same `Arc`. A clone starts
/// empty; two are always equal (a cache is not part of the request's value).
#[derive(Default)]
pub struct ProcessKeys(Mutex<Vec<(Arc<HookEntry>, Arc<ProcessKey>)>>);

impl ProcessKeys {
    /// The key computed for `entry` by an earlier run, if any.
    fn get(&self, entry: &Arc<HookEntry>) -> Option<Arc<ProcessKey>> {
        let keys = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        keys.iter()
            .find(|(known, _)| Arc::ptr_eq(known, entry))
            .map(|(_, key)| Arc::clone(key))
    }

    /// Remembers `key` as `entry`'s.
    fn put(&self, entry: &Arc<HookEntry>, key: &Arc<ProcessKey>) {
        let mut keys = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if !keys.iter().any(|(known, _)| Arc::ptr_eq(known, entry)) {
            keys.push((Arc::clone(entry), Arc::clone(key)));
        }
    }
}

impl Clone for ProcessKeys {
    fn clone(&self) -> ProcessKeys {
        ProcessKeys::default()
    }
}

impl PartialEq for ProcessKeys {
    fn eq(&self, _: &ProcessKeys) -> bool {
        true
    }
}

impl std::fmt::Debug for ProcessKeys {
    // Counts only: keys hold hooks' environments.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let keys = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        f.debug_struct("ProcessKeys")
            .field("known", &keys.len())
            .finish()
    }
}

/// Runs every hook of `plan` for one firing and returns their results in plan order.
///
/// An AfterModel plan's builtin filters (which the planner puts first) run before the other
/// hooks, whose input then carries the filtered text.
///
/// `on_result(index, result)` is called once per hook, as each completes, with its index in
/// the plan. After `cancel` fires, running hooks are stopped and hooks not yet started are
/// reported as cancelled without being spawned; every hook still gets a result.
pub async fn run_plan(
    plan: &Plan,
    request: &FireRequest,
    config: &RunnerConfig,
    cancel: &CancellationToken,
    on_result: &mut (dyn FnMut(usize, &HookResult) + Send),
) -> Vec<HookResult> {
    let filters = leading_filters(plan);
    if filters > 0 && filters < plan.hooks.len() {
        return run_filters_first(plan, filters, request, config, cancel, on_result).await;
    }
    let firing = Firing::new(request, config, cancel);
    firing
        .run_hooks(&plan.hooks, plan.sequential, on_result)
        .await
}

/// How many builtin filters an AfterModel plan starts with (the planner puts them first);
/// 0 for any other event.
fn leading_filters(plan: &Plan) -> usize {
    if plan.event != HookEventName::AfterModel {
        return 0;
    }
    plan.hooks
        .iter()
        .take_while(|entry| entry.config.hook_type == HookType::Builtin)
        .count()
}

/// Runs an AfterModel plan's builtin filters, one after the other, and then the rest of the
/// plan on the text as they left it: no other hook sees what a filter removed. The input's
/// `content` and the text of its `llm_response` become the filtered text.
async fn run_filters_first(
    plan: &Plan,
    filters: usize,
    request: &FireRequest,
    config: &RunnerConfig,
    cancel: &CancellationToken,
    on_result: &mut (dyn FnMut(usize, &HookResult) + Send),
) -> Vec<HookResult> {
    let (filter_hooks, rest) = plan.hooks.split_at(filters);
    let mut filtered = request.clone();
    let mut results = Vec::with_capacity(plan.hooks.len());
    for (index, entry) in filter_hooks.iter().enumerate() {
        let result = {
            let firing = Firing::new(&filtered, config, cancel);
            firing.run_hook(entry, &filtered.input, Bytes::new()).await
        };
        on_result(index, &result);
        let content = result
            .output
            .as_ref()
            .and_then(|output| output.get("content"))
            .and_then(Value::as_str);
        if let Some(content) = content {
            set_chunk_text(&mut filtered.input, content);
        }
        results.push(result);
    }
    let firing = Firing::new(&filtered, config, cancel);
    let mut offset = |index: usize, result: &HookResult| on_result(filters + index, result);
    results.extend(firing.run_hooks(rest, plan.sequential, &mut offset).await);
    results
}

/// Puts `text` in an AfterModel input as the chunk's text: its `content`, and the text of its
/// `llm_response` (`hookd_core::aggregate::replace_response_text`).
pub fn set_chunk_text(input: &mut Map<String, Value>, text: &str) {
    if let Some(Value::Object(response)) = input.get_mut("llm_response") {
        hookd_core::aggregate::replace_response_text(response, text);
    }
    input.insert("content".to_owned(), Value::String(text.to_owned()));
}

/// Everything the hooks of one firing share.
struct Firing<'a> {
    request: &'a FireRequest,
    config: &'a RunnerConfig,
    cancel: &'a CancellationToken,
    vars: CommandVars<'a>,
}

impl<'a> Firing<'a> {
    fn new(
        request: &'a FireRequest,
        config: &'a RunnerConfig,
        cancel: &'a CancellationToken,
    ) -> Firing<'a> {
        Firing {
            request,
            config,
            cancel,
            vars: CommandVars {
                project_dir: &request.project_dir,
                plans_dir: &request.plans_dir,
                session_id: &request.base.session_id,
            },
        }
    }

    /// Runs `hooks` one after the other (chaining) or all at once.
    async fn run_hooks(
        &self,
        hooks: &[Arc<HookEntry>],
        sequential: bool,
        on_result: &mut (dyn FnMut(usize, &HookResult) + Send),
    ) -> Vec<HookResult> {
        // With a single hook both ways are the same, and the sequential one has less machinery.
        if sequential || hooks.len() <= 1 {
            self.run_sequential(hooks, on_result).await
        } else {
            self.run_parallel(hooks, on_result).await
        }
    }

    async fn run_parallel(
        &self,
        hooks: &[Arc<HookEntry>],
        on_result: &mut (dyn FnMut(usize, &HookResult) + Send),
    ) -> Vec<HookResult> {
        // Builtin filters read the input itself; the payload is only built for processes.
        let input = &self.request.input;
        let stdin = if hooks.iter().any(|entry| needs_payload(entry)) {
            self.payload(input)
        } else {
            Bytes::new()
        };
        let mut running: FuturesUnordered<_> = hooks
            .iter()
            .enumerate()
            .map(|(index, entry)| {
                let stdin = stdin.clone();
                async move { (index, self.run_hook(entry, input, stdin).await) }
            })
            .collect();
        let mut results: Vec<Option<HookResult>> = hooks.iter().map(|_| None).collect();
        while let Some((index, result)) = running.next().await {
            on_result(index, &result);
            if let Some(slot) = results.get_mut(index) {
                *slot = Some(result);
            }
        }
        // Every future above completed, so every slot is filled.
        results.into_iter().flatten().collect()
    }

    async fn run_sequential(
        &self,
        hooks: &[Arc<HookEntry>],
        on_result: &mut (dyn FnMut(usize, &HookResult) + Send),
    ) -> Vec<HookResult> {
        // The input is only copied once a hook actually changes it.
        let mut input = Cow::Borrowed(&self.request.input);
        let mut results = Vec::with_capacity(hooks.len());
        for (index, entry) in hooks.iter().enumerate() {
            let stdin = if needs_payload(entry) {
                self.payload(&input)
            } else {
                Bytes::new()
            };
            let result = self.run_hook(entry, &input, stdin).await;
            on_result(index, &result);
            let is_last = index + 1 == hooks.len();
            // Chaining only ever uses a successful hook's output (spec §4.7).
            if !is_last && result.success && result.output.is_some() {
                apply_chain(self.request.event, input.to_mut(), &result);
            }
            results.push(result);
        }
        results
    }

    /// The stdin payload for `input`: compact JSON in Gemini CLI's key order.
    fn payload(&self, input: &Map<String, Value>) -> Bytes {
        let mut payload = Vec::with_capacity(self.payload_capacity());
        write_payload(
            self.request.event,
            &self.request.base,
            input,
            &[],
            &self.serialized(input),
            &mut payload,
        );
        Bytes::from(payload)
    }

    /// A first guess at a payload's size, so that writing one rarely grows its buffer: the
    /// serialised fields (a stream's `llm_request` and `full_content`, the large ones) plus
    /// room for the rest.
    fn payload_capacity(&self) -> usize {
        1024 + self
            .request
            .serialized
            .iter()
            .map(|(_, json)| json.len())
            .sum::<usize>()
    }

    /// The request's serialised fields, when `input` is the request's own input (a chained
    /// input has values of its own).
    fn serialized<'s>(&'s self, input: &Map<String, Value>) -> Vec<(&'s str, &'s str)> {
        if !std::ptr::eq(input, &self.request.input) {
            return Vec::new();
        }
        self.request
            .serialized
            .iter()
            .map(|(key, json)| (*key, json.as_str()))
            .collect()
    }

    /// Runs one hook: refuses what cannot run, waits for a process slot, spawns, interprets.
    async fn run_hook(
        &self,
        entry: &Arc<HookEntry>,
        input: &Map<String, Value>,
        stdin: Bytes,
    ) -> HookResult {
        // A hook that speaks another host's dialect reads that host's payload and is
        // interpreted by that host's rules, against the hookd payload of the firing.
        // A hook that drops payload keys (`drop_fields`) gets a payload of its own too.
        let is_process = entry.config.hook_type != HookType::Builtin;
        let dialect = entry.config.dialect();
        let dropped = if is_process {
            entry.config.drop_fields()
        } else {
            Vec::new()
        };
        let payload = (is_process && !dialect.is_native())
            .then(|| build_payload(self.request.event, &self.request.base, input))
            .and_then(|payload| {
                let shaped = dialect.run().hook_payload(self.request.event, &payload)?;
                Some((payload, shaped))
            });
        let (stdin, dialect_payload) = if let Some((payload, mut shaped)) = payload {
            for key in &dropped {
                shaped.shift_remove(key);
            }
            let stdin = Bytes::from(serde_json::to_vec(&shaped).unwrap_or_default());
            (stdin, Some(payload))
        } else if !dropped.is_empty() {
            let mut shaped = Vec::with_capacity(self.payload_capacity());
            write_payload(
                self.request.event,
                &self.request.base,
                input,
                &dropped,
                &self.serialized(input),
                &mut shaped,
            );
            (Bytes::from(shaped), None)
        } else {
            (stdin, None)
        };
        // A plan-only firing runs nothing: every hook is refused, so its failure policy
        // decides (the breaker is not asked: nothing ran).
        if let Some(message) = &self.config.plan_only {
            let run = not_run(HookOutcome::Refused {
                message: message.to_string(),
            });
            let policy = entry
                .config
                .on_failure()
                .unwrap_or(self.config.default_on_failure);
            let interpreted = match &dialect_payload {
                Some(payload) => dialect.run().hook_result(entry, run, payload),
                None => hook_result(entry, run),
            };
            return apply_failure_policy(interpreted, policy);
        }
        // A hook paused by its circuit breaker is not spawned; it fails as "refused",
        // which its failure policy then turns into its decision.
        let admitted = if is_process {
            self.config.breakers.admit(entry)
        } else {
            Ok(false)
        };
        let trial = matches!(admitted, Ok(true))
            .then(|| crate::breakers::TrialGuard::new(&self.config.breakers, entry));
        let verdict = match &admitted {
            Ok(_) => self.trust_verdict(entry).await,
            Err(message) => TrustVerdict::Refuse {
                message: message.clone(),
            },
        };
        let (run, warning) = match verdict {
            TrustVerdict::Run { warning, verified } => {
                let run = if entry.config.hook_type == HookType::Builtin {
                    run_builtin_bounded(entry, input).await
                } else {
                    self.run_entry(entry, stdin, verified.as_deref()).await
                };
                (run, warning)
            }
            TrustVerdict::Refuse { message } => (not_run(HookOutcome::Refused { message }), None),
        };
        let policy = entry
            .config
            .on_failure()
            .unwrap_or(self.config.default_on_failure);
        let interpreted = match &dialect_payload {
            Some(payload) => dialect.run().hook_result(entry, run, payload),
            None => hook_result(entry, run),
        };
        // The breaker reads the run before its policy replaced the output: a hook that
        // answered on purpose (exit 2 with a message) has not failed.
        let breaker_verdict = crate::breakers::verdict(&interpreted);
        let mut result = apply_failure_policy(interpreted, policy);
        if let (true, Ok(trial)) = (is_process, admitted) {
            self.config.breakers.record(entry, trial, breaker_verdict);
        }
        if let Some(trial) = trial {
            trial.finished();
        }
        if let (HookType::Builtin, HookOutcome::TimedOut { timeout_ms }) =
            (&entry.config.hook_type, &result.outcome)
        {
            // A redact filter fails closed: the unfiltered text is not passed on.
            let timeout_ms = *timeout_ms;
            withhold_text(&mut result, timeout_ms);
        }
        result.warning = warning;
        result
    }

    /// Whether the hook may run under the project-hook trust policy, and what to warn about.
    async fn trust_verdict(&self, entry: &HookEntry) -> TrustVerdict {
        let project_dir = &self.request.project_dir;
        let name = entry.config.display_name();
        match (&entry.trust, self.config.project_hooks) {
            (HookTrust::NotRequired, _) => TrustVerdict::Run {
                warning: None,
                verified: None,
            },
            (HookTrust::Untrusted { key, gap }, ProjectHookPolicy::Require) => {
                TrustVerdict::Refuse {
                    message: if *gap == TrustGap::Uncovered {
                        uncovered_message(name, key, project_dir)
                    } else {
                        refusal_message(name, gap, project_dir)
                    },
                }
            }
            (HookTrust::Untrusted { key, gap }, ProjectHookPolicy::Warn) => {
                let warning = self
                    .config
                    .trust_warnings
                    .first_time(project_dir, key)
                    .then(|| warning_message(name, gap, project_dir));
                if let Some(warning) = &warning {
                    tracing::warn!("{warning}");
                }
                TrustVerdict::Run {
                    warning,
                    verified: None,
                }
            }
            (HookTrust::Trusted { .. }, ProjectHookPolicy::Warn) => TrustVerdict::Run {
                warning: None,
                verified: None,
            },
            // A policy's evaluator checks the trusted digests itself before it compiles.
            (HookTrust::Trusted { .. }, ProjectHookPolicy::Require)
                if entry.config.hook_type == HookType::Policy =>
            {
                TrustVerdict::Run {
                    warning: None,
                    verified: None,
                }
            }
            (HookTrust::Trusted { key }, ProjectHookPolicy::Require) => {
                // The registry hashed the files when it was built; a write since then that
                // the watcher has not turned into a rebuild yet must not slip through. The
                // scripts' bytes read here are the ones the hook will run (`run_entry`).
                let command = entry.config.command.clone().unwrap_or_default();
                let env = entry.config.env.clone();
                let project = project_dir.clone();
                let (plans_dir, session_id) = (
                    self.vars.plans_dir.to_owned(),
                    self.vars.session_id.to_owned(),
                );
                let collected = tokio::task::spawn_blocking(move || {
                    verify::collect(
                        &command,
                        &env,
                        &CommandVars {
                            project_dir: &project,
                            plans_dir: &plans_dir,
                            session_id: &session_id,
                        },
                    )
                })
                .await;
                let Ok(collected) = collected else {
                    return TrustVerdict::Refuse {
                        message: changed_script_message(name, "(unreadable)", project_dir),
                    };
                };
                if collected.digests != key.scripts || collected.uncovered != key.uncovered {
                    let changed = changed_script(&key.scripts, &collected.digests);
                    return TrustVerdict::Refuse {
                        message: changed_script_message(name, &changed, project_dir),
                    };
                }
                TrustVerdict::Run {
                    warning: None,
                    verified: Some(Box::new(collected)),
                }
            }
        }
    }

    /// The hook's place in the shares of the hook slots, or the record of a hook that did
    /// not get one: cancelled, or (a background hook) refused after waiting its longest.
    async fn take_place(&self) -> Result<SharePlace, HookRun> {
        let shares = &self.config.shares;
        let project = self.request.project_dir.as_str();
        let class = self.request.class;
        let acquire = shares.acquire(project, class, self.cancel);
        let place = match class {
            RunClass::Foreground => acquire.await,
            RunClass::Background => {
                let wait = shares.limits().background_wait;
                match tokio::time::timeout(wait, acquire).await {
                    Ok(place) => place,
                    Err(_) => {
                        let limits = shares.limits();
                        return Err(not_run(HookOutcome::Refused {
                            message: format!(
                                "not run: no slot for background work within {} ms (this \
                                 project's background hooks may hold {} of the slots, all \
                                 background hooks {})",
                                wait.as_millis(),
                                limits.background_per_project,
                                limits.background
                            ),
                        }));
                    }
                }
            }
        };
        place.ok_or_else(|| not_run(HookOutcome::Cancelled))
    }

    /// What running one hook's process produced, or why it never ran. `verified` is what
    /// the trust check read under `require`: a one-shot hook then runs those bytes.
    async fn run_entry(
        &self,
        entry: &Arc<HookEntry>,
        stdin: Bytes,
        verified: Option<&verify::Collected>,
    ) -> HookRun {
        let command = match runnable_command(entry) {
            Ok(command) => command,
            Err(message) => {
                return not_run(HookOutcome::Refused {
                    message: message.to_owned(),
                });
            }
        };
        // A policy runs in hookd's evaluator or not at all (its command only describes it).
        if entry.config.hook_type == HookType::Policy && self.policy_worker(entry).is_none() {
            return not_run(HookOutcome::Refused {
                message: POLICY_WITHOUT_EVALUATOR_ERROR.to_owned(),
            });
        }
        // The hook's place in its project's share (and the background share) first, then its
        // slot: no project, and no background work, can hold every slot.
        let _place = match self.take_place().await {
            Ok(place) => place,
            Err(run) => return run,
        };
        let slots = SlotSource {
            semaphore: &self.config.hook_slots,
            workers: &*self.config.workers,
            prewarm: &*self.config.prewarm,
            kill_grace: self.config.limits.kill_grace,
        };
        let timeout = Duration::from_millis(entry.config.timeout_ms());
        match entry.config.exec_mode() {
            ExecMode::OneShot {
                prewarm_idle_ms: None,
            } => {
                // A closed semaphore means the daemon is shutting down: the same as a
                // cancellation.
                let Some(permit) = slots.acquire(self.cancel).await else {
                    return not_run(HookOutcome::Cancelled);
                };
                let mut spec = self.spec(entry, command, stdin, timeout);
                // The memory files must stay open until the hook has exited: a shell reads
                // a sourced file as it goes.
                let mut _memfds = Vec::new();
                let run = if let Some(collected) = verified {
                    match verify::exec_line(collected) {
                        Ok(line) => {
                            spec.args = vec!["-c".to_owned(), line.line];
                            _memfds = line.memfds;
                        }
                        Err(err) => {
                            return not_run(HookOutcome::Refused {
                                message: err.to_string(),
                            });
                        }
                    }
                    // The verified line reads memory files through the shell: as written.
                    run_process(spec, &self.config.limits, self.cancel).await
                } else {
                    run_one_shot(spec, &self.config.limits, self.cancel).await
                };
                drop(permit);
                run
            }
            ExecMode::OneShot {
                prewarm_idle_ms: Some(idle_ms),
            } => {
                let request = PrewarmRequest {
                    key: self.process_key(entry, command),
                    stdin,
                    timeout,
                    idle: Duration::from_millis(idle_ms),
                    limits: &self.config.limits,
                    slots,
                    cancel: self.cancel,
                };
                self.config.prewarm.run(request).await
            }
            ExecMode::Persistent(settings) => {
                let request = WorkerRequest {
                    key: self.process_key(entry, command),
                    settings,
                    payload: stdin,
                    timeout,
                    limits: &self.config.limits,
                    slots,
                    cancel: self.cancel,
                };
                self.config.workers.run(request).await
            }
        }
    }

    /// What to spawn for `entry` (whose runnable command is `command`) in this firing.
    fn spec(
        &self,
        entry: &HookEntry,
        command: &str,
        stdin: Bytes,
        timeout: Duration,
    ) -> ProcessSpec {
        // The host of the hook's dialect decides what its shell is given and which variables
        // it sees (Gemini CLI's textual `$GEMINI_PROJECT_DIR` rewrite only for Gemini hooks).
        let dialect = entry.config.dialect();
        let (program, args) = match self.policy_worker(entry) {
            Some(policy) => policy,
            None => (
                dialect
                    .run()
                    .hook_shell()
                    .map_or_else(|| self.config.shell.clone(), PathBuf::from),
                vec![
                    "-c".to_owned(),
                    dialect.run().hook_command(command, &self.vars).into_owned(),
                ],
            ),
        };
        ProcessSpec {
            program,
            args,
            cwd: PathBuf::from(&self.request.base.cwd),
            env: self.config.envs.get(
                &self.request.env,
                &self.request.env_redaction,
                &self.vars,
                &self.request.state_token,
                dialect,
                &entry.config.env,
            ),
            stdin,
            timeout,
            max_data_bytes: entry.config.max_memory_bytes(),
        }
    }

    /// The evaluator's program and arguments for a policy hook (`None` for other hooks):
    /// its files resolved against the settings file that defines it, the digests the user
    /// trusted for a project policy, and the session's host and project.
    fn policy_worker(&self, entry: &HookEntry) -> Option<(PathBuf, Vec<String>)> {
        let program = self.config.policy_program.clone()?;
        let settings_file = entry.origin.path.clone().unwrap_or_default();
        let mut files = entry.config.policy_sources(&settings_file)?.into_iter();
        let policy = files.next()?;
        let trusted = match &entry.trust {
            HookTrust::Trusted { key } => key
                .scripts
                .iter()
                .map(|script| {
                    (
                        std::path::Path::new(&self.request.project_dir).join(&script.path),
                        script.sha256.clone(),
                    )
                })
                .collect(),
            _ => Vec::new(),
        };
        let spec = hookd_policy::WorkerSpec {
            sources: hookd_policy::Sources {
                policy,
                data: files.collect(),
            },
            trusted,
            context: hookd_policy::Context {
                host: self.request.host.to_owned(),
                project: self.request.project_dir.clone(),
            },
        };
        let mut args = vec![hookd_policy::worker::WORKER_FLAG.to_owned()];
        args.extend(spec.to_args());
        Some((program, args))
    }

    /// The process key of `entry` in this request: computed by its first run, then reused.
    fn process_key(&self, entry: &Arc<HookEntry>, command: &str) -> Arc<ProcessKey> {
        if let Some(key) = self.request.process_keys.get(entry) {
            return key;
        }
        let spec = self.spec(entry, command, Bytes::new(), Duration::ZERO);
        let key = Arc::new(ProcessKey::new(entry, &self.vars, &spec));
        self.request.process_keys.put(entry, &key);
        key
    }
}

/// What the trust policy says about one hook.
enum TrustVerdict {
    /// Spawn it; its record carries the warning, if any. Under `require` a trusted hook
    /// carries what was verified, for the run to use.
    Run {
        warning: Option<String>,
        verified: Option<Box<verify::Collected>>,
    },
    /// Do not spawn it, for this reason.
    Refuse { message: String },
}

/// Whether the hook reads the stdin payload (every hook but a builtin filter).
fn needs_payload(entry: &HookEntry) -> bool {
    entry.config.hook_type != HookType::Builtin
}

/// Texts up to this size are filtered in the event's own task; larger ones on the blocking
/// pool, so that a costly filter never holds the daemon's threads. Streamed chunks (in the
/// server) follow the same rule.
pub const INLINE_FILTER_BYTES: usize = 64 * 1024;

/// How many large texts are filtered on the blocking pool at once, daemon-wide; others wait
/// (within their hook's timeout) for a turn.
pub const MAX_BLOCKING_FILTERS: usize = 2;

static FILTER_PERMITS: Semaphore = Semaphore::const_new(MAX_BLOCKING_FILTERS);

/// Runs `work` (a builtin filter over a large text) on the blocking pool, waiting for one of
/// the [`MAX_BLOCKING_FILTERS`] turns first, and gives up after `timeout` (the wait for a turn
/// included): `None` then, or if `work` panicked. The turn is held until `work` returns,
/// even past the deadline (a thread cannot be stopped), so that abandoned filters never pile
/// up beyond the bound.
pub async fn run_filter_blocking<T, F>(timeout: Duration, work: F) -> Option<T>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    tokio::time::timeout(timeout, async move {
        let permit = FILTER_PERMITS.acquire().await.ok()?;
        tokio::task::spawn_blocking(move || {
            let done = work();
            drop(permit);
            done
        })
        .await
        .ok()
    })
    .await
    .ok()
    .flatten()
}

/// The text that stands in for a chunk whose redact filter `name` did not finish within
/// `timeout_ms`: the unfiltered text is never passed on (a redact filter fails closed).
pub fn withheld_text(name: &str, timeout_ms: u64) -> String {
    format!("[hookd: text withheld: redact filter {name:?} did not finish within {timeout_ms} ms]")
}

/// Makes the record of a builtin filter that did not finish replace the text with
/// [`withheld_text`] (after its failure policy was applied, whose decision it keeps).
pub fn withhold_text(result: &mut HookResult, timeout_ms: u64) {
    let text = withheld_text(&result.name, timeout_ms);
    let mut output = match result.output.take() {
        Some(Value::Object(output)) => output,
        _ => Map::new(),
    };
    output.insert("content".to_owned(), Value::String(text));
    result.output = Some(Value::Object(output));
    result.output_format = Some(OutputFormat::Json);
}

/// Runs a builtin filter (a `redact` hook) on a plain AfterModel firing: in this task for a
/// small text, else on the blocking pool within the hook's timeout. A filter that does not
/// finish in time is a timed-out hook, so its failure policy decides the answer, and the text
/// is withheld (see [`withhold_text`]).
async fn run_builtin_bounded(entry: &HookEntry, input: &Map<String, Value>) -> HookRun {
    let started = std::time::Instant::now();
    let (redactor, text) = match builtin_text(entry, input) {
        Ok(found) => found,
        Err(refused) => return refused,
    };
    if text.len() <= INLINE_FILTER_BYTES {
        return filter_text(&redactor, &text, started);
    }
    let timeout_ms = entry.config.timeout_ms();
    let text = text.into_owned();
    let filtered = run_filter_blocking(Duration::from_millis(timeout_ms), move || {
        filter_text(&redactor, &text, started)
    })
    .await;
    match filtered {
        Some(run) => run,
        None => HookRun {
            outcome: HookOutcome::TimedOut { timeout_ms },
            stdout: String::new(),
            stderr: String::new(),
            duration: started.elapsed(),
        },
    }
}

/// The filter and the text a builtin hook filters: the input's `content` when it is a string
/// (hookd's chunk text), else the text of its `llm_response` chunk. `Err` is the run of a hook that
/// cannot filter.
fn builtin_text<'i>(
    entry: &HookEntry,
    input: &'i Map<String, Value>,
) -> Result<(Arc<Redactor>, Cow<'i, str>), HookRun> {
    let redactor = match (&entry.builtin, entry.event) {
        (Some(redactor), HookEventName::AfterModel) => Arc::clone(redactor),
        (None, _) => {
            return Err(not_run(HookOutcome::Refused {
                message: BUILTIN_WITHOUT_FILTER_ERROR.to_owned(),
            }));
        }
        (Some(_), _) => {
            return Err(not_run(HookOutcome::Refused {
                message: BUILTIN_EVENT_ERROR.to_owned(),
            }));
        }
    };
    let text = match input.get("content") {
        Some(Value::String(content)) => Cow::Borrowed(content.as_str()),
        _ => Cow::Owned(
            input
                .get("llm_response")
                .map(chunk_text)
                .unwrap_or_default(),
        ),
    };
    Ok((redactor, text))
}

/// Filters one text: when the filter changes it, the run is a success whose stdout is
/// `{"content": "<filtered text>"}`, which replaces the chunk's text in the aggregate;
/// otherwise a success with no output. (Streams run their filters with state across chunks in
/// the server, not here.)
fn filter_text(redactor: &Redactor, text: &str, started: std::time::Instant) -> HookRun {
    let stdout = match redactor.redact_all(text) {
        Cow::Owned(redacted) if redacted != *text => {
            serde_json::json!({ "content": redacted }).to_string()
        }
        _ => String::new(),
    };
    HookRun {
        outcome: HookOutcome::Exited { code: 0 },
        stdout,
        stderr: String::new(),
        duration: started.elapsed(),
    }
}

/// The command a hook runs, or why it cannot run at all (as Gemini CLI words it).
fn runnable_command(entry: &HookEntry) -> Result<&str, &'static str> {
    match entry.config.hook_type {
        HookType::Runtime => Err(RUNTIME_HOOK_ERROR),
        // Builtin filters never get here (`run_builtin`); they run no command.
        HookType::Builtin => Err(BUILTIN_EVENT_ERROR),
        // A policy's command describes its files; the evaluator is what runs (`spec`).
        HookType::Command | HookType::Plugin | HookType::Policy => entry
            .config
            .command
            .as_deref()
            .filter(|command| !command.is_empty())
            .ok_or(MISSING_COMMAND_ERROR),
    }
}

/// The record of a hook that was never spawned.
fn not_run(outcome: HookOutcome) -> HookRun {
    HookRun {
        outcome,
        stdout: String::new(),
        stderr: String::new(),
        duration: Duration::ZERO,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hookd_core::trust::sha256_hex;

    use std::path::Path;
    use std::time::Instant;

    use hookd_core::model::{HookConfig, Origin, Source};
    use serde_json::json;

    const PATH: &str = "/usr/local/bin:/usr/bin:/bin";

    fn entry(hook_type: HookType, command: Option<&str>) -> Arc<HookEntry> {
        Arc::new(HookEntry {
            event: HookEventName::BeforeTool,
            config: HookConfig {
                hook_type,
                command: command.map(str::to_owned),
                name: None,
                description: None,
                timeout_ms: Some(30_000),
                env: Vec::new(),
                raw: Map::new(),
            },
            source: Source::User,
            origin: Origin::default(),
            matcher: None,
            sequential: false,
            enabled: true,
            trust: hookd_core::trust::HookTrust::NotRequired,
            builtin: None,
            identity: Default::default(),
        })
    }

    fn command(command: &str) -> Arc<HookEntry> {
        entry(HookType::Command, Some(command))
    }

    fn plan(hooks: Vec<Arc<HookEntry>>, sequential: bool) -> Plan {
        Plan {
            event: HookEventName::BeforeTool,
            hooks,
            sequential,
        }
    }

    fn request(cwd: &Path) -> FireRequest {
        let input = json!({"tool_name": "write_file", "tool_input": {"x": 0}});
        FireRequest {
            event: HookEventName::BeforeTool,
            input: input.as_object().cloned().unwrap_or_default(),
            base: BaseFields {
                session_id: "s-1".to_owned(),
                transcript_path: String::new(),
                cwd: cwd.to_str().expect("utf-8 temp dir").to_owned(),
                timestamp: "2026-01-01T00:00:00.000Z".to_owned(),
            },
            project_dir: cwd.to_str().expect("utf-8 temp dir").to_owned(),
            plans_dir: "/plans".to_owned(),
            env: Arc::new(vec![("PATH".to_owned(), PATH.to_owned())]),
            env_redaction: Arc::default(),
            serialized: Vec::new(),
            process_keys: ProcessKeys::default(),
            class: RunClass::Foreground,
            state_token: String::new(),
            host: "",
        }
    }

    fn config(slots: usize) -> RunnerConfig {
        RunnerConfig {
            hook_slots: Arc::new(Semaphore::new(slots)),
            shares: Arc::new(SlotShares::new(crate::shares::ShareLimits::for_slots(
                slots,
            ))),
            ..RunnerConfig::default()
        }
    }

    /// What a firing produced: the results and the order `on_result` saw them in.
    struct Fired {
        results: Vec<HookResult>,
        completion_order: Vec<usize>,
        elapsed: Duration,
    }

    async fn fire(plan: &Plan, request: &FireRequest, config: &RunnerConfig) -> Fired {
        fire_with_cancel(plan, request, config, &CancellationToken::new()).await
    }

    async fn fire_with_cancel(
        plan: &Plan,
        request: &FireRequest,
        config: &RunnerConfig,
        cancel: &CancellationToken,
    ) -> Fired {
        let mut completion_order = Vec::new();
        let started = Instant::now();
        let results = run_plan(plan, request, config, cancel, &mut |index, result| {
            assert_eq!(result.event, HookEventName::BeforeTool);
            completion_order.push(index);
        })
        .await;
        let elapsed = started.elapsed();
        assert_eq!(results.len(), plan.hooks.len());
        assert_eq!(completion_order.len(), plan.hooks.len());
        Fired {
            results,
            completion_order,
            elapsed,
        }
    }

    fn stdouts(results: &[HookResult]) -> Vec<&str> {
        results
            .iter()
            .map(|result| result.stdout.as_str())
            .collect()
    }

    #[tokio::test]
    async fn background_hooks_never_take_the_slots_a_client_waits_for() {
        let dir = tempfile::tempdir().expect("tempdir");
        // 4 slots: background may hold 2, one project's background 1, one project 3.
        let mut config = config(4);
        let mut limits = crate::shares::ShareLimits::for_slots(4);
        limits.background_wait = Duration::from_millis(300);
        config.shares = Arc::new(SlotShares::new(limits));
        let mut background = request(dir.path());
        background.class = RunClass::Background;
        let flood = plan(
            (0..4).map(|_| command("sleep 3; echo slept")).collect(),
            false,
        );
        let flooding = fire(&flood, &background, &config);
        let gate = async {
            // Let the flood take what it may first.
            tokio::time::sleep(Duration::from_millis(200)).await;
            let mut foreground = request(dir.path());
            foreground.project_dir = format!("{}/other", foreground.project_dir);
            fire(
                &plan(vec![command("echo gate")], false),
                &foreground,
                &config,
            )
            .await
        };
        let (flooded, gated) = tokio::join!(flooding, gate);
        assert_eq!(stdouts(&gated.results), ["gate\n"]);
        assert!(
            gated.elapsed < Duration::from_secs(2),
            "{:?}",
            gated.elapsed
        );
        // One sleeper got the project's background place; the others waited 300 ms and
        // were refused, not queued behind it for its 3 s.
        let slept = flooded
            .results
            .iter()
            .filter(|result| result.stdout == "slept\n")
            .count();
        let refused: Vec<_> = flooded
            .results
            .iter()
            .filter(|result| matches!(result.outcome, HookOutcome::Refused { .. }))
            .collect();
        assert_eq!((slept, refused.len()), (1, 3), "{:?}", flooded.results);
        let HookOutcome::Refused { message } = &refused[0].outcome else {
            unreachable!()
        };
        assert!(
            message.contains("no slot for background work within 300 ms"),
            "{message}"
        );
        assert_eq!(config.shares.held(), (0, 0, 0));
    }

    #[tokio::test]
    async fn parallel_hooks_run_at_once_and_report_in_plan_order() {
        let dir = tempfile::tempdir().expect("tempdir");
        let hooks = (0..5)
            .map(|i| command(&format!("sleep 1; echo {i}")))
            .collect();
        let fired = fire(&plan(hooks, false), &request(dir.path()), &config(16)).await;
        assert_eq!(stdouts(&fired.results), ["0\n", "1\n", "2\n", "3\n", "4\n"]);
        assert!(
            fired.elapsed < Duration::from_secs(4),
            "{:?}",
            fired.elapsed
        );
        let mut seen = fired.completion_order.clone();
        seen.sort_unstable();
        assert_eq!(seen, [0, 1, 2, 3, 4]);
    }

    #[tokio::test]
    async fn on_result_follows_completion_order() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fifo = dir.path().join("go");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo");
        assert!(status.success());
        // Hook 0 cannot finish before hook 1 has written to the fifo.
        let hooks = vec![
            command("read line < go; sleep 1; echo first"),
            command("echo go > go; echo second"),
        ];
        let fired = fire(&plan(hooks, false), &request(dir.path()), &config(16)).await;
        assert_eq!(stdouts(&fired.results), ["first\n", "second\n"]);
        assert_eq!(fired.completion_order, [1, 0]);
    }

    #[tokio::test]
    async fn hook_slots_cap_concurrent_processes() {
        // Each hook holds a lock directory for a second; overlapping hooks fail to take it.
        let dir = tempfile::tempdir().expect("tempdir");
        let hook = "mkdir lock || exit 9; sleep 1; rmdir lock";
        let hooks: Vec<_> = (0..3).map(|_| command(hook)).collect();
        let cases = [(1, true), (3, false)];
        for (slots, all_alone) in cases {
            let fired = fire(
                &plan(hooks.clone(), false),
                &request(dir.path()),
                &config(slots),
            )
            .await;
            let codes: Vec<_> = fired.results.iter().map(|r| r.exit_code).collect();
            assert_eq!(
                codes.iter().all(|code| *code == Some(0)),
                all_alone,
                "{slots} slots: {codes:?}"
            );
            let _ = std::fs::remove_dir(dir.path().join("lock"));
        }
    }

    #[tokio::test]
    async fn parallel_hooks_share_one_payload() {
        let dir = tempfile::tempdir().expect("tempdir");
        let hooks = (0..3).map(|_| command("cat")).collect();
        let fired = fire(&plan(hooks, false), &request(dir.path()), &config(16)).await;
        let expected = concat!(
            r#"{"session_id":"s-1","transcript_path":"","cwd":"CWD","#,
            r#""hook_event_name":"BeforeTool","timestamp":"2026-01-01T00:00:00.000Z","#,
            r#""tool_name":"write_file","tool_input":{"x":0}}"#
        )
        .replace("CWD", dir.path().to_str().expect("utf-8"));
        assert_eq!(stdouts(&fired.results), [expected.as_str(); 3]);
    }

    #[tokio::test]
    async fn serialized_fields_go_into_payloads_unless_the_input_was_chained() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut request = request(dir.path());
        // A marker in place of the input's value shows where the given text was used.
        request.serialized = vec![("tool_input", Arc::new(r#"{"x":"given"}"#.to_owned()))];
        let hooks = vec![
            // The first hook sees the given text; the second changes the input, so the third
            // sees the chained input serialised afresh.
            command("cat"),
            command(r#"echo '{"hookSpecificOutput":{"tool_input":{"a":1}}}'"#),
            command("cat"),
        ];
        let fired = fire(&plan(hooks, true), &request, &config(16)).await;
        assert!(
            fired.results[0]
                .stdout
                .contains(r#""tool_input":{"x":"given"}"#),
            "{}",
            fired.results[0].stdout
        );
        assert!(
            fired.results[2]
                .stdout
                .contains(r#""tool_input":{"x":0,"a":1}"#),
            "{}",
            fired.results[2].stdout
        );
    }

    #[tokio::test]
    async fn sequential_hooks_see_the_chained_input() {
        let dir = tempfile::tempdir().expect("tempdir");
        let hooks = vec![
            command(r#"echo '{"hookSpecificOutput":{"tool_input":{"a":1}}}'"#),
            // Echoing the payload back makes it this hook's (JSON) output.
            command("cat"),
            command("cat"),
        ];
        let fired = fire(&plan(hooks, true), &request(dir.path()), &config(16)).await;
        assert_eq!(fired.completion_order, [0, 1, 2]);
        let seen: Vec<Option<&Value>> = fired.results[1..]
            .iter()
            .map(|result| result.output.as_ref().and_then(|o| o.get("tool_input")))
            .collect();
        // Hook 1 saw the merged input; hook 1's own output has no hookSpecificOutput, so
        // hook 2 saw the same.
        let merged = json!({"x": 0, "a": 1});
        assert_eq!(seen, [Some(&merged), Some(&merged)]);
    }

    #[tokio::test]
    async fn sequential_plans_run_one_at_a_time() {
        let dir = tempfile::tempdir().expect("tempdir");
        let hook = "mkdir lock || exit 9; sleep 1; rmdir lock";
        let hooks: Vec<_> = (0..2).map(|_| command(hook)).collect();
        let fired = fire(&plan(hooks, true), &request(dir.path()), &config(16)).await;
        let codes: Vec<_> = fired.results.iter().map(|r| r.exit_code).collect();
        assert_eq!(codes, [Some(0), Some(0)]);
    }

    #[tokio::test]
    async fn hooks_that_cannot_run_are_refused_without_spawning() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cases = [
            (entry(HookType::Runtime, None), RUNTIME_HOOK_ERROR),
            (
                entry(HookType::Runtime, Some("echo hi")),
                RUNTIME_HOOK_ERROR,
            ),
            (entry(HookType::Plugin, None), MISSING_COMMAND_ERROR),
            (entry(HookType::Command, Some("")), MISSING_COMMAND_ERROR),
        ];
        for (hook, message) in cases {
            // No slots at all: a hook that tried to spawn would wait forever.
            let fired = fire(&plan(vec![hook], false), &request(dir.path()), &config(0)).await;
            let result = &fired.results[0];
            assert_eq!(
                (&result.outcome, result.duration, result.error.as_deref()),
                (
                    &HookOutcome::Refused {
                        message: message.to_owned()
                    },
                    Duration::ZERO,
                    Some(message)
                )
            );
        }
    }

    #[tokio::test]
    async fn commands_are_expanded_and_get_the_hook_environment() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut hook = (*command("echo $GEMINI_SESSION_ID \"$GEMINI_PLANS_DIR\" \"$FOO\"")).clone();
        hook.config.env = vec![("FOO".to_owned(), "bar".to_owned())];
        let fired = fire(
            &plan(vec![Arc::new(hook)], false),
            &request(dir.path()),
            &config(16),
        )
        .await;
        assert_eq!(stdouts(&fired.results), ["s-1 /plans bar\n"]);
    }

    #[tokio::test]
    async fn each_hook_gets_its_own_hosts_variables_and_command_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        let project = dir.path().to_str().expect("utf-8");
        let line =
            "echo '$CLAUDE_PROJECT_DIR'; env | grep -E '^(GEMINI|CLAUDE)_' | sort | tr '\\n' ' '";
        // (dialect, what the hook prints)
        let cases = [
            (
                "gemini",
                format!(
                    "{project}\nCLAUDE_PROJECT_DIR={project} GEMINI_CWD={project} \
                     GEMINI_PLANS_DIR=/plans GEMINI_PROJECT_DIR={project} GEMINI_SESSION_ID=s-1 "
                ),
            ),
            (
                "claude",
                format!("$CLAUDE_PROJECT_DIR\nCLAUDE_PROJECT_DIR={project} "),
            ),
            ("codex", "$CLAUDE_PROJECT_DIR\n".to_owned()),
        ];
        for (dialect, expected) in cases {
            let mut hook = (*command(line)).clone();
            hook.config
                .raw
                .insert("dialect".to_owned(), Value::from(dialect));
            let mut request = request(dir.path());
            // A relayed event's base environment is the relaying host's hook environment.
            request.env = Arc::new(vec![
                ("PATH".to_owned(), PATH.to_owned()),
                ("GEMINI_CWD".to_owned(), "/relay".to_owned()),
                ("CLAUDE_PROJECT_DIR".to_owned(), "/relay".to_owned()),
            ]);
            let fired = fire(&plan(vec![Arc::new(hook)], false), &request, &config(4)).await;
            assert_eq!(stdouts(&fired.results), [expected.as_str()], "{dialect}");
        }
    }

    #[tokio::test]
    async fn hooks_run_in_the_session_directory_with_their_timeout() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut slow = (*command("sleep 30")).clone();
        slow.config.timeout_ms = Some(500);
        let hooks = vec![command("pwd"), Arc::new(slow)];
        let fired = fire(&plan(hooks, false), &request(dir.path()), &config(16)).await;
        let cwd = format!("{}\n", dir.path().display());
        assert_eq!(fired.results[0].stdout, cwd);
        assert_eq!(
            fired.results[1].outcome,
            HookOutcome::TimedOut { timeout_ms: 500 }
        );
        assert!(fired.elapsed < Duration::from_secs(10));
    }

    #[tokio::test]
    async fn cancellation_reaches_running_and_queued_hooks() {
        let dir = tempfile::tempdir().expect("tempdir");
        let hooks: Vec<_> = (0..3).map(|_| command("sleep 30")).collect();
        for sequential in [false, true] {
            let plan = plan(hooks.clone(), sequential);
            let request = request(dir.path());
            let config = config(1);
            let cancel = CancellationToken::new();
            // `join!` polls the firing first, so the hooks are started or queued when the
            // token fires.
            let (fired, ()) =
                tokio::join!(fire_with_cancel(&plan, &request, &config, &cancel), async {
                    cancel.cancel()
                });
            let outcomes: Vec<_> = fired.results.iter().map(|r| &r.outcome).collect();
            assert_eq!(
                outcomes,
                [&HookOutcome::Cancelled; 3],
                "sequential: {sequential}"
            );
            assert!(fired.elapsed < Duration::from_secs(10));
        }
    }

    #[tokio::test]
    async fn a_paused_hook_is_not_spawned_and_fails_by_its_policy() {
        use hookd_core::breaker::BreakerSettings;
        use hookd_core::policy::FailureKind;
        let dir = tempfile::tempdir().expect("tempdir");
        let mut hook = (*command("echo run >> runs; exit 1")).clone();
        hook.config
            .raw
            .insert("on_failure".to_owned(), Value::from("deny"));
        let hook = Arc::new(hook);
        let config = RunnerConfig {
            breakers: Arc::new(Breakers::new(BreakerSettings {
                threshold: 2,
                backoff: Duration::from_secs(3600),
                max_backoff: Duration::from_secs(3600),
            })),
            ..config(4)
        };
        let runs = || {
            std::fs::read_to_string(dir.path().join("runs"))
                .unwrap_or_default()
                .lines()
                .count()
        };
        // (runs so far after this firing, paused?)
        for (expected_runs, paused) in [(1, false), (2, false), (2, true), (2, true)] {
            let results = run_plan(
                &plan(vec![Arc::clone(&hook)], false),
                &request(dir.path()),
                &config,
                &CancellationToken::new(),
                &mut |_, _| {},
            )
            .await;
            let result = &results[0];
            assert_eq!(runs(), expected_runs);
            let decision = result
                .output
                .as_ref()
                .and_then(|output| output.get("decision"));
            assert_eq!(decision, Some(&Value::from("deny")), "{result:?}");
            if paused {
                assert_eq!(result.failure, Some(FailureKind::Refused));
                assert!(
                    matches!(&result.outcome, HookOutcome::Refused { message } if message.contains("paused by the circuit breaker after 2 failures")),
                    "{:?}",
                    result.outcome
                );
            } else {
                assert_eq!(result.failure, Some(FailureKind::ExitedWithoutDecision));
            }
        }
        assert_eq!(config.breakers.paused().len(), 1);
        assert_eq!(
            (config.breakers.pauses(), config.breakers.skipped()),
            (1, 2)
        );
    }

    #[tokio::test]
    async fn failure_policy_applies_to_streamed_and_returned_records() {
        use hookd_core::policy::FailureKind;
        let dir = tempfile::tempdir().expect("tempdir");
        // (command, the hook's on_failure, the daemon's default, failure, decision); every
        // hook is named `gate`, so the reason names it.
        let cases = [
            (
                "echo boom >&2; exit 1",
                None,
                FailurePolicy::Allow,
                Some(FailureKind::ExitedWithoutDecision),
                Some("allow"),
            ),
            (
                "echo boom >&2; exit 1",
                Some("deny"),
                FailurePolicy::Allow,
                Some(FailureKind::ExitedWithoutDecision),
                Some("deny"),
            ),
            // The daemon's default applies to a hook without the key...
            (
                "echo boom >&2; exit 1",
                None,
                FailurePolicy::Ask,
                Some(FailureKind::ExitedWithoutDecision),
                Some("ask"),
            ),
            // ... and an invalid value, and the hook's own key overrides it.
            (
                "echo boom >&2; exit 1",
                Some("DENY"),
                FailurePolicy::Ask,
                Some(FailureKind::ExitedWithoutDecision),
                Some("ask"),
            ),
            (
                "echo boom >&2; exit 1",
                Some("allow"),
                FailurePolicy::Deny,
                Some(FailureKind::ExitedWithoutDecision),
                Some("allow"),
            ),
            (
                "sleep 30",
                Some("deny"),
                FailurePolicy::Allow,
                Some(FailureKind::TimedOut),
                Some("deny"),
            ),
            // A hook that decided is never touched.
            (
                r#"echo '{"decision":"allow"}'"#,
                Some("deny"),
                FailurePolicy::Deny,
                None,
                Some("allow"),
            ),
        ];
        for (script, on_failure, default, failure, decision) in cases {
            let mut hook = (*command(script)).clone();
            hook.config.name = Some("gate".to_owned());
            hook.config.timeout_ms = Some(500);
            if let Some(on_failure) = on_failure {
                hook.config
                    .raw
                    .insert("on_failure".to_owned(), Value::from(on_failure));
            }
            let config = RunnerConfig {
                default_on_failure: default,
                ..config(16)
            };
            let mut streamed = Vec::new();
            let results = run_plan(
                &plan(vec![Arc::new(hook)], false),
                &request(dir.path()),
                &config,
                &CancellationToken::new(),
                &mut |_, result| streamed.push(result.clone()),
            )
            .await;
            assert_eq!(streamed, results, "{script}");
            let result = &results[0];
            let got = result
                .output
                .as_ref()
                .and_then(|output| output.get("decision"))
                .and_then(Value::as_str);
            let what = format!("{script} with {on_failure:?} over {default}");
            assert_eq!((result.failure, got), (failure, decision), "{what}");
            if on_failure == Some("deny") && failure.is_some() {
                let reason = result.output.as_ref().and_then(|o| o.get("reason"));
                let reason = reason.and_then(Value::as_str).unwrap_or_default();
                assert!(reason.starts_with("gate failed ("), "{what}: {reason}");
            }
        }
    }

    #[tokio::test]
    async fn a_plan_only_firing_runs_nothing_and_each_hook_decides_by_its_policy() {
        let dir = tempfile::tempdir().expect("tempdir");
        let marker = dir.path().join("ran");
        let script = format!(
            "touch {}; echo '{{\"decision\":\"allow\"}}'",
            marker.display()
        );
        // (the hook's on_failure, the default, the decision)
        let cases = [
            (Some("deny"), FailurePolicy::Allow, "deny"),
            (None, FailurePolicy::Allow, "allow"),
            (None, FailurePolicy::Deny, "deny"),
            (Some("allow"), FailurePolicy::Deny, "allow"),
        ];
        for (on_failure, default, decision) in cases {
            let mut hook = (*command(&script)).clone();
            hook.config.name = Some("gate".to_owned());
            if let Some(on_failure) = on_failure {
                hook.config
                    .raw
                    .insert("on_failure".to_owned(), Value::from(on_failure));
            }
            let config = RunnerConfig {
                default_on_failure: default,
                plan_only: Some(Arc::from("hookd did not answer in time")),
                ..config(4)
            };
            let fired = fire(
                &plan(vec![Arc::new(hook)], false),
                &request(dir.path()),
                &config,
            )
            .await;
            let result = &fired.results[0];
            let got = result
                .output
                .as_ref()
                .and_then(|output| output.get("decision"))
                .and_then(Value::as_str);
            // A failure allowed by its policy carries no decision: the hook said nothing.
            assert_eq!(
                got.unwrap_or("allow"),
                decision,
                "{on_failure:?} over {default}"
            );
            assert!(
                result
                    .error
                    .as_deref()
                    .unwrap_or_default()
                    .contains("did not answer in time"),
                "{result:?}"
            );
        }
        assert!(!marker.exists(), "a plan-only firing started a hook");
    }

    #[tokio::test]
    async fn project_hook_trust_gates_under_require_and_warns_once_under_warn() {
        use hookd_core::trust::{ScriptDigest, TrustGap};
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("g.sh"), "echo ran\n").expect("write script");
        let project = dir.path().to_str().expect("utf-8 temp dir").to_owned();
        let key = |contents: &str| TrustKey {
            name: "guard".to_owned(),
            command: "bash g.sh".to_owned(),
            scripts: vec![ScriptDigest {
                path: "g.sh".to_owned(),
                sha256: sha256_hex(contents.as_bytes()),
            }],
            ..TrustKey::default()
        };
        let untrusted = HookTrust::Untrusted {
            key: key("echo ran\n"),
            gap: TrustGap::New,
        };
        let trusted = HookTrust::Trusted {
            key: key("echo ran\n"),
        };
        // Trusted when the registry was built, edited since.
        let stale = HookTrust::Trusted {
            key: key("echo old\n"),
        };
        let refused = |text: &str| Some(text.replace("DIR", &project));
        // (trust, policy, error, warnings of two firings)
        let cases = [
            (
                HookTrust::NotRequired,
                ProjectHookPolicy::Require,
                None,
                [false, false],
            ),
            (
                trusted.clone(),
                ProjectHookPolicy::Require,
                None,
                [false, false],
            ),
            (
                untrusted.clone(),
                ProjectHookPolicy::Require,
                refused(
                    "project hook \"guard\" was not run: it is not trusted (project_hooks = \
                     require); review it, then run `hookctl trust --cwd DIR`",
                ),
                [false, false],
            ),
            (
                stale.clone(),
                ProjectHookPolicy::Require,
                refused(
                    "project hook \"guard\" was not run: its script g.sh changed since it was \
                     trusted (project_hooks = require); review it, then run `hookctl trust \
                     --cwd DIR`",
                ),
                [false, false],
            ),
            (untrusted, ProjectHookPolicy::Warn, None, [true, false]),
            (stale, ProjectHookPolicy::Warn, None, [false, false]),
        ];
        for (trust, policy, error, warnings) in cases {
            let mut hook = (*command("bash g.sh")).clone();
            hook.config.name = Some("guard".to_owned());
            hook.source = Source::Project;
            hook.trust = trust.clone();
            let config = RunnerConfig {
                project_hooks: policy,
                ..config(16)
            };
            let plan = plan(vec![Arc::new(hook)], false);
            let mut seen = Vec::new();
            for _ in 0..2 {
                let fired = fire(&plan, &request(dir.path()), &config).await;
                let result = &fired.results[0];
                let what = format!("{trust:?} under {policy}");
                assert_eq!(result.error, error, "{what}");
                match &error {
                    Some(message) => assert_eq!(
                        result.outcome,
                        HookOutcome::Refused {
                            message: message.clone()
                        },
                        "{what}"
                    ),
                    None => assert_eq!(result.stdout, "ran\n", "{what}"),
                }
                if let Some(warning) = &result.warning {
                    assert!(
                        warning.starts_with("project hook \"guard\" ran, but it is not trusted")
                    );
                }
                seen.push(result.warning.is_some());
            }
            assert_eq!(seen, warnings, "{trust:?} under {policy}");
        }
    }

    #[tokio::test]
    async fn drop_fields_leave_keys_out_of_that_hooks_payload_only() {
        let dir = tempfile::tempdir().expect("tempdir");
        let echo = |drop: Option<Value>| {
            let mut hook = (*command("cat >&2")).clone();
            if let Some(drop) = drop {
                hook.config.raw.insert("drop_fields".to_owned(), drop);
            }
            hook.config.name = Some(format!("echo-{}", hook.config.raw.len()));
            Arc::new(hook)
        };
        let plan = plan(
            vec![
                echo(None),
                echo(Some(json!(["tool_input", "transcript_path"]))),
            ],
            false,
        );
        let fired = fire(&plan, &request(dir.path()), &config(4)).await;
        let payloads: Vec<Value> = fired
            .results
            .iter()
            .map(|result| serde_json::from_str(&result.stderr).expect("the payload"))
            .collect();
        assert_eq!(payloads[0]["tool_input"], json!({"x": 0}));
        assert!(payloads[0].get("transcript_path").is_some());
        assert_eq!(payloads[1]["tool_name"], "write_file");
        assert_eq!(payloads[1]["hook_event_name"], "BeforeTool");
        assert!(payloads[1].get("tool_input").is_none(), "{}", payloads[1]);
        assert!(
            payloads[1].get("transcript_path").is_none(),
            "{}",
            payloads[1]
        );
    }

    #[tokio::test]
    async fn claude_dialect_hooks_read_claude_payloads_and_block_by_claude_rules() {
        let dir = tempfile::tempdir().expect("tempdir");
        // Blocks (Claude Code's exit code 2, reason on stderr) only when it was given Claude's
        // event and tool names; exit 1 is a non-blocking error in Claude Code's rules.
        let script = r#"input=$(cat); case "$input" in *'"PreToolUse"'*) ;; *) exit 0;; esac; \
            case "$input" in *'"tool_name":"Write"'*) echo "no writes here" >&2; exit 2;; esac; \
            exit 1"#;
        let hook = |raw: Value| {
            let mut hook = (*command(script)).clone();
            hook.config.name = Some("claude-gate".to_owned());
            hook.config.raw = raw.as_object().cloned().unwrap_or_default();
            Arc::new(hook)
        };
        let config = config(4);
        // (raw entry, tool name, decision, blocking?)
        let cases = [
            (
                json!({"dialect": "claude"}),
                "write_file",
                Some("deny"),
                true,
            ),
            (json!({"dialect": "claude"}), "read_file", None, false),
            // The same script as a Gemini hook sees BeforeTool: it exits 0 with no output.
            (json!({}), "write_file", None, false),
        ];
        for (raw, tool, decision, blocking) in cases {
            let mut request = request(dir.path());
            request
                .input
                .insert("tool_name".to_owned(), Value::from(tool));
            let plan = plan(vec![hook(raw.clone())], false);
            let result = fire(&plan, &request, &config).await.results.remove(0);
            let found = result
                .output
                .as_ref()
                .and_then(|output| output.get("decision"))
                .and_then(Value::as_str);
            if blocking {
                assert_eq!(found, decision, "{raw} {tool}: {result:?}");
                let reason = result.output.as_ref().map(|o| o["reason"].to_string());
                assert!(
                    reason
                        .as_deref()
                        .is_some_and(|r| r.contains("no writes here")),
                    "{raw} {tool}: {result:?}"
                );
            } else {
                assert!(
                    !matches!(found, Some("deny" | "block")),
                    "{raw} {tool}: {result:?}"
                );
            }
        }
    }

    #[tokio::test]
    async fn exec_modes_dispatch_and_failure_policy_applies_to_workers() {
        use hookd_core::policy::FailureKind;
        let dir = tempfile::tempdir().expect("tempdir");
        // Answers with its pid; the second request of each worker gets a line that is not
        // JSON. A one-shot or pre-warmed run reads its one line (which has no newline) and
        // answers once.
        let script = r#"i=0; while IFS= read -r line || [ -n "$line" ]; do i=$((i+1)); \
            if [ $i = 2 ]; then echo oops; else \
            printf '{"decision":"deny","reason":"%d"}\n' $$; fi; done"#;
        let hook = |raw: Value| {
            let mut hook = (*command(script)).clone();
            hook.config.name = Some("gate".to_owned());
            hook.config.timeout_ms = Some(5_000);
            hook.config.raw = raw.as_object().cloned().unwrap_or_default();
            hook.config
                .raw
                .insert("on_failure".to_owned(), Value::from("deny"));
            Arc::new(hook)
        };
        let config = config(16);
        let fire_once = |hook: Arc<HookEntry>| {
            let plan = plan(vec![hook], false);
            let request = request(dir.path());
            let config = &config;
            async move { fire(&plan, &request, config).await.results.remove(0) }
        };
        let reason = |result: &HookResult| {
            let output = result.output.as_ref().expect("an output");
            (
                output["decision"].as_str().unwrap_or_default().to_owned(),
                output["reason"].as_str().unwrap_or_default().to_owned(),
            )
        };

        let worker = hook(json!({"mode": "persistent"}));
        let first = fire_once(Arc::clone(&worker)).await;
        assert!(first.success && first.output.is_some(), "{first:?}");
        let (decision, pid) = reason(&first);
        assert_eq!(decision, "deny");
        // The bad answer is a failure without a decision, and on_failure: deny blocks.
        let second = fire_once(Arc::clone(&worker)).await;
        assert_eq!(second.failure, Some(FailureKind::ExitedWithoutDecision));
        assert_eq!(second.outcome, HookOutcome::Exited { code: 1 });
        let (decision, why) = reason(&second);
        assert_eq!(decision, "deny");
        assert!(why.starts_with("gate failed ("), "{why}");
        assert!(
            second
                .stderr
                .contains("the worker answered with a line that is not JSON")
        );
        // A new worker serves the next request.
        let third = fire_once(Arc::clone(&worker)).await;
        let (_, new_pid) = reason(&third);
        assert_ne!(new_pid, pid);
        assert_eq!(config.workers.live_workers(), 1);

        // A one-shot and a pre-warmed hook run the same script once per event.
        for raw in [json!({}), json!({"prewarm": true})] {
            let pids: Vec<String> = [
                fire_once(hook(raw.clone())).await,
                fire_once(hook(raw.clone())).await,
            ]
            .iter()
            .map(|result| reason(result).1)
            .collect();
            assert_ne!(pids[0], pids[1], "{raw}");
        }
        tokio::time::timeout(Duration::from_secs(10), config.shutdown())
            .await
            .expect("shutdown is bounded");
        assert_eq!(config.workers.live_workers(), 0);
        assert_eq!(config.prewarm.spares(), 0);
    }

    #[tokio::test]
    async fn a_request_computes_each_process_key_once_and_its_clones_find_the_same_worker() {
        let dir = tempfile::tempdir().expect("tempdir");
        let config = config(4);
        let worker = {
            let mut entry = (*command(
                r#"while read -r line; do printf '{"systemMessage":"%s"}\n' "$$"; done"#,
            ))
            .clone();
            entry.config.raw = json!({"mode": "persistent"})
                .as_object()
                .cloned()
                .unwrap_or_default();
            Arc::new(entry)
        };
        let plan = plan(vec![worker], false);
        let pid = |fired: &Fired| {
            let output = fired.results[0].output.as_ref().expect("an output");
            output["systemMessage"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        };
        let request = request(dir.path());
        let first = fire(&plan, &request, &config).await;
        let second = fire(&plan, &request, &config).await;
        assert_eq!(pid(&first), pid(&second));
        assert!(!pid(&first).is_empty(), "{:?}", first.results);
        assert_eq!(
            format!("{:?}", request.process_keys),
            "ProcessKeys { known: 1 }"
        );
        // A clone starts with no keys, computes an equal one and reaches the same worker.
        let copy = request.clone();
        assert_eq!(
            format!("{:?}", copy.process_keys),
            "ProcessKeys { known: 0 }"
        );
        let third = fire(&plan, &copy, &config).await;
        assert_eq!(pid(&third), pid(&first));
        assert_eq!(config.workers.live_workers(), 1);
        tokio::time::timeout(Duration::from_secs(10), config.shutdown())
            .await
            .expect("shutdown is bounded");
    }

    #[tokio::test]
    async fn other_after_model_hooks_see_the_filtered_text() {
        use hookd_core::redact::Redactor;
        let dir = tempfile::tempdir().expect("tempdir");
        let raw = json!({"builtin": "redact"});
        let raw = raw.as_object().cloned().unwrap_or_default();
        let mut filter = (*entry(HookType::Builtin, None)).clone();
        filter.event = HookEventName::AfterModel;
        filter.builtin = Some(Arc::new(
            Redactor::from_raw(&raw).expect("the default filter"),
        ));
        filter.config.raw = raw;
        // The hook writes its whole stdin where the test can read it.
        let mut seen = (*command("cat > seen.json")).clone();
        seen.event = HookEventName::AfterModel;
        let key = "AKIAABCDEFGHIJKLMNOP";
        for sequential in [false, true] {
            let mut request = request(dir.path());
            request.event = HookEventName::AfterModel;
            let input = json!({"llm_request": {"model": "m"}, "llm_response":
                {"candidates": [{"content": {"role": "model", "parts": [format!("key {key}")]}}]}});
            request.input = input.as_object().cloned().unwrap_or_default();
            let plan = Plan {
                event: HookEventName::AfterModel,
                hooks: vec![Arc::new(filter.clone()), Arc::new(seen.clone())],
                sequential,
            };
            let mut order = Vec::new();
            let results = run_plan(
                &plan,
                &request,
                &config(4),
                &CancellationToken::new(),
                &mut |index, _| order.push(index),
            )
            .await;
            assert_eq!(order, [0, 1], "sequential {sequential}");
            assert!(results.iter().all(|result| result.success), "{results:?}");
            let stdin: Value = serde_json::from_str(
                &std::fs::read_to_string(dir.path().join("seen.json")).expect("the hook ran"),
            )
            .expect("json");
            let redacted = "key [REDACTED:aws-access-key-id]";
            assert_eq!(stdin["content"], redacted, "{stdin}");
            assert_eq!(chunk_text(&stdin["llm_response"]), redacted, "{stdin}");
            assert!(!stdin.to_string().contains(key), "{stdin}");
        }
    }

    #[tokio::test]
    async fn a_filter_that_misses_its_deadline_withholds_the_text() {
        use hookd_core::redact::Redactor;
        let dir = tempfile::tempdir().expect("tempdir");
        let patterns: Vec<Value> = (0..12)
            .map(|i| json!({"name": format!("p{i}"), "regex": format!(r"(\w+\s?){{3}}x{i}")}))
            .collect();
        let secret = "AKIAABCDEFGHIJKLMNOP";
        let text = format!("{}{secret}", "héllo wörld ab1 x ".repeat(200 * 1024));
        // (on_failure, decision)
        let cases = [("allow", None), ("deny", Some(json!("deny")))];
        for (on_failure, decision) in cases {
            let raw = json!({"builtin": "redact", "patterns": patterns, "on_failure": on_failure});
            let raw = raw.as_object().cloned().unwrap_or_default();
            let mut filter = (*entry(HookType::Builtin, None)).clone();
            filter.event = HookEventName::AfterModel;
            filter.config.name = Some("slow".to_owned());
            filter.config.timeout_ms = Some(1);
            filter.builtin = Some(Arc::new(Redactor::from_raw(&raw).expect("the filter")));
            filter.config.raw = raw;
            let mut request = request(dir.path());
            request.event = HookEventName::AfterModel;
            request.input = json!({"content": text})
                .as_object()
                .cloned()
                .unwrap_or_default();
            let plan = Plan {
                event: HookEventName::AfterModel,
                hooks: vec![Arc::new(filter)],
                sequential: false,
            };
            let results = run_plan(
                &plan,
                &request,
                &config(0),
                &CancellationToken::new(),
                &mut |_, _| {},
            )
            .await;
            let result = &results[0];
            assert_eq!(result.outcome, HookOutcome::TimedOut { timeout_ms: 1 });
            let output = result.output.as_ref().expect("an output");
            let withheld = withheld_text("slow", 1);
            assert_eq!(
                output.get("content"),
                Some(&json!(withheld)),
                "{on_failure}"
            );
            assert_eq!(output.get("decision").cloned(), decision, "{on_failure}");
            let aggregate = hookd_core::aggregate::aggregate(plan.event, &results, &request.input);
            let carried = aggregate
                .final_output
                .as_ref()
                .and_then(|output| output.pointer("/hookSpecificOutput/llm_response"))
                .map(chunk_text);
            assert_eq!(carried.as_deref(), Some(withheld.as_str()), "{on_failure}");
        }
    }

    #[tokio::test]
    async fn builtin_filters_run_in_process_and_replace_the_chunk() {
        use hookd_core::redact::Redactor;
        let dir = tempfile::tempdir().expect("tempdir");
        let raw = json!({"builtin": "redact"});
        let raw = raw.as_object().cloned().unwrap_or_default();
        let redactor = Arc::new(Redactor::from_raw(&raw).expect("the default filter"));
        let mut filter = (*entry(HookType::Builtin, None)).clone();
        filter.event = HookEventName::AfterModel;
        filter.config.name = Some("redact".to_owned());
        filter.config.raw = raw;
        filter.builtin = Some(redactor);
        let key = "AKIAABCDEFGHIJKLMNOP";
        let chunk =
            |text: &str| json!({"candidates": [{"content": {"role": "model", "parts": [text]}}]});
        // (input, the filter's stdout, the chunk the aggregate carries)
        let redacted = "key [REDACTED:aws-access-key-id] here";
        let cases = [
            (
                json!({"llm_response": chunk(&format!("key {key} here"))}),
                json!({"content": redacted}).to_string(),
                Some(redacted),
            ),
            // chunk text: `content`, when the client sent it, is what is filtered.
            (
                json!({"llm_response": chunk("other"), "content": format!("key {key} here")}),
                json!({"content": redacted}).to_string(),
                Some(redacted),
            ),
            (
                json!({"llm_response": {"text": format!("key {key} here")}}),
                json!({"content": redacted}).to_string(),
                Some(redacted),
            ),
            (
                json!({"llm_response": chunk("nothing secret")}),
                String::new(),
                None,
            ),
            (json!({}), String::new(), None),
        ];
        for (input, stdout, carried) in cases {
            let mut request = request(dir.path());
            request.event = HookEventName::AfterModel;
            request.input = input.as_object().cloned().unwrap_or_default();
            let plan = Plan {
                event: HookEventName::AfterModel,
                hooks: vec![Arc::new(filter.clone())],
                sequential: false,
            };
            // No hook slot at all: a filter that needed one would wait forever.
            let results = tokio::time::timeout(
                Duration::from_secs(10),
                run_plan(
                    &plan,
                    &request,
                    &config(0),
                    &CancellationToken::new(),
                    &mut |_, _| {},
                ),
            )
            .await
            .expect("no process, no slot");
            let result = &results[0];
            assert_eq!(result.outcome, HookOutcome::Exited { code: 0 }, "{input}");
            assert!(result.success && result.failure.is_none(), "{input}");
            assert_eq!(result.stdout, stdout, "{input}");
            let aggregate = hookd_core::aggregate::aggregate(plan.event, &results, &request.input);
            let response = aggregate
                .final_output
                .as_ref()
                .and_then(|output| output.pointer("/hookSpecificOutput/llm_response"));
            let text = response.map(chunk_text);
            assert_eq!(text.as_deref(), carried, "{input}: {aggregate:?}");
        }

        // Without a compiled filter, or outside AfterModel, it is refused.
        let mut unfiltered = filter.clone();
        unfiltered.builtin = None;
        let mut elsewhere = filter.clone();
        elsewhere.event = HookEventName::BeforeTool;
        let cases = [
            (unfiltered, BUILTIN_WITHOUT_FILTER_ERROR),
            (elsewhere, BUILTIN_EVENT_ERROR),
        ];
        for (hook, message) in cases {
            let plan = plan(vec![Arc::new(hook)], false);
            let results = run_plan(
                &plan,
                &request(dir.path()),
                &config(0),
                &CancellationToken::new(),
                &mut |_, _| {},
            )
            .await;
            assert_eq!(
                results[0].outcome,
                HookOutcome::Refused {
                    message: message.to_owned()
                }
            );
        }
    }

    #[test]
    fn run_plan_can_be_spawned() {
        fn assert_send<T: Send>(_: &T) {}
        let request = request(Path::new("/"));
        let config = RunnerConfig::default();
        let cancel = CancellationToken::new();
        let plan = plan(Vec::new(), false);
        let mut on_result = |_: usize, _: &HookResult| {};
        assert_send(&run_plan(&plan, &request, &config, &cancel, &mut on_result));
    }
}
