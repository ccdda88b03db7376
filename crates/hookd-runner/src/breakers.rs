//! The circuit breakers of every hook, daemon-wide: [`hookd_core::breaker`]'s state machine
//! per hook identity ([`HookEntry::identity`]: event, layer, file, `name:command`), with the
//! clock read here and the transitions logged.
//!
//! Bounded: only hooks with at least one failure counted are held (a success forgets the
//! hook), and at most [`MAX_TRACKED`] of them; past it a new failing hook is not tracked
//! (and so never paused) until room frees up, which is logged once.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hookd_core::HookResult;
use hookd_core::breaker::{Admission, Breaker, BreakerSettings, RunVerdict, Transition};
use hookd_core::model::HookEntry;
use hookd_core::policy::FailureKind;

/// The most hooks whose failures are tracked at once.
pub const MAX_TRACKED: usize = 4096;

/// A paused hook, as `list`, `status` and `stats` show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PausedHook {
    /// The hook's identity ([`HookEntry::identity`]).
    pub identity: String,
    /// Its display name.
    pub name: String,
    /// Its event.
    pub event: String,
    /// Consecutive failures that paused it.
    pub failures: u32,
    /// How long until its next trial run; zero when the trial is due or running.
    pub retry_in: Duration,
}

/// One tracked hook: its breaker and what to show about it.
#[derive(Debug)]
struct Tracked {
    breaker: Breaker,
    name: String,
    event: String,
}

/// Every hook's breaker, shared by every firing.
#[derive(Debug, Default)]
pub struct Breakers {
    settings: BreakerSettings,
    hooks: Mutex<HashMap<String, Tracked>>,
    /// Runs not spawned because their hook was paused, since start.
    skipped: AtomicU64,
    /// Times a hook was paused (trials that failed included), since start.
    pauses: AtomicU64,
    /// Whether the "too many failing hooks" warning was logged.
    full_warned: AtomicBool,
}

impl Breakers {
    /// Breakers with these settings.
    pub fn new(settings: BreakerSettings) -> Breakers {
        Breakers {
            settings,
            ..Breakers::default()
        }
    }

    /// The settings in force.
    pub fn settings(&self) -> BreakerSettings {
        self.settings
    }

    /// Whether `entry` may run now: `Ok(trial)` to run it (`trial`: as its paused hook's one
    /// trial run), `Err(message)` when it is paused, the message saying so.
    pub fn admit(&self, entry: &HookEntry) -> Result<bool, String> {
        if !self.settings.enabled() {
            return Ok(false);
        }
        let now = Instant::now();
        let mut hooks = self.hooks.lock().unwrap_or_else(|e| e.into_inner());
        let Some(tracked) = hooks.get_mut(entry.identity()) else {
            return Ok(false);
        };
        match tracked.breaker.admit(&self.settings, now) {
            Admission::Run => Ok(false),
            Admission::Trial => {
                tracing::info!(
                    target: "hookd::hook",
                    hook = entry.config.display_name(),
                    event = entry.event.as_str(),
                    "paused hook: trying it again"
                );
                Ok(true)
            }
            Admission::Paused { until, failures } => {
                self.skipped.fetch_add(1, Ordering::Relaxed);
                Err(match until {
                    Some(until) => format!(
                        "paused by the circuit breaker after {failures} failures in a row; \
                         tried again in {} s",
                        until.saturating_duration_since(now).as_secs_f64().ceil() as u64
                    ),
                    None => format!(
                        "paused by the circuit breaker after {failures} failures in a row; \
                         a trial run is in progress"
                    ),
                })
            }
        }
    }

    /// Records the result of a run [`Breakers::admit`] let through.
    pub fn record(&self, entry: &HookEntry, trial: bool, result: &HookResult) {
        if !self.settings.enabled() {
            return;
        }
        let verdict = verdict(result);
        let now = Instant::now();
        let mut hooks = self.hooks.lock().unwrap_or_else(|e| e.into_inner());
        let identity = entry.identity();
        if !hooks.contains_key(identity) {
            if verdict != RunVerdict::Failed {
                return;
            }
            if hooks.len() >= MAX_TRACKED {
                if !self.full_warned.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        max = MAX_TRACKED,
                        "too many failing hooks to track; new ones are not paused"
                    );
                }
                return;
            }
            hooks.insert(
                identity.to_owned(),
                Tracked {
                    breaker: Breaker::default(),
                    name: entry.config.display_name().to_owned(),
                    event: entry.event.as_str().to_owned(),
                },
            );
        }
        let Some(tracked) = hooks.get_mut(identity) else {
            return;
        };
        match tracked.breaker.record(&self.settings, trial, verdict, now) {
            Transition::None => {}
            Transition::Paused { backoff, failures } => {
                self.pauses.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(
                    target: "hookd::hook",
                    hook = entry.config.display_name(),
                    event = entry.event.as_str(),
                    failures,
                    backoff_ms = backoff.as_millis() as u64,
                    "hook paused by the circuit breaker; it decides as its failure would \
                     (on_failure) until a trial run succeeds"
                );
            }
            Transition::Resumed => {
                tracing::info!(
                    target: "hookd::hook",
                    hook = entry.config.display_name(),
                    event = entry.event.as_str(),
                    "paused hook succeeded its trial run; it runs again"
                );
            }
        }
        if tracked.breaker.is_idle() {
            hooks.remove(identity);
        }
    }

    /// Forgets every hook's failures and pauses (a reload: the user may have fixed what
    /// failed); returns how many hooks were paused.
    pub fn reset(&self) -> usize {
        let mut hooks = self.hooks.lock().unwrap_or_else(|e| e.into_inner());
        let paused = hooks
            .values()
            .filter(|tracked| tracked.breaker.is_paused())
            .count();
        hooks.clear();
        self.full_warned.store(false, Ordering::Relaxed);
        paused
    }

    /// The hooks paused now.
    pub fn paused(&self) -> Vec<PausedHook> {
        let now = Instant::now();
        let hooks = self.hooks.lock().unwrap_or_else(|e| e.into_inner());
        let mut paused: Vec<PausedHook> = hooks
            .iter()
            .filter(|(_, tracked)| tracked.breaker.is_paused())
            .map(|(identity, tracked)| {
                let (failures, retry_in) = match tracked.breaker.state {
                    hookd_core::breaker::BreakerState::Open {
                        until, failures, ..
                    } => (failures, until.saturating_duration_since(now)),
                    hookd_core::breaker::BreakerState::HalfOpen { failures, .. }
                    | hookd_core::breaker::BreakerState::Closed { failures } => {
                        (failures, Duration::ZERO)
                    }
                };
                PausedHook {
                    identity: identity.clone(),
                    name: tracked.name.clone(),
                    event: tracked.event.clone(),
                    failures,
                    retry_in,
                }
            })
            .collect();
        paused.sort_by(|a, b| (&a.event, &a.name).cmp(&(&b.event, &b.name)));
        paused
    }

    /// Runs not spawned because their hook was paused, since start.
    pub fn skipped(&self) -> u64 {
        self.skipped.load(Ordering::Relaxed)
    }

    /// Times a hook was paused since start.
    pub fn pauses(&self) -> u64 {
        self.pauses.load(Ordering::Relaxed)
    }
}

/// What a result means to the breaker: a failure of the hook itself (not a refusal by hookd,
/// such as an untrusted project hook or a paused one) counts; a cancelled run counts for
/// nothing.
fn verdict(result: &HookResult) -> RunVerdict {
    match (&result.outcome, result.failure) {
        (hookd_core::HookOutcome::Cancelled, _) => RunVerdict::Neither,
        (_, Some(FailureKind::Refused)) => RunVerdict::Neither,
        (_, Some(_)) => RunVerdict::Failed,
        (_, None) => RunVerdict::Succeeded,
    }
}
