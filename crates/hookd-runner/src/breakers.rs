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

use hookd_core::breaker::{Admission, Breaker, BreakerSettings, RunVerdict, Transition};
use hookd_core::model::HookEntry;
use hookd_core::policy::FailureKind;
use hookd_core::{HookResult, SpawnCause};

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
    /// `verdict` is [`verdict`] of the run's result before its failure policy applied.
    pub fn record(&self, entry: &HookEntry, trial: bool, verdict: RunVerdict) {
        if !self.settings.enabled() {
            return;
        }
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

    /// Records that a trial run ended without a result (its future was dropped): the next
    /// run is a trial again, so a hook is never left paused by a trial that cannot finish.
    fn abandon_trial(&self, entry: &HookEntry) {
        let mut hooks = self.hooks.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(tracked) = hooks.get_mut(entry.identity()) {
            tracked
                .breaker
                .record(&self.settings, true, RunVerdict::Neither, Instant::now());
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

/// Held while a trial run is in flight; dropped before [`TrialGuard::finished`] (the run's
/// future was dropped), it gives the trial back, so the next run is a trial again.
pub struct TrialGuard<'a> {
    breakers: &'a Breakers,
    entry: &'a HookEntry,
    finished: bool,
}

impl<'a> TrialGuard<'a> {
    /// Guards the trial run of `entry`.
    pub fn new(breakers: &'a Breakers, entry: &'a HookEntry) -> TrialGuard<'a> {
        TrialGuard {
            breakers,
            entry,
            finished: false,
        }
    }

    /// The trial's result was recorded ([`Breakers::record`]).
    pub fn finished(mut self) {
        self.finished = true;
    }
}

impl Drop for TrialGuard<'_> {
    fn drop(&mut self) {
        if !self.finished {
            self.breakers.abandon_trial(self.entry);
        }
    }
}

/// What a run means to the breaker, read from its result as the output rules interpreted it,
/// **before** its failure policy replaced anything (`interpreted`).
///
/// Only a run that failed *and did not stop anything* counts as a failure: a hook whose
/// output blocks, denies, asks or stops the agent (`continue: false`) answered, whatever its
/// exit code — a guard that blocks with exit 2 and a message every time (or whose missing
/// command makes bash exit 127, which denies) must never be paused, since its failure policy
/// (allow, by default) would then let through what it stops. (The `allow` that Gemini CLI's
/// rules give exit 1 with plain text is no answer: a paused hook allows as well.) A refusal
/// by hookd (an untrusted project hook, a paused one) says nothing about the hook, nor does
/// a start that failed for hookd's own want of descriptors, processes or memory
/// ([`SpawnCause::DaemonResources`]: the hook was never tried, and pausing it would turn the
/// daemon's passing shortage into its failure policy's answer for the whole pause); a
/// cancelled run counts for nothing.
pub fn verdict(interpreted: &HookResult) -> RunVerdict {
    if matches!(
        interpreted.outcome,
        hookd_core::HookOutcome::Cancelled
            | hookd_core::HookOutcome::SpawnFailed {
                cause: SpawnCause::DaemonResources,
                ..
            }
    ) {
        return RunVerdict::Neither;
    }
    match hookd_core::policy::classify(interpreted) {
        None => RunVerdict::Succeeded,
        Some(FailureKind::Refused) => RunVerdict::Neither,
        Some(_) if answers(interpreted) => RunVerdict::Succeeded,
        Some(_) => RunVerdict::Failed,
    }
}

/// Whether the hook's own output stops something: a `block`, `deny` or `ask` decision, or
/// `continue: false`.
fn answers(result: &HookResult) -> bool {
    let Some(serde_json::Value::Object(output)) = &result.output else {
        return false;
    };
    output.get("continue") == Some(&serde_json::Value::Bool(false))
        || matches!(
            output.get("decision").and_then(serde_json::Value::as_str),
            Some("block" | "deny" | "ask")
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use hookd_core::model::{HookConfig, HookType, Origin, Source};
    use hookd_core::{HookEventName, HookOutcome, HookRun};

    fn entry() -> HookEntry {
        HookEntry {
            event: HookEventName::BeforeTool,
            config: HookConfig {
                hook_type: HookType::Command,
                command: Some("check.sh".to_owned()),
                name: Some("check".to_owned()),
                description: None,
                timeout_ms: None,
                env: Vec::new(),
                raw: serde_json::Map::new(),
            },
            source: Source::User,
            origin: Origin::default(),
            matcher: None,
            sequential: false,
            enabled: true,
            trust: hookd_core::trust::HookTrust::NotRequired,
            builtin: None,
            identity: Default::default(),
        }
    }

    fn result(entry: &HookEntry, outcome: HookOutcome) -> HookResult {
        let run = HookRun {
            outcome,
            stdout: String::new(),
            stderr: "not this command".to_owned(),
            duration: Duration::ZERO,
        };
        hookd_core::output::hook_result(entry, run)
    }

    /// The verdict of a run with `outcome` (stderr a plain message).
    fn run(entry: &HookEntry, outcome: HookOutcome) -> RunVerdict {
        verdict(&result(entry, outcome))
    }

    fn breakers(backoff: Duration) -> Breakers {
        Breakers::new(BreakerSettings {
            threshold: 1,
            backoff,
            max_backoff: Duration::from_secs(3600),
        })
    }

    #[test]
    fn what_counts_as_a_failure() {
        let entry = entry();
        // (outcome, paused after one such run?)
        let cases = [
            (HookOutcome::Exited { code: 0 }, false),
            // Exit 2 (and bash's 127) with a message deny: an answer, not a failure.
            (HookOutcome::Exited { code: 2 }, false),
            (HookOutcome::Exited { code: 127 }, false),
            // Exit 1 with a message is a warning that allows: a failure.
            (HookOutcome::Exited { code: 1 }, true),
            (HookOutcome::Exited { code: 3 }, false),
            (HookOutcome::TimedOut { timeout_ms: 5 }, true),
            (HookOutcome::Signalled { signal: 9 }, true),
            (
                HookOutcome::SpawnFailed {
                    message: "no such file".to_owned(),
                    cause: SpawnCause::Hook,
                },
                true,
            ),
            // hookd out of descriptors, processes or memory: the hook was never tried.
            (
                HookOutcome::SpawnFailed {
                    message: "Too many open files".to_owned(),
                    cause: SpawnCause::DaemonResources,
                },
                false,
            ),
            (HookOutcome::Cancelled, false),
            // Output over the cap: a failure (its stdout here decides nothing).
            (
                HookOutcome::OutputTooLarge {
                    stream: hookd_core::StreamName::Stdout,
                    cap_bytes: 16,
                    code: Some(0),
                },
                true,
            ),
            // hookd's own refusals (an untrusted project hook) say nothing of the hook.
            (
                HookOutcome::Refused {
                    message: "untrusted".to_owned(),
                },
                false,
            ),
        ];
        for (outcome, paused) in cases {
            let breakers = breakers(Duration::from_secs(3600));
            breakers.record(&entry, false, run(&entry, outcome.clone()));
            assert_eq!(breakers.admit(&entry).is_err(), paused, "{outcome:?}");
            assert_eq!(breakers.paused().len(), usize::from(paused), "{outcome:?}");
        }
    }

    #[test]
    fn shortages_of_the_daemon_never_pause_a_hook() {
        let entry = entry();
        let short = |errno: i32| HookOutcome::SpawnFailed {
            message: std::io::Error::from_raw_os_error(errno).to_string(),
            cause: crate::process::spawn_cause(&std::io::Error::from_raw_os_error(errno)),
        };
        // (errno of the failed start, counted against the hook?)
        let cases = [
            (libc::EMFILE, false),
            (libc::ENFILE, false),
            (libc::EAGAIN, false),
            (libc::ENOMEM, false),
            (libc::ENOENT, true),
            (libc::EACCES, true),
            (libc::ENOEXEC, true),
        ];
        for (errno, counted) in cases {
            let breakers = Breakers::new(BreakerSettings {
                threshold: 5,
                backoff: Duration::from_secs(3600),
                max_backoff: Duration::from_secs(3600),
            });
            for _ in 0..100 {
                breakers.record(&entry, false, run(&entry, short(errno)));
            }
            assert_eq!(breakers.admit(&entry).is_err(), counted, "errno {errno}");
            assert_eq!(breakers.pauses(), u64::from(counted), "errno {errno}");
        }
        // Shortages between the hook's own failures neither count nor reset its streak.
        let breakers = Breakers::new(BreakerSettings {
            threshold: 2,
            backoff: Duration::from_secs(3600),
            max_backoff: Duration::from_secs(3600),
        });
        breakers.record(&entry, false, run(&entry, HookOutcome::Exited { code: 1 }));
        breakers.record(&entry, false, run(&entry, short(libc::EMFILE)));
        assert!(breakers.admit(&entry).is_ok(), "one failure of its own");
        breakers.record(&entry, false, run(&entry, HookOutcome::Exited { code: 1 }));
        assert!(breakers.admit(&entry).is_err(), "two failures of its own");
    }

    #[test]
    fn a_trial_dropped_before_its_result_is_given_back() {
        let entry = entry();
        let breakers = breakers(Duration::ZERO);
        breakers.record(&entry, false, run(&entry, HookOutcome::Exited { code: 1 }));
        assert_eq!(
            breakers.admit(&entry),
            Ok(true),
            "the pause is over: a trial"
        );
        // While the trial is in flight, other runs are skipped.
        assert!(breakers.admit(&entry).is_err());
        drop(TrialGuard::new(&breakers, &entry));
        assert_eq!(breakers.admit(&entry), Ok(true), "a trial again");
        let guard = TrialGuard::new(&breakers, &entry);
        breakers.record(&entry, true, run(&entry, HookOutcome::Exited { code: 0 }));
        guard.finished();
        assert_eq!(breakers.admit(&entry), Ok(false), "resumed");
        assert!(breakers.paused().is_empty());
    }

    #[test]
    fn a_reset_forgets_pauses() {
        let entry = entry();
        let breakers = breakers(Duration::from_secs(3600));
        breakers.record(&entry, false, run(&entry, HookOutcome::Exited { code: 1 }));
        assert!(breakers.admit(&entry).is_err());
        assert_eq!(breakers.reset(), 1);
        assert_eq!(breakers.admit(&entry), Ok(false));
        assert_eq!((breakers.pauses(), breakers.skipped()), (1, 1));
    }
}
