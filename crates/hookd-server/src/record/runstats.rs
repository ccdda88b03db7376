//! The counters behind the `stats` request: what ran since the daemon started, per hook, per
//! event, per client name and per relaying host.
//!
//! Everything is bounded: at most [`MAX_HOOKS`] hooks and [`MAX_CLIENTS`] client names are
//! kept apart (later ones are counted under their event, or under the client name
//! `(other)`), each keeps the durations of its last [`WINDOW`] runs for the percentiles, and
//! a last error is cut to [`MAX_ERROR_CHARS`] characters. Runs with hooks take one short lock;
//! events without hooks only touch their client's atomic counter.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use hookd_core::aggregate::Aggregate;
use hookd_core::dialect::Dialect;
use hookd_core::{HookEventName, HookOutcome, HookResult};
use hookd_protocol::{
    ClientStats, ConnectedClient, EventStats, HookStats, RelayStats, RequestId, StatsResponse,
};
use serde_json::Value;

/// The most hooks whose runs are kept apart.
pub(crate) const MAX_HOOKS: usize = 1024;
/// The most client names kept apart.
pub(crate) const MAX_CLIENTS: usize = 256;
/// Runs whose durations each entry keeps for its percentiles.
pub(crate) const WINDOW: usize = 1024;
/// The longest last error kept, in characters.
pub(crate) const MAX_ERROR_CHARS: usize = 500;
/// The longest client name kept, in characters.
pub(crate) const MAX_CLIENT_NAME_CHARS: usize = 128;
/// The name the clients beyond [`MAX_CLIENTS`] are counted under.
const OTHER_CLIENTS: &str = "(other)";

/// One client name's counters; each connection holds its entry.
#[derive(Debug, Default)]
pub(crate) struct ClientEntry {
    /// The name, as given in the hello (cut to [`MAX_CLIENT_NAME_CHARS`]).
    pub(crate) name: Arc<str>,
    connections: AtomicU64,
    connections_total: AtomicU64,
    events: AtomicU64,
    runs: AtomicU64,
}

impl ClientEntry {
    /// Counts one event request (or chunk) answered for this client.
    pub(crate) fn count_event(&self) {
        self.events.fetch_add(1, Ordering::Relaxed);
    }
}

/// A connection's hold on its client entry: counts the connection open while it lives.
pub(crate) struct ClientHandle {
    entry: Arc<ClientEntry>,
}

impl ClientHandle {
    /// The entry.
    pub(crate) fn entry(&self) -> &Arc<ClientEntry> {
        &self.entry
    }
}

impl Drop for ClientHandle {
    fn drop(&mut self) {
        let _ = self
            .entry
            .connections
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |open| {
                Some(open.saturating_sub(1))
            });
    }
}

/// The most recent durations of an entry, in microseconds.
#[derive(Debug, Default)]
struct Window(VecDeque<u64>);

impl Window {
    fn push(&mut self, duration: Duration) {
        if self.0.len() == WINDOW {
            self.0.pop_front();
        }
        self.0
            .push_back(u64::try_from(duration.as_micros()).unwrap_or(u64::MAX));
    }

    /// The `p`th percentile (nearest rank), in milliseconds; 0 with no runs.
    fn percentile(sorted: &[u64], p: f64) -> f64 {
        if sorted.is_empty() {
            return 0.0;
        }
        let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
        let index = rank.clamp(1, sorted.len()) - 1;
        sorted[index] as f64 / 1000.0
    }

    /// (p50, p99) in milliseconds.
    fn p50_p99(&self) -> (f64, f64) {
        let mut sorted: Vec<u64> = self.0.iter().copied().collect();
        sorted.sort_unstable();
        (
            Window::percentile(&sorted, 50.0),
            Window::percentile(&sorted, 99.0),
        )
    }
}

/// One hook's counters.
#[derive(Debug, Default)]
struct HookEntry {
    runs: u64,
    failures: u64,
    failures_by_kind: BTreeMap<&'static str, u64>,
    timeouts: u64,
    decisions: BTreeMap<String, u64>,
    durations: Window,
    max: Duration,
    last_error: Option<String>,
}

/// One event's counters.
#[derive(Debug, Default)]
struct EventEntry {
    runs: u64,
    failed_runs: u64,
    decisions: BTreeMap<String, u64>,
    durations: Window,
}

/// An event and a hook source (its label): the hooks of one group are kept by name.
type HookGroup = (HookEventName, &'static str);

/// The tables under the lock.
#[derive(Debug, Default)]
struct Tables {
    /// Keys in first-run order, then the entries by key.
    hook_order: Vec<(HookEventName, String, &'static str)>,
    /// By event and source (a short list: looked through, not hashed), then by name: a run
    /// finds its hooks' entries by borrowed names, without building a key (a stream runs this
    /// for every chunk).
    hooks: Vec<(HookGroup, HashMap<String, HookEntry>)>,
    /// How many hook entries `hooks` holds.
    hooks_len: usize,
    hooks_untracked: u64,
    /// In first-run order; a short list (one entry per event), looked through.
    events: Vec<(HookEventName, EventEntry)>,
    relays: BTreeMap<&'static str, u64>,
}

/// The daemon's run counters.
#[derive(Debug, Default)]
pub(crate) struct RunStats {
    tables: Mutex<Tables>,
    /// Client entries by name, in first-connect order.
    clients: Mutex<Vec<Arc<ClientEntry>>>,
}

impl RunStats {
    /// Counts a new connection of the client named `name` and returns its handle.
    pub(crate) fn connect(&self, name: &str) -> ClientHandle {
        let name: String = name.chars().take(MAX_CLIENT_NAME_CHARS).collect();
        let mut clients = self.clients.lock().unwrap_or_else(PoisonError::into_inner);
        let found = clients.iter().find(|entry| *entry.name == *name).cloned();
        let entry = match found {
            Some(entry) => entry,
            None => {
                let name = if clients.len() >= MAX_CLIENTS {
                    OTHER_CLIENTS.to_owned()
                } else {
                    name
                };
                match clients.iter().find(|entry| *entry.name == *name).cloned() {
                    Some(entry) => entry,
                    None => {
                        let entry = Arc::new(ClientEntry {
                            name: name.into(),
                            ..ClientEntry::default()
                        });
                        clients.push(Arc::clone(&entry));
                        entry
                    }
                }
            }
        };
        entry.connections.fetch_add(1, Ordering::Relaxed);
        entry.connections_total.fetch_add(1, Ordering::Relaxed);
        ClientHandle { entry }
    }

    /// Counts one event relayed by `host`.
    pub(crate) fn count_relayed(&self, host: Dialect) {
        let mut tables = self.tables.lock().unwrap_or_else(PoisonError::into_inner);
        *tables.relays.entry(host.as_str()).or_default() += 1;
    }

    /// Counts one finished run of `event` with hooks.
    pub(crate) fn record(
        &self,
        client: &ClientEntry,
        event: HookEventName,
        results: &[HookResult],
        aggregate: &Aggregate,
        total: Duration,
    ) {
        client.runs.fetch_add(1, Ordering::Relaxed);
        let mut tables = self.tables.lock().unwrap_or_else(PoisonError::into_inner);
        let tables = &mut *tables;
        for result in results {
            let label = result.source.label();
            let group = match tables
                .hooks
                .iter()
                .position(|(key, _)| *key == (event, label))
            {
                Some(group) => group,
                None => {
                    tables.hooks.push(((event, label), HashMap::new()));
                    tables.hooks.len() - 1
                }
            };
            let by_name = &mut tables.hooks[group].1;
            let entry = match by_name.get_mut(result.name.as_str()) {
                Some(entry) => entry,
                None => {
                    if tables.hooks_len >= MAX_HOOKS {
                        tables.hooks_untracked += 1;
                        continue;
                    }
                    tables.hooks_len += 1;
                    tables.hook_order.push((event, result.name.clone(), label));
                    by_name.entry(result.name.clone()).or_default()
                }
            };
            entry.runs += 1;
            entry.durations.push(result.duration);
            entry.max = entry.max.max(result.duration);
            count_decision(&mut entry.decisions, hook_decision(result));
            if let Some(failure) = result.failure {
                entry.failures += 1;
                *entry.failures_by_kind.entry(failure.as_str()).or_default() += 1;
                if matches!(result.outcome, HookOutcome::TimedOut { .. }) {
                    entry.timeouts += 1;
                }
                let error = result
                    .error
                    .clone()
                    .unwrap_or_else(|| result.outcome.kind().to_owned());
                entry.last_error = Some(error.chars().take(MAX_ERROR_CHARS).collect());
            }
        }
        let index = match tables.events.iter().position(|(seen, _)| *seen == event) {
            Some(index) => index,
            None => {
                tables.events.push((event, EventEntry::default()));
                tables.events.len() - 1
            }
        };
        let event_entry = &mut tables.events[index].1;
        event_entry.runs += 1;
        if results.iter().any(|result| result.failure.is_some()) {
            event_entry.failed_runs += 1;
        }
        count_decision(&mut event_entry.decisions, final_decision(aggregate));
        event_entry.durations.push(total);
    }

    /// The clients connected now, for `status`.
    pub(crate) fn connected(&self) -> Vec<ConnectedClient> {
        let clients = self.clients.lock().unwrap_or_else(PoisonError::into_inner);
        clients
            .iter()
            .filter_map(|entry| {
                let connections = entry.connections.load(Ordering::Relaxed);
                (connections > 0).then(|| ConnectedClient {
                    name: entry.name.to_string(),
                    connections,
                })
            })
            .collect()
    }

    /// The `stats` answer.
    pub(crate) fn response(
        &self,
        id: RequestId,
        uptime_ms: u64,
        events_served: u64,
    ) -> StatsResponse {
        let tables = self.tables.lock().unwrap_or_else(PoisonError::into_inner);
        let hooks = tables
            .hook_order
            .iter()
            .filter_map(|key| {
                let (_, by_name) = tables
                    .hooks
                    .iter()
                    .find(|(group, _)| *group == (key.0, key.2))?;
                let entry = by_name.get(&key.1)?;
                let (p50_ms, p99_ms) = entry.durations.p50_p99();
                Some(HookStats {
                    event: key.0.as_str().to_owned(),
                    name: key.1.clone(),
                    source: key.2.to_owned(),
                    runs: entry.runs,
                    failures: entry.failures,
                    failures_by_kind: entry
                        .failures_by_kind
                        .iter()
                        .map(|(kind, count)| ((*kind).to_owned(), *count))
                        .collect(),
                    timeouts: entry.timeouts,
                    decisions: entry.decisions.clone(),
                    p50_ms,
                    p99_ms,
                    max_ms: entry.max.as_secs_f64() * 1000.0,
                    last_error: entry.last_error.clone(),
                })
            })
            .collect();
        let events = tables
            .events
            .iter()
            .map(|(event, entry)| {
                let (p50_ms, p99_ms) = entry.durations.p50_p99();
                EventStats {
                    event: event.as_str().to_owned(),
                    runs: entry.runs,
                    failed_runs: entry.failed_runs,
                    decisions: entry.decisions.clone(),
                    p50_ms,
                    p99_ms,
                }
            })
            .collect();
        let relays = tables
            .relays
            .iter()
            .map(|(host, events)| RelayStats {
                host: (*host).to_owned(),
                events: *events,
            })
            .collect();
        let hooks_untracked = tables.hooks_untracked;
        drop(tables);
        let clients = self
            .clients
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|entry| ClientStats {
                name: entry.name.to_string(),
                connections: entry.connections.load(Ordering::Relaxed),
                connections_total: entry.connections_total.load(Ordering::Relaxed),
                events: entry.events.load(Ordering::Relaxed),
                runs: entry.runs.load(Ordering::Relaxed),
            })
            .collect();
        StatsResponse {
            id,
            uptime_ms,
            events_served,
            hooks,
            events,
            clients,
            relays,
            hooks_untracked,
            background: None,
            breaker: None,
            telemetry: None,
        }
    }
}

/// Counts one `decision`, allocating only for one not seen before.
fn count_decision(decisions: &mut BTreeMap<String, u64>, decision: &str) {
    match decisions.get_mut(decision) {
        Some(count) => *count += 1,
        None => {
            decisions.insert(decision.to_owned(), 1);
        }
    }
}

/// A hook's decision as the log shows it: the `decision` of its output, else `ok` or the
/// failure kind (`timed_out`, `refused`, ...).
pub(crate) fn hook_decision(result: &HookResult) -> &str {
    let decision = result
        .output
        .as_ref()
        .and_then(|output| output.get("decision"))
        .and_then(Value::as_str);
    match (decision, result.failure) {
        (Some(decision), _) => decision,
        (None, Some(failure)) => failure.as_str(),
        (None, None) if result.success => "ok",
        (None, None) => result.outcome.kind(),
    }
}

/// The run's final decision as the log and `stats` show it: the merged output's `decision`,
/// `stop` when it says `continue: false`, else `none`.
pub(crate) fn final_decision(aggregate: &Aggregate) -> &str {
    let output = aggregate.final_output.as_ref();
    if let Some(decision) = output
        .and_then(|output| output.get("decision"))
        .and_then(Value::as_str)
    {
        return decision;
    }
    if output.and_then(|output| output.get("continue")) == Some(&Value::Bool(false)) {
        return "stop";
    }
    "none"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let cases: &[(&[u64], f64, f64)] = &[
            (&[], 0.0, 0.0),
            (&[1000], 1.0, 1.0),
            (&[1000, 2000, 3000, 4000], 2.0, 4.0),
            (&[5000, 1000, 3000], 3.0, 5.0),
        ];
        for (micros, p50, p99) in cases {
            let mut window = Window::default();
            for micros in *micros {
                window.push(Duration::from_micros(*micros));
            }
            assert_eq!(window.p50_p99(), (*p50, *p99), "{micros:?}");
        }
    }

    #[test]
    fn the_window_keeps_only_the_latest_runs() {
        let mut window = Window::default();
        for _ in 0..WINDOW {
            window.push(Duration::from_secs(1));
        }
        for _ in 0..WINDOW {
            window.push(Duration::from_millis(1));
        }
        assert_eq!(window.p50_p99(), (1.0, 1.0));
    }

    #[test]
    fn clients_are_counted_by_name_and_bounded() {
        let stats = RunStats::default();
        let first = stats.connect("a");
        let second = stats.connect("a");
        first.entry().count_event();
        assert!(Arc::ptr_eq(first.entry(), second.entry()));
        drop(second);
        let connected = stats.connected();
        assert_eq!(connected.len(), 1);
        assert_eq!(connected[0].connections, 1);
        let mut handles = Vec::new();
        for n in 0..(MAX_CLIENTS + 10) {
            handles.push(stats.connect(&format!("client-{n}")));
        }
        let names = stats
            .clients
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        assert_eq!(names, MAX_CLIENTS + 1, "the extra names share `(other)`");
        let long = stats.connect(&"x".repeat(1000));
        assert!(long.entry().name.chars().count() <= MAX_CLIENT_NAME_CHARS);
    }
}
