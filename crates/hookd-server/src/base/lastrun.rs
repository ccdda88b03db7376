//! The latest run of every hook, for the `list` panel.
//!
//! A hook is identified by its event, its layer, the file it comes from and its
//! `name:command` key, so the same command registered for two events or in two files has two
//! records. The table is bounded: past [`MAX_RECORDS`] the oldest records are dropped.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use hookd_core::{HookEntry, HookResult};
use hookd_protocol as wire;

/// The most hooks whose last run is remembered.
pub(crate) const MAX_RECORDS: usize = 4096;

/// Last runs by hook identity.
#[derive(Debug, Default)]
pub(crate) struct LastRuns {
    records: Mutex<HashMap<String, wire::LastRun>>,
}

impl LastRuns {
    /// Records the results of one plan; `hooks` and `results` are in plan order.
    pub(crate) fn record(&self, hooks: &[std::sync::Arc<HookEntry>], results: &[HookResult]) {
        let finished_at_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_millis() as u64);
        let mut records = self.records.lock().unwrap_or_else(PoisonError::into_inner);
        for (entry, result) in hooks.iter().zip(results) {
            let record = wire::LastRun {
                success: result.success,
                outcome: result.outcome.kind().to_owned(),
                duration_ms: result.duration.as_secs_f64() * 1000.0,
                finished_at_ms,
                error: result.error.clone(),
            };
            // Updated in place when the hook ran before: no key to build.
            match records.get_mut(entry.identity()) {
                Some(slot) => *slot = record,
                None => {
                    records.insert(entry.identity().to_owned(), record);
                }
            }
        }
        while records.len() > MAX_RECORDS {
            let oldest = records
                .iter()
                .min_by_key(|(_, record)| record.finished_at_ms)
                .map(|(key, _)| key.clone());
            match oldest {
                Some(oldest) => {
                    records.remove(&oldest);
                }
                None => break,
            }
        }
    }

    /// The last run of a registered hook, if it ran.
    pub(crate) fn get(&self, entry: &HookEntry) -> Option<wire::LastRun> {
        self.records
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(entry.identity())
            .cloned()
    }
}
