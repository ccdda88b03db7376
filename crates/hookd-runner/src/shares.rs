//! Shares of the hook slots, so that no project's work, and no background work, can starve
//! another project's guards.
//!
//! The daemon-wide hook semaphore ([`RunnerConfig::hook_slots`](crate::fire::RunnerConfig::hook_slots))
//! bounds how many hook processes run at once. Left at that, one project could take every
//! slot: a cloned repository with many `"async": true` hooks (each `sleep 30`, on every tool)
//! held all of them, and another project's foreground deny gate waited 29.9 s for one, long
//! enough for the host to give up on it and allow the call. So before a hook takes a slot it
//! takes a place in its shares ([`SlotShares::acquire`]):
//!
//! - **background hooks** (async hooks, detached events) hold at most
//!   [`ShareLimits::background`] places at once, half of the slots by default: the other half
//!   is reserved for hooks a client is waiting for;
//! - one project's background hooks hold at most [`ShareLimits::background_per_project`]
//!   places, half of the background share, so one project's async flood leaves room for other
//!   projects' background work (their `SessionEnd` hooks);
//! - one project's hooks of both kinds hold at most [`ShareLimits::per_project`] places, three
//!   quarters of the slots, so another project's gate always finds slots no single project
//!   can take.
//!
//! And the time any one project's backlog can hold its places is bounded: a background hook
//! waits at most [`ShareLimits::background_wait`] for its places, then is refused (its record
//! says why) instead of queueing behind its project's earlier work without end.
//!
//! A place is held for the hook's run, next to its slot, and given back when the run ends.
//! The state is one small map of the projects with hooks running or waiting, so memory is
//! bounded by the hooks in flight. Waiters are woken whenever a place is given back and look
//! again; places are taken in one step under one lock, so two kinds of limits can never
//! deadlock each other.

use std::collections::HashMap;
use std::pin::pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// Whether a run has a client waiting for its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RunClass {
    /// A client waits for the hooks' answer (a guard, a hook of an event the host awaits).
    #[default]
    Foreground,
    /// Nobody waits: async hooks and detached events (`SessionEnd` relayed by a host).
    Background,
}

/// The sizes of the shares, derived from the number of hook slots ([`ShareLimits::for_slots`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShareLimits {
    /// The most hooks of one project running at once, both kinds.
    pub per_project: usize,
    /// The most background hooks running at once, daemon-wide.
    pub background: usize,
    /// The most background hooks of one project running at once.
    pub background_per_project: usize,
    /// How long a background hook waits for its places before it is refused.
    pub background_wait: Duration,
}

/// How long a background hook waits for a place by default.
pub const DEFAULT_BACKGROUND_WAIT: Duration = Duration::from_secs(30);

impl ShareLimits {
    /// The shares of `slots` hook slots: background at most half (at least 1), one project's
    /// background at most a quarter (at least 1), one project at most three quarters (at
    /// least 1).
    pub fn for_slots(slots: usize) -> ShareLimits {
        let slots = slots.max(1);
        let background = (slots / 2).max(1);
        ShareLimits {
            per_project: (slots - slots / 4).max(1),
            background,
            background_per_project: (background / 2).max(1),
            background_wait: DEFAULT_BACKGROUND_WAIT,
        }
    }
}

/// The places held per project and for background work.
#[derive(Debug, Default)]
struct Held {
    /// Per project: (all of its hooks running, its background hooks running).
    projects: HashMap<String, (usize, usize)>,
    /// Background hooks running, all projects.
    background: usize,
}

/// The shares of the hook slots, shared by every firing.
#[derive(Debug)]
pub struct SlotShares {
    limits: ShareLimits,
    held: Mutex<Held>,
    /// Notified whenever a place is given back.
    freed: Notify,
}

impl SlotShares {
    /// Shares with these limits, none held.
    pub fn new(limits: ShareLimits) -> SlotShares {
        SlotShares {
            limits,
            held: Mutex::new(Held::default()),
            freed: Notify::new(),
        }
    }

    /// The limits.
    pub fn limits(&self) -> ShareLimits {
        self.limits
    }

    /// Takes a place for one hook of `project` of `class`, waiting until the shares allow
    /// it. `None` when `cancel` fires first.
    pub async fn acquire(
        self: &Arc<Self>,
        project: &str,
        class: RunClass,
        cancel: &CancellationToken,
    ) -> Option<SharePlace> {
        loop {
            // Registered before looking, so a place given back while we look is seen.
            let mut freed = pin!(self.freed.notified());
            freed.as_mut().enable();
            if let Some(place) = self.try_acquire(project, class) {
                return Some(place);
            }
            tokio::select! {
                biased;
                () = cancel.cancelled() => return None,
                () = &mut freed => {}
            }
        }
    }

    /// A place for one hook of `project` of `class` if the shares allow it now.
    pub fn try_acquire(self: &Arc<Self>, project: &str, class: RunClass) -> Option<SharePlace> {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        let background_total = held.background;
        let (all, background) = held.projects.get(project).copied().unwrap_or((0, 0));
        if all >= self.limits.per_project {
            return None;
        }
        if class == RunClass::Background
            && (background_total >= self.limits.background
                || background >= self.limits.background_per_project)
        {
            return None;
        }
        let entry = held.projects.entry(project.to_owned()).or_insert((0, 0));
        entry.0 += 1;
        if class == RunClass::Background {
            entry.1 += 1;
            held.background += 1;
        }
        Some(SharePlace {
            shares: Arc::clone(self),
            project: project.to_owned(),
            class,
        })
    }

    /// The places held now: (all hooks, background hooks, projects with a hook running).
    pub fn held(&self) -> (usize, usize, usize) {
        let held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        let all = held.projects.values().map(|(all, _)| all).sum();
        (all, held.background, held.projects.len())
    }
}

/// One hook's place in its shares; given back when dropped.
#[derive(Debug)]
pub struct SharePlace {
    shares: Arc<SlotShares>,
    project: String,
    class: RunClass,
}

impl Drop for SharePlace {
    fn drop(&mut self) {
        {
            let mut held = self
                .shares
                .held
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if self.class == RunClass::Background {
                held.background = held.background.saturating_sub(1);
            }
            if let Some(entry) = held.projects.get_mut(&self.project) {
                entry.0 = entry.0.saturating_sub(1);
                if self.class == RunClass::Background {
                    entry.1 = entry.1.saturating_sub(1);
                }
                if entry.0 == 0 {
                    held.projects.remove(&self.project);
                }
            }
        }
        self.shares.freed.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_of_the_slots() {
        // (slots, per project, background, background per project)
        let cases = [
            (1, 1, 1, 1),
            (2, 2, 1, 1),
            (4, 3, 2, 1),
            (32, 24, 16, 8),
            (64, 48, 32, 16),
            (256, 192, 128, 64),
        ];
        for (slots, per_project, background, background_per_project) in cases {
            let limits = ShareLimits::for_slots(slots);
            assert_eq!(
                (
                    limits.per_project,
                    limits.background,
                    limits.background_per_project
                ),
                (per_project, background, background_per_project),
                "{slots} slots"
            );
        }
    }

    /// Steps: (project, class, taken?) in order; every place is kept until the end.
    #[test]
    fn places_are_refused_past_each_share() {
        use RunClass::{Background as B, Foreground as F};
        let limits = ShareLimits::for_slots(8); // per project 6, background 4, per project 2
        /// (project, class, taken?)
        type Step = (&'static str, RunClass, bool);
        let cases: &[(&str, &[Step])] = &[
            (
                "one project's background stops at its share; another's still starts",
                &[
                    ("a", B, true),
                    ("a", B, true),
                    ("a", B, false),
                    ("b", B, true),
                    ("b", B, true),
                    ("c", B, false),
                    ("c", F, true),
                ],
            ),
            (
                "background at its daemon-wide share leaves foreground its places",
                &[
                    ("a", B, true),
                    ("a", B, true),
                    ("b", B, true),
                    ("b", B, true),
                    ("a", F, true),
                    ("b", F, true),
                    ("c", F, true),
                ],
            ),
            (
                "one project stops at three quarters, background included",
                &[
                    ("a", B, true),
                    ("a", F, true),
                    ("a", F, true),
                    ("a", F, true),
                    ("a", F, true),
                    ("a", F, true),
                    ("a", F, false),
                    ("a", B, false),
                    ("b", F, true),
                ],
            ),
        ];
        for (name, steps) in cases {
            let shares = Arc::new(SlotShares::new(limits));
            let mut kept = Vec::new();
            for (i, (project, class, taken)) in steps.iter().enumerate() {
                let place = shares.try_acquire(project, *class);
                assert_eq!(place.is_some(), *taken, "{name}: step {i}");
                kept.extend(place);
            }
            drop(kept);
            assert_eq!(shares.held(), (0, 0, 0), "{name}: all given back");
        }
    }

    #[tokio::test]
    async fn a_waiter_gets_the_place_given_back() {
        let shares = Arc::new(SlotShares::new(ShareLimits::for_slots(2)));
        let held = shares.try_acquire("a", RunClass::Background);
        assert!(held.is_some());
        assert!(shares.try_acquire("b", RunClass::Background).is_none());
        let cancel = CancellationToken::new();
        let waiter = {
            let shares = Arc::clone(&shares);
            let cancel = cancel.clone();
            tokio::spawn(async move {
                shares
                    .acquire("b", RunClass::Background, &cancel)
                    .await
                    .is_some()
            })
        };
        tokio::task::yield_now().await;
        drop(held);
        let got = tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .unwrap_or(Ok(false));
        assert!(matches!(got, Ok(true)));
        // A cancelled waiter gives up.
        let _held = shares.try_acquire("a", RunClass::Background);
        cancel.cancel();
        assert!(
            shares
                .acquire("c", RunClass::Background, &cancel)
                .await
                .is_none()
        );
    }
}
