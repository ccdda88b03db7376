//! The circuit breaker of one hook: after `threshold` failed runs in a row the hook is
//! paused for a back-off period, then one trial run decides whether it resumes (success) or
//! is paused again for twice as long, up to a ceiling (failure).
//!
//! A pure state machine: no clock is read here. Callers pass the current [`Instant`] to
//! [`Breaker::admit`] and [`Breaker::record`], so every transition is a table test.
//!
//! ```text
//!            failure (count < threshold)
//!             ┌──────┐
//!             ▼      │         count reaches threshold
//!          Closed ───┴───────────────────────────────▶ Open { until = now + backoff }
//!             ▲                                          │ admit at/after `until`
//!             │ trial succeeds                           ▼
//!             └──────────────────────────────────── HalfOpen (one trial in flight)
//!                                                        │ trial fails: backoff × 2 (≤ max)
//!                                                        └──────────────▶ Open
//! ```
//!
//! While `Open` (and while the trial runs) a hook is not run: the caller answers as the hook's
//! failure would (its `on_failure`). A run that was admitted before the hook was paused and
//! finishes after it does not move the breaker, nor does a cancelled run.

use std::time::{Duration, Instant};

/// The breaker's settings, daemon-wide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BreakerSettings {
    /// Failed runs in a row that pause a hook; 0 turns the breaker off.
    pub threshold: u32,
    /// The first pause.
    pub backoff: Duration,
    /// The longest pause: each failed trial doubles the pause up to this.
    pub max_backoff: Duration,
}

impl BreakerSettings {
    /// The default threshold: five failures in a row.
    pub const DEFAULT_THRESHOLD: u32 = 5;
    /// The default first pause: 30 s.
    pub const DEFAULT_BACKOFF: Duration = Duration::from_secs(30);
    /// The default longest pause: 10 min.
    pub const DEFAULT_MAX_BACKOFF: Duration = Duration::from_secs(600);

    /// Whether the breaker is on.
    pub fn enabled(&self) -> bool {
        self.threshold > 0
    }
}

impl Default for BreakerSettings {
    fn default() -> Self {
        BreakerSettings {
            threshold: BreakerSettings::DEFAULT_THRESHOLD,
            backoff: BreakerSettings::DEFAULT_BACKOFF,
            max_backoff: BreakerSettings::DEFAULT_MAX_BACKOFF,
        }
    }
}

/// Where a hook's breaker is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerState {
    /// The hook runs; `failures` runs in a row have failed.
    Closed {
        /// Consecutive failures so far.
        failures: u32,
    },
    /// The hook is paused until `until`.
    Open {
        /// When the next run is a trial.
        until: Instant,
        /// The pause that was set (doubled after a failed trial).
        backoff: Duration,
        /// Consecutive failures, trials included.
        failures: u32,
    },
    /// One trial run is in flight; other runs are still skipped.
    HalfOpen {
        /// The pause that was in force before the trial.
        backoff: Duration,
        /// Consecutive failures, trials included.
        failures: u32,
    },
}

/// What [`Breaker::admit`] says about one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Run the hook as usual.
    Run,
    /// Run the hook as the one trial of a paused hook; report its result with `trial: true`.
    Trial,
    /// Do not run the hook: it is paused.
    Paused {
        /// When the next trial may run; `None` while a trial is in flight.
        until: Option<Instant>,
        /// Consecutive failures that paused it.
        failures: u32,
    },
}

/// How a run that was admitted ended, as far as the breaker cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunVerdict {
    /// The hook ran and did not fail.
    Succeeded,
    /// The hook failed (spawn failure, timeout, crash, exit without a decision, ...).
    Failed,
    /// Neither: the run was cancelled or never reached the hook.
    Neither,
}

/// What a recorded result changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transition {
    /// Nothing a user needs to hear about.
    None,
    /// The hook is paused now (for `backoff`, after `failures` failures in a row).
    Paused {
        /// The pause.
        backoff: Duration,
        /// Consecutive failures.
        failures: u32,
    },
    /// The trial succeeded: the hook runs again.
    Resumed,
}

/// One hook's breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Breaker {
    /// Its state.
    pub state: BreakerState,
}

impl Default for Breaker {
    fn default() -> Self {
        Breaker {
            state: BreakerState::Closed { failures: 0 },
        }
    }
}

impl Breaker {
    /// Whether a run of the hook may start at `now`; moves an expired pause to its trial.
    pub fn admit(&mut self, settings: &BreakerSettings, now: Instant) -> Admission {
        if !settings.enabled() {
            return Admission::Run;
        }
        match self.state {
            BreakerState::Closed { .. } => Admission::Run,
            BreakerState::Open {
                until,
                backoff,
                failures,
            } => {
                if now < until {
                    Admission::Paused {
                        until: Some(until),
                        failures,
                    }
                } else {
                    self.state = BreakerState::HalfOpen { backoff, failures };
                    Admission::Trial
                }
            }
            BreakerState::HalfOpen { failures, .. } => Admission::Paused {
                until: None,
                failures,
            },
        }
    }

    /// Records how an admitted run ended (`trial`: it was admitted as [`Admission::Trial`]).
    pub fn record(
        &mut self,
        settings: &BreakerSettings,
        trial: bool,
        verdict: RunVerdict,
        now: Instant,
    ) -> Transition {
        if !settings.enabled() {
            return Transition::None;
        }
        match (self.state, trial, verdict) {
            (_, _, RunVerdict::Neither) => {
                if let (BreakerState::HalfOpen { backoff, failures }, true) = (self.state, trial) {
                    // The trial never finished: the next run is a trial again.
                    self.state = BreakerState::Open {
                        until: now,
                        backoff,
                        failures,
                    };
                }
                Transition::None
            }
            (BreakerState::Closed { .. }, _, RunVerdict::Succeeded) => {
                self.state = BreakerState::Closed { failures: 0 };
                Transition::None
            }
            (BreakerState::Closed { failures }, _, RunVerdict::Failed) => {
                let failures = failures.saturating_add(1);
                if failures >= settings.threshold {
                    let backoff = settings.backoff.min(settings.max_backoff);
                    self.state = BreakerState::Open {
                        until: now + backoff,
                        backoff,
                        failures,
                    };
                    Transition::Paused { backoff, failures }
                } else {
                    self.state = BreakerState::Closed { failures };
                    Transition::None
                }
            }
            (BreakerState::HalfOpen { .. }, true, RunVerdict::Succeeded) => {
                self.state = BreakerState::Closed { failures: 0 };
                Transition::Resumed
            }
            (BreakerState::HalfOpen { backoff, failures }, true, RunVerdict::Failed) => {
                let failures = failures.saturating_add(1);
                let backoff = backoff.saturating_mul(2).min(settings.max_backoff);
                self.state = BreakerState::Open {
                    until: now + backoff,
                    backoff,
                    failures,
                };
                Transition::Paused { backoff, failures }
            }
            // A run admitted before the pause, finishing during it: the trial decides.
            (BreakerState::HalfOpen { .. } | BreakerState::Open { .. }, _, _) => Transition::None,
        }
    }

    /// Whether the breaker holds nothing worth keeping (closed with no failure counted).
    pub fn is_idle(&self) -> bool {
        self.state == BreakerState::Closed { failures: 0 }
    }

    /// Whether the hook is paused (open, or its trial in flight).
    pub fn is_paused(&self) -> bool {
        !matches!(self.state, BreakerState::Closed { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One step: admit (and what it says) or record (and what it changes), at a time in s.
    #[derive(Debug, Clone, Copy)]
    enum Step {
        Admit(u64, Expect),
        Record(u64, bool, RunVerdict, Transition),
    }

    /// What an admission should be; `Paused` with the time in seconds, if any.
    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Expect {
        Run,
        Trial,
        Paused(Option<u64>, u32),
    }

    fn settings(threshold: u32, backoff: u64, max: u64) -> BreakerSettings {
        BreakerSettings {
            threshold,
            backoff: Duration::from_secs(backoff),
            max_backoff: Duration::from_secs(max),
        }
    }

    fn check(settings: BreakerSettings, steps: &[Step]) {
        let start = Instant::now();
        let at = |s: u64| start + Duration::from_secs(s);
        let mut breaker = Breaker::default();
        for (n, step) in steps.iter().enumerate() {
            match *step {
                Step::Admit(time, expected) => {
                    let got = match breaker.admit(&settings, at(time)) {
                        Admission::Run => Expect::Run,
                        Admission::Trial => Expect::Trial,
                        Admission::Paused { until, failures } => Expect::Paused(
                            until.map(|until| until.duration_since(start).as_secs()),
                            failures,
                        ),
                    };
                    assert_eq!(got, expected, "step {n}: {step:?}");
                }
                Step::Record(time, trial, verdict, expected) => {
                    let got = breaker.record(&settings, trial, verdict, at(time));
                    assert_eq!(got, expected, "step {n}: {step:?}");
                }
            }
        }
    }

    use RunVerdict::{Failed, Neither, Succeeded};
    use Step::{Admit, Record};

    fn paused(backoff: u64, failures: u32) -> Transition {
        Transition::Paused {
            backoff: Duration::from_secs(backoff),
            failures,
        }
    }

    #[test]
    fn the_breaker_state_machine() {
        let none = Transition::None;
        // (name, settings, steps)
        let cases: Vec<(&str, BreakerSettings, Vec<Step>)> = vec![
            (
                "failures below the threshold never pause; a success resets the count",
                settings(3, 10, 100),
                vec![
                    Record(0, false, Failed, none),
                    Record(1, false, Failed, none),
                    Record(2, false, Succeeded, none),
                    Record(3, false, Failed, none),
                    Record(4, false, Failed, none),
                    Admit(5, Expect::Run),
                ],
            ),
            (
                "the threshold pauses; admits are refused until the back-off ends",
                settings(3, 10, 100),
                vec![
                    Record(0, false, Failed, none),
                    Record(0, false, Failed, none),
                    Record(1, false, Failed, paused(10, 3)),
                    Admit(2, Expect::Paused(Some(11), 3)),
                    Admit(10, Expect::Paused(Some(11), 3)),
                    Admit(11, Expect::Trial),
                    // Others wait for the trial.
                    Admit(11, Expect::Paused(None, 3)),
                    Record(12, true, Succeeded, Transition::Resumed),
                    Admit(12, Expect::Run),
                    // The count starts again from zero.
                    Record(13, false, Failed, none),
                    Admit(13, Expect::Run),
                ],
            ),
            (
                "a failed trial doubles the pause, up to the ceiling",
                settings(1, 10, 25),
                vec![
                    Record(0, false, Failed, paused(10, 1)),
                    Admit(10, Expect::Trial),
                    Record(11, true, Failed, paused(20, 2)),
                    Admit(30, Expect::Paused(Some(31), 2)),
                    Admit(31, Expect::Trial),
                    Record(31, true, Failed, paused(25, 3)),
                    Admit(56, Expect::Trial),
                    Record(57, true, Failed, paused(25, 4)),
                    Admit(82, Expect::Trial),
                    Record(83, true, Succeeded, Transition::Resumed),
                    // Resumed: the next pause starts from the first back-off again.
                    Record(84, false, Failed, paused(10, 1)),
                ],
            ),
            (
                "a cancelled trial leaves the next run a trial",
                settings(1, 10, 100),
                vec![
                    Record(0, false, Failed, paused(10, 1)),
                    Admit(10, Expect::Trial),
                    Record(11, true, Neither, none),
                    Admit(11, Expect::Trial),
                    Record(12, true, Succeeded, Transition::Resumed),
                ],
            ),
            (
                "runs admitted before the pause do not move it",
                settings(2, 10, 100),
                vec![
                    Record(0, false, Failed, none),
                    Record(0, false, Failed, paused(10, 2)),
                    Record(1, false, Succeeded, none),
                    Record(1, false, Failed, none),
                    Admit(5, Expect::Paused(Some(10), 2)),
                    Admit(10, Expect::Trial),
                    Record(10, false, Succeeded, none),
                    Admit(10, Expect::Paused(None, 2)),
                    Record(11, true, Failed, paused(20, 3)),
                ],
            ),
            (
                "cancelled runs count for nothing",
                settings(2, 10, 100),
                vec![
                    Record(0, false, Failed, none),
                    Record(0, false, Neither, none),
                    Record(0, false, Neither, none),
                    Admit(0, Expect::Run),
                    Record(0, false, Failed, paused(10, 2)),
                ],
            ),
            (
                "threshold 0 turns the breaker off",
                settings(0, 10, 100),
                vec![
                    Record(0, false, Failed, none),
                    Record(0, false, Failed, none),
                    Record(0, false, Failed, none),
                    Admit(0, Expect::Run),
                ],
            ),
            (
                "a first back-off above the ceiling is cut to it",
                settings(1, 50, 20),
                vec![Record(0, false, Failed, paused(20, 1))],
            ),
        ];
        for (name, settings, steps) in cases {
            eprintln!("case: {name}");
            check(settings, &steps);
        }
    }

    #[test]
    fn idle_and_paused() {
        let settings = settings(1, 10, 100);
        let now = Instant::now();
        let mut breaker = Breaker::default();
        assert!(breaker.is_idle() && !breaker.is_paused());
        breaker.record(&settings, false, Failed, now);
        assert!(!breaker.is_idle() && breaker.is_paused());
        assert_eq!(
            breaker.admit(&settings, now + Duration::from_secs(10)),
            Admission::Trial
        );
        assert!(breaker.is_paused());
        breaker.record(&settings, true, Succeeded, now);
        assert!(breaker.is_idle());
    }
}
