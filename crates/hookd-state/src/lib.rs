//! hookd's session state: a durable key-value store that hooks reach through the daemon
//! (`hookctl state get|set|delete|list`), one namespace per agent session.
//!
//! The store is one [`redb`] file. Every `set` and `delete` is its own write transaction,
//! committed with redb's default durability (the commit is fsynced before it returns), so a
//! daemon killed at any moment loses at most the write whose answer it had not sent, and the
//! file always reopens: redb writes new pages copy-on-write and a commit is a checksummed
//! switch of the root, so a torn commit is discarded on open.
//!
//! Three tables:
//! - `values`: `(session, key)` → value bytes;
//! - `sessions`: session → `(last write ms, end ms or 0, keys, bytes)`, the bookkeeping the
//!   bounds and the expiry read without scanning `values`;
//! - `totals`: `"bytes"` → the store's bytes (keys plus values);
//! - `owners`: session → the project its first write came from (an opaque id the daemon
//!   derives from the project directory);
//! - `projects`: project → `(sessions, bytes)`, each project's share of the store, so that
//!   one project cannot fill it for everyone ([`Limits::max_sessions_per_project`],
//!   [`Limits::max_bytes_per_project`]).
//!
//! Memory: redb keeps read pages in a cache of its own, 1 GiB by default; the store sets it
//! to [`Limits::cache_bytes`] (16 MiB), so a full store costs the daemon about that much
//! memory beyond the pages of the one transaction in flight (`docs/state.md`).
//!
//! Everything is bounded by [`Limits`]; a bound answers a typed [`StateError`], never a
//! panic. Expiry ([`Store::expire`]) removes whole sessions, at most a given number per call,
//! so the caller decides how much work one pass may do. The API is blocking: the daemon calls
//! it from its blocking pool.

use std::fs::{DirBuilder, OpenOptions, Permissions};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use redb::{Database, ReadableTable, ReadableTableMetadata, TableDefinition};

pub mod token;

const VALUES: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("values");
const SESSIONS: TableDefinition<&str, (u64, u64, u64, u64)> = TableDefinition::new("sessions");
const TOTALS: TableDefinition<&str, u64> = TableDefinition::new("totals");
const TOTAL_BYTES: &str = "bytes";
const OWNERS: TableDefinition<&str, &str> = TableDefinition::new("owners");
const PROJECTS: TableDefinition<&str, (u64, u64)> = TableDefinition::new("projects");

/// The store's bounds and expiry times. [`Limits::default`] is what the daemon uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The longest session id, in bytes (UTF-8).
    pub max_session_bytes: usize,
    /// The longest key, in bytes (UTF-8).
    pub max_key_bytes: usize,
    /// The largest value, in bytes (UTF-8).
    pub max_value_bytes: usize,
    /// At most this many keys in one session.
    pub max_keys_per_session: u64,
    /// At most this many bytes (keys plus values) in one session.
    pub max_bytes_per_session: u64,
    /// At most this many sessions with keys.
    pub max_sessions: u64,
    /// At most this many bytes (keys plus values) in the whole store.
    pub max_total_bytes: u64,
    /// At most this many sessions with keys owned by one project.
    pub max_sessions_per_project: u64,
    /// At most this many bytes (keys plus values) in the sessions of one project.
    pub max_bytes_per_project: u64,
    /// The most memory redb's page cache may take.
    pub cache_bytes: usize,
    /// The longest project id, in bytes.
    pub max_project_bytes: usize,
    /// A session's keys are removed this long after its `SessionEnd`.
    pub keep_after_end: Duration,
    /// A session's keys are removed this long after its last write, ended or not.
    pub keep_inactive: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_session_bytes: 256,
            max_key_bytes: 256,
            max_value_bytes: 64 * 1024,
            max_keys_per_session: 1024,
            max_bytes_per_session: 4 * 1024 * 1024,
            max_sessions: 10_000,
            max_total_bytes: 256 * 1024 * 1024,
            // A quarter of the store each: one project filling its share leaves three
            // quarters to the others.
            max_sessions_per_project: 2_500,
            max_bytes_per_project: 64 * 1024 * 1024,
            cache_bytes: 16 * 1024 * 1024,
            max_project_bytes: 64,
            keep_after_end: Duration::from_secs(24 * 60 * 60),
            keep_inactive: Duration::from_secs(30 * 24 * 60 * 60),
        }
    }
}

/// Why a state operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// The session id or key is empty, too long, or holds a control character.
    #[error("invalid {what}: {reason}")]
    Invalid {
        /// `"session id"` or `"key"`.
        what: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The value is larger than [`Limits::max_value_bytes`].
    #[error("the value is {len} bytes; the most a value may have is {max}")]
    ValueTooLarge {
        /// The value's size.
        len: usize,
        /// The bound.
        max: usize,
    },
    /// The session has [`Limits::max_keys_per_session`] keys already.
    #[error("the session has {max} keys already, the most it may have; delete one first")]
    TooManyKeys {
        /// The bound.
        max: u64,
    },
    /// The write would take the session past [`Limits::max_bytes_per_session`].
    #[error("the session would hold more than {max} bytes, the most it may have")]
    SessionFull {
        /// The bound.
        max: u64,
    },
    /// There are [`Limits::max_sessions`] sessions with keys already.
    #[error("the store holds {max} sessions already, the most it may hold")]
    TooManySessions {
        /// The bound.
        max: u64,
    },
    /// The write would take the store past [`Limits::max_total_bytes`].
    #[error("the store would hold more than {max} bytes, the most it may hold")]
    StoreFull {
        /// The bound.
        max: u64,
    },
    /// The project has [`Limits::max_sessions_per_project`] sessions with keys already.
    #[error("this project's sessions hold keys in {max} sessions already, its share of the store")]
    TooManyProjectSessions {
        /// The bound.
        max: u64,
    },
    /// The write would take the project past [`Limits::max_bytes_per_project`].
    #[error("this project's sessions would hold more than {max} bytes, its share of the store")]
    ProjectFull {
        /// The bound.
        max: u64,
    },
    /// The store's file or directory could not be created or opened.
    #[error("cannot open the state store {path}: {source}")]
    Open {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The database reported an error (its file is unreadable, locked by another daemon,
    /// or the disk failed).
    #[error("state store error: {0}")]
    Database(#[source] Box<redb::Error>),
}

impl StateError {
    /// Whether the error is a bound or a bad argument (the caller's doing), as opposed to a
    /// failure of the store itself.
    pub fn is_limit(&self) -> bool {
        matches!(
            self,
            StateError::ValueTooLarge { .. }
                | StateError::TooManyKeys { .. }
                | StateError::SessionFull { .. }
                | StateError::TooManySessions { .. }
                | StateError::StoreFull { .. }
                | StateError::TooManyProjectSessions { .. }
                | StateError::ProjectFull { .. }
        )
    }
}

fn db(error: impl Into<redb::Error>) -> StateError {
    StateError::Database(Box::new(error.into()))
}

/// A session's bookkeeping row.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct SessionRow {
    last_write_ms: u64,
    ended_ms: u64,
    keys: u64,
    bytes: u64,
}

impl SessionRow {
    fn from_tuple((last_write_ms, ended_ms, keys, bytes): (u64, u64, u64, u64)) -> SessionRow {
        SessionRow {
            last_write_ms,
            ended_ms,
            keys,
            bytes,
        }
    }

    fn tuple(self) -> (u64, u64, u64, u64) {
        (self.last_write_ms, self.ended_ms, self.keys, self.bytes)
    }
}

/// The open store. `Sync`: one is shared by every connection of the daemon.
pub struct Store {
    db: Database,
    limits: Limits,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl Store {
    /// Opens the store at `path`, creating it (mode 0600) and its directory (mode 0700) if
    /// they do not exist. A store left by a killed daemon is repaired by redb on open.
    pub fn open(path: &Path, limits: Limits) -> Result<Store, StateError> {
        let open_error = |source| StateError::Open {
            path: path.to_owned(),
            source,
        };
        if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
            if !dir.is_dir() {
                DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(dir)
                    .map_err(open_error)?;
            }
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path)
            .map_err(open_error)?;
        file.set_permissions(Permissions::from_mode(0o600))
            .map_err(open_error)?;
        drop(file);
        let database = Database::builder()
            .set_cache_size(limits.cache_bytes)
            .create(path)
            .map_err(db)?;
        let txn = database.begin_write().map_err(db)?;
        {
            txn.open_table(VALUES).map_err(db)?;
            txn.open_table(SESSIONS).map_err(db)?;
            txn.open_table(TOTALS).map_err(db)?;
            txn.open_table(OWNERS).map_err(db)?;
            txn.open_table(PROJECTS).map_err(db)?;
        }
        txn.commit().map_err(db)?;
        Ok(Store {
            db: database,
            limits,
        })
    }

    /// The bounds this store enforces.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The value of `key` in `session`, if set.
    pub fn get(&self, session: &str, key: &str) -> Result<Option<String>, StateError> {
        self.check_session(session)?;
        self.check_key(key)?;
        let txn = self.db.begin_read().map_err(db)?;
        let values = txn.open_table(VALUES).map_err(db)?;
        let found = values.get((session, key)).map_err(db)?;
        Ok(found.map(|guard| String::from_utf8_lossy(guard.value()).into_owned()))
    }

    /// Sets `key` in `session` to `value` at `now_ms` (Unix milliseconds), committed durably
    /// before it returns. A session that had ended is live again. A new session is owned by
    /// `project` and counts against its share; a session keeps the owner of its first write.
    pub fn set(
        &self,
        project: &str,
        session: &str,
        key: &str,
        value: &str,
        now_ms: u64,
    ) -> Result<(), StateError> {
        check_name("project id", project, self.limits.max_project_bytes)?;
        self.check_session(session)?;
        self.check_key(key)?;
        if value.len() > self.limits.max_value_bytes {
            return Err(StateError::ValueTooLarge {
                len: value.len(),
                max: self.limits.max_value_bytes,
            });
        }
        let txn = self.db.begin_write().map_err(db)?;
        {
            let mut values = txn.open_table(VALUES).map_err(db)?;
            let mut sessions = txn.open_table(SESSIONS).map_err(db)?;
            let mut totals = txn.open_table(TOTALS).map_err(db)?;
            let old = values
                .get((session, key))
                .map_err(db)?
                .map(|guard| guard.value().len());
            let existing = sessions
                .get(session)
                .map_err(db)?
                .map(|guard| SessionRow::from_tuple(guard.value()));
            if existing.is_none() && sessions.len().map_err(db)? >= self.limits.max_sessions {
                return Err(StateError::TooManySessions {
                    max: self.limits.max_sessions,
                });
            }
            let mut row = existing.unwrap_or_default();
            let added = (key.len() + value.len()) as u64;
            let removed = old.map_or(0, |len| (key.len() + len) as u64);
            if old.is_none() {
                if row.keys >= self.limits.max_keys_per_session {
                    return Err(StateError::TooManyKeys {
                        max: self.limits.max_keys_per_session,
                    });
                }
                row.keys += 1;
            }
            let session_bytes = row.bytes.saturating_sub(removed) + added;
            if session_bytes > self.limits.max_bytes_per_session {
                return Err(StateError::SessionFull {
                    max: self.limits.max_bytes_per_session,
                });
            }
            let mut owners = txn.open_table(OWNERS).map_err(db)?;
            let mut projects = txn.open_table(PROJECTS).map_err(db)?;
            let recorded = owners
                .get(session)
                .map_err(db)?
                .map(|guard| guard.value().to_owned());
            // A session written before projects were recorded is adopted by this one.
            let adopted = existing.is_some() && recorded.is_none();
            let owner = recorded.unwrap_or_else(|| project.to_owned());
            let (mut project_sessions, mut project_bytes) = projects
                .get(owner.as_str())
                .map_err(db)?
                .map_or((0, 0), |guard| guard.value());
            if existing.is_none() || adopted {
                if existing.is_none() && project_sessions >= self.limits.max_sessions_per_project {
                    return Err(StateError::TooManyProjectSessions {
                        max: self.limits.max_sessions_per_project,
                    });
                }
                project_sessions += 1;
                project_bytes += existing.map_or(0, |row| row.bytes);
            }
            let new_project_bytes = project_bytes.saturating_sub(removed) + added;
            if new_project_bytes > self.limits.max_bytes_per_project && added > removed {
                return Err(StateError::ProjectFull {
                    max: self.limits.max_bytes_per_project,
                });
            }
            let total = totals
                .get(TOTAL_BYTES)
                .map_err(db)?
                .map_or(0, |guard| guard.value());
            let new_total = total.saturating_sub(removed) + added;
            if new_total > self.limits.max_total_bytes && added > removed {
                return Err(StateError::StoreFull {
                    max: self.limits.max_total_bytes,
                });
            }
            row.bytes = session_bytes;
            row.last_write_ms = now_ms;
            row.ended_ms = 0;
            values
                .insert((session, key), value.as_bytes())
                .map_err(db)?;
            sessions.insert(session, row.tuple()).map_err(db)?;
            totals.insert(TOTAL_BYTES, new_total).map_err(db)?;
            if existing.is_none() || adopted {
                owners.insert(session, owner.as_str()).map_err(db)?;
            }
            projects
                .insert(owner.as_str(), (project_sessions, new_project_bytes))
                .map_err(db)?;
        }
        txn.commit().map_err(db)?;
        Ok(())
    }

    /// How many sessions with keys `project` owns, and their bytes.
    pub fn project_usage(&self, project: &str) -> Result<(u64, u64), StateError> {
        let txn = self.db.begin_read().map_err(db)?;
        let projects = txn.open_table(PROJECTS).map_err(db)?;
        let found = projects.get(project).map_err(db)?;
        Ok(found.map_or((0, 0), |guard| guard.value()))
    }

    /// Removes `key` from `session`; whether it was set. Removing a missing key writes
    /// nothing.
    pub fn delete(&self, session: &str, key: &str, now_ms: u64) -> Result<bool, StateError> {
        self.check_session(session)?;
        self.check_key(key)?;
        if self.get(session, key)?.is_none() {
            return Ok(false);
        }
        let txn = self.db.begin_write().map_err(db)?;
        let found;
        {
            let mut values = txn.open_table(VALUES).map_err(db)?;
            let mut sessions = txn.open_table(SESSIONS).map_err(db)?;
            let mut totals = txn.open_table(TOTALS).map_err(db)?;
            let old = values
                .remove((session, key))
                .map_err(db)?
                .map(|guard| guard.value().len());
            found = old.is_some();
            if let Some(len) = old {
                let freed = (key.len() + len) as u64;
                let mut row = sessions
                    .get(session)
                    .map_err(db)?
                    .map(|guard| SessionRow::from_tuple(guard.value()))
                    .unwrap_or_default();
                row.keys = row.keys.saturating_sub(1);
                row.bytes = row.bytes.saturating_sub(freed);
                row.last_write_ms = now_ms;
                let mut owners = txn.open_table(OWNERS).map_err(db)?;
                let mut projects = txn.open_table(PROJECTS).map_err(db)?;
                release(&mut owners, &mut projects, session, freed, row.keys == 0)?;
                if row.keys == 0 {
                    sessions.remove(session).map_err(db)?;
                } else {
                    sessions.insert(session, row.tuple()).map_err(db)?;
                }
                let total = totals
                    .get(TOTAL_BYTES)
                    .map_err(db)?
                    .map_or(0, |guard| guard.value());
                totals
                    .insert(TOTAL_BYTES, total.saturating_sub(freed))
                    .map_err(db)?;
            }
        }
        txn.commit().map_err(db)?;
        Ok(found)
    }

    /// The keys of `session`, sorted (at most [`Limits::max_keys_per_session`]).
    pub fn list(&self, session: &str) -> Result<Vec<String>, StateError> {
        self.check_session(session)?;
        let txn = self.db.begin_read().map_err(db)?;
        let values = txn.open_table(VALUES).map_err(db)?;
        let mut keys = Vec::new();
        for entry in values.range((session, "")..).map_err(db)? {
            let (key, _) = entry.map_err(db)?;
            let (owner, name) = key.value();
            if owner != session || keys.len() as u64 >= self.limits.max_keys_per_session {
                break;
            }
            keys.push(name.to_owned());
        }
        Ok(keys)
    }

    /// Records that `session` ended at `now_ms`: its keys go [`Limits::keep_after_end`]
    /// later. A session without keys writes nothing.
    pub fn session_ended(&self, session: &str, now_ms: u64) -> Result<(), StateError> {
        if self.check_session(session).is_err() {
            return Ok(());
        }
        let row = {
            let txn = self.db.begin_read().map_err(db)?;
            let sessions = txn.open_table(SESSIONS).map_err(db)?;
            let found = sessions.get(session).map_err(db)?;
            found.map(|guard| SessionRow::from_tuple(guard.value()))
        };
        let Some(mut row) = row else {
            return Ok(());
        };
        row.ended_ms = now_ms.max(1);
        let txn = self.db.begin_write().map_err(db)?;
        {
            let mut sessions = txn.open_table(SESSIONS).map_err(db)?;
            sessions.insert(session, row.tuple()).map_err(db)?;
        }
        txn.commit().map_err(db)?;
        Ok(())
    }

    /// Removes the sessions whose time is up at `now_ms`, at most `max_sessions` of them in
    /// one transaction; returns how many it removed (fewer than `max_sessions`: none is
    /// left to remove now).
    pub fn expire(&self, now_ms: u64, max_sessions: usize) -> Result<usize, StateError> {
        let after_end = self.limits.keep_after_end.as_millis() as u64;
        let inactive = self.limits.keep_inactive.as_millis() as u64;
        let due: Vec<String> = {
            let txn = self.db.begin_read().map_err(db)?;
            let sessions = txn.open_table(SESSIONS).map_err(db)?;
            let mut due = Vec::new();
            for entry in sessions.iter().map_err(db)? {
                if due.len() >= max_sessions {
                    break;
                }
                let (name, row) = entry.map_err(db)?;
                let row = SessionRow::from_tuple(row.value());
                let ended = row.ended_ms != 0 && now_ms.saturating_sub(row.ended_ms) >= after_end;
                let idle = now_ms.saturating_sub(row.last_write_ms) >= inactive;
                if ended || idle {
                    due.push(name.value().to_owned());
                }
            }
            due
        };
        if due.is_empty() {
            return Ok(0);
        }
        let txn = self.db.begin_write().map_err(db)?;
        {
            let mut values = txn.open_table(VALUES).map_err(db)?;
            let mut sessions = txn.open_table(SESSIONS).map_err(db)?;
            let mut totals = txn.open_table(TOTALS).map_err(db)?;
            let mut owners = txn.open_table(OWNERS).map_err(db)?;
            let mut projects = txn.open_table(PROJECTS).map_err(db)?;
            let mut freed = 0u64;
            for session in &due {
                let removed = sessions
                    .remove(session.as_str())
                    .map_err(db)?
                    .map(|row| SessionRow::from_tuple(row.value()).bytes);
                if let Some(bytes) = removed {
                    freed += bytes;
                    release(&mut owners, &mut projects, session, bytes, true)?;
                }
                let keys: Vec<String> = {
                    let mut keys = Vec::new();
                    for entry in values.range((session.as_str(), "")..).map_err(db)? {
                        let (key, _) = entry.map_err(db)?;
                        let (owner, name) = key.value();
                        if owner != session {
                            break;
                        }
                        keys.push(name.to_owned());
                    }
                    keys
                };
                for key in &keys {
                    values
                        .remove((session.as_str(), key.as_str()))
                        .map_err(db)?;
                }
            }
            let total = totals
                .get(TOTAL_BYTES)
                .map_err(db)?
                .map_or(0, |guard| guard.value());
            totals
                .insert(TOTAL_BYTES, total.saturating_sub(freed))
                .map_err(db)?;
        }
        txn.commit().map_err(db)?;
        Ok(due.len())
    }

    /// How many sessions hold keys, and the store's bytes (keys plus values).
    pub fn usage(&self) -> Result<(u64, u64), StateError> {
        let txn = self.db.begin_read().map_err(db)?;
        let sessions = txn.open_table(SESSIONS).map_err(db)?.len().map_err(db)?;
        let totals = txn.open_table(TOTALS).map_err(db)?;
        let bytes = totals
            .get(TOTAL_BYTES)
            .map_err(db)?
            .map_or(0, |guard| guard.value());
        Ok((sessions, bytes))
    }

    fn check_session(&self, session: &str) -> Result<(), StateError> {
        check_name("session id", session, self.limits.max_session_bytes)
    }

    fn check_key(&self, key: &str) -> Result<(), StateError> {
        check_name("key", key, self.limits.max_key_bytes)
    }
}

/// Gives `bytes` of `session` back to its owner's share; `gone`: the session has no key left,
/// so it no longer counts as one of its owner's sessions.
fn release(
    owners: &mut redb::Table<&str, &str>,
    projects: &mut redb::Table<&str, (u64, u64)>,
    session: &str,
    bytes: u64,
    gone: bool,
) -> Result<(), StateError> {
    let owner = owners
        .get(session)
        .map_err(db)?
        .map(|guard| guard.value().to_owned());
    let Some(owner) = owner else {
        return Ok(());
    };
    let (count, total) = projects
        .get(owner.as_str())
        .map_err(db)?
        .map_or((0, 0), |guard| guard.value());
    let count = if gone { count.saturating_sub(1) } else { count };
    let total = total.saturating_sub(bytes);
    if gone {
        owners.remove(session).map_err(db)?;
    }
    if count == 0 {
        projects.remove(owner.as_str()).map_err(db)?;
    } else {
        projects
            .insert(owner.as_str(), (count, total))
            .map_err(db)?;
    }
    Ok(())
}

/// Checks a request's session id and key (when it has one) against `limits`, as every
/// operation of the store does, for a caller that answers before the store is open (a
/// store that does not exist yet holds nothing, but a bad name is still a bad name).
///
/// # Errors
///
/// [`StateError::Invalid`] naming what is wrong.
pub fn check_names(limits: &Limits, session: &str, key: Option<&str>) -> Result<(), StateError> {
    check_name("session id", session, limits.max_session_bytes)?;
    if let Some(key) = key {
        check_name("key", key, limits.max_key_bytes)?;
    }
    Ok(())
}

/// A session id or key must be 1 to `max` bytes without control characters.
fn check_name(what: &'static str, name: &str, max: usize) -> Result<(), StateError> {
    let reason = if name.is_empty() {
        "it is empty".to_owned()
    } else if name.len() > max {
        format!("it is {} bytes; the most it may have is {max}", name.len())
    } else if name.chars().any(char::is_control) {
        "it holds a control character".to_owned()
    } else {
        return Ok(());
    };
    Err(StateError::Invalid { what, reason })
}

/// The store's file under a state directory: `<state_dir>/state.redb`.
pub fn store_path(state_dir: &Path) -> PathBuf {
    state_dir.join("state.redb")
}

#[cfg(test)]
mod tests;
