//! How a command hook is executed, and which agent CLI's language it speaks: hookd's own
//! hook keys, read from the hook's settings entry.
//!
//! Gemini CLI starts a fresh process for every hook on every event. hookd can do better for
//! hooks that opt in, with keys Gemini CLI ignores (it reads only `type`, `command`, `name`,
//! `description`, `timeout` and `env`), so the same settings entry keeps working there:
//!
//! | key | values | meaning |
//! |---|---|---|
//! | `mode` | `"oneshot"` (default), `"persistent"` | `persistent`: one long-lived worker process answers one JSON line per event (NDJSON on stdin/stdout) |
//! | `pool` | 1–16 (default 1) | persistent only: how many workers may serve the hook at once |
//! | `idle_timeout` | milliseconds (default 600000) | persistent and pre-warmed hooks: how long an unused process is kept |
//! | `prewarm` | `true`, `false` (default) | one-shot only: keep one process already started, waiting on its stdin |
//! | `dialect` | a host's name: `"gemini"` (default), `"claude"`, ... | which CLI's payload and output shapes the hook speaks (`crate::dialect`) |
//! | `max_memory_mb` | MiB, 1 or more (default: no limit) | the most private writable memory (heap, anonymous mappings) the hook's process may allocate, enforced by the kernel (`RLIMIT_DATA`); meant for persistent workers, applies to any command hook |
//! | `drop_fields` | array of payload keys | keys left out of the hook's stdin payload, such as `llm_request` or `full_content` for an AfterModel filter that only reads `content` |
//! | `async` | `true`, `false` (default) | command hooks: run in the background; the event is answered without waiting for the hook, which takes no part in the decision (Claude Code's own `async` key, kept by the Claude settings conversion) |
//!
//! Every parser here returns the value to use and, for a key that is present but wrong, a
//! message for the settings diagnostics; a wrong key never discards the hook, its default
//! applies.

use serde_json::{Map, Value};

/// The most workers a persistent hook may have.
pub const MAX_POOL: usize = 16;

/// How long an unused worker or pre-started process is kept, by default (10 minutes).
pub const DEFAULT_IDLE_TIMEOUT_MS: u64 = 600_000;

/// The settings of a persistent hook's workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WorkerSettings {
    /// How many workers may serve the hook at once (1..=[`MAX_POOL`]); each answers one
    /// request at a time.
    pub pool: usize,
    /// How long an idle worker is kept before it is stopped, in milliseconds.
    pub idle_timeout_ms: u64,
}

/// How a command hook's process is run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExecMode {
    /// A fresh process per event (Gemini CLI's way).
    OneShot {
        /// Keep one process started ahead of the next event, blocked on its stdin, and
        /// stop it after this many idle milliseconds; `None`: start on demand.
        prewarm_idle_ms: Option<u64>,
    },
    /// A long-lived worker answering one NDJSON line per event.
    Persistent(WorkerSettings),
}

impl Default for ExecMode {
    fn default() -> Self {
        ExecMode::OneShot {
            prewarm_idle_ms: None,
        }
    }
}

/// A problem with one of the keys above: which key, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyProblem {
    /// The key, such as `pool`.
    pub key: &'static str,
    /// What is wrong and what applies instead.
    pub message: String,
}

/// Reads the hook's `drop_fields` key: the payload keys the hook does not want on its stdin.
/// `hook_event_name` cannot be dropped (a hook needs to know what it answers); a value that is
/// not an array of strings drops nothing.
pub fn parse_drop_fields(raw: &Map<String, Value>) -> (Vec<String>, Option<KeyProblem>) {
    let problem = |message: String| {
        Some(KeyProblem {
            key: "drop_fields",
            message,
        })
    };
    match raw.get("drop_fields") {
        None | Some(Value::Null) => (Vec::new(), None),
        Some(Value::Array(items)) => {
            let mut fields = Vec::new();
            for item in items {
                match item {
                    Value::String(name) if name == "hook_event_name" => {
                        return (
                            Vec::new(),
                            problem(
                                "drop_fields cannot drop hook_event_name; nothing is dropped"
                                    .to_owned(),
                            ),
                        );
                    }
                    Value::String(name) => fields.push(name.clone()),
                    other => {
                        return (
                            Vec::new(),
                            problem(format!(
                                "drop_fields must list key names, not {}; nothing is dropped",
                                crate::json::json_type(other)
                            )),
                        );
                    }
                }
            }
            (fields, None)
        }
        Some(other) => (
            Vec::new(),
            problem(format!(
                "drop_fields must be an array of key names, not {}; nothing is dropped",
                crate::json::json_type(other)
            )),
        ),
    }
}

/// The largest `max_memory_mb` accepted (1 TiB): beyond it the limit means nothing.
pub const MAX_MEMORY_MB: u64 = 1024 * 1024;

/// Reads the hook's `max_memory_mb` key: the process's `RLIMIT_DATA` in bytes, `None` for no
/// limit (absent, or invalid: the problem says so).
pub fn parse_max_memory(raw: &Map<String, Value>) -> (Option<u64>, Option<KeyProblem>) {
    match raw.get("max_memory_mb") {
        None | Some(Value::Null) => (None, None),
        Some(value) => match value.as_u64() {
            Some(mb) if (1..=MAX_MEMORY_MB).contains(&mb) => (Some(mb * 1024 * 1024), None),
            _ => (
                None,
                Some(KeyProblem {
                    key: "max_memory_mb",
                    message: format!(
                        "max_memory_mb must be a whole number of MiB from 1 to {MAX_MEMORY_MB}, \
                         not {value}; no limit applies"
                    ),
                }),
            ),
        },
    }
}

/// Reads the hook's `mode`, `pool`, `idle_timeout` and `prewarm` keys (and checks
/// `max_memory_mb`, see [`parse_max_memory`]).
pub fn parse_exec_mode(raw: &Map<String, Value>) -> (ExecMode, Vec<KeyProblem>) {
    let mut problems = Vec::new();
    if let (_, Some(problem)) = parse_max_memory(raw) {
        problems.push(problem);
    }
    let persistent = match raw.get("mode") {
        None | Some(Value::Null) => false,
        Some(Value::String(mode)) if mode == "oneshot" => false,
        Some(Value::String(mode)) if mode == "persistent" => true,
        Some(other) => {
            problems.push(KeyProblem {
                key: "mode",
                message: format!(
                    "mode must be \"oneshot\" or \"persistent\", not {other}; oneshot applies"
                ),
            });
            false
        }
    };
    let idle_timeout_ms = match raw.get("idle_timeout") {
        None | Some(Value::Null) => DEFAULT_IDLE_TIMEOUT_MS,
        Some(Value::Number(number)) => match number.as_u64() {
            Some(ms) if ms > 0 => ms,
            _ => {
                problems.push(KeyProblem {
                    key: "idle_timeout",
                    message: format!(
                        "idle_timeout must be a positive whole number of milliseconds, not \
                         {number}; {DEFAULT_IDLE_TIMEOUT_MS} applies"
                    ),
                });
                DEFAULT_IDLE_TIMEOUT_MS
            }
        },
        Some(other) => {
            problems.push(KeyProblem {
                key: "idle_timeout",
                message: format!(
                    "idle_timeout must be a number of milliseconds, not {}; \
                     {DEFAULT_IDLE_TIMEOUT_MS} applies",
                    crate::json::json_type(other)
                ),
            });
            DEFAULT_IDLE_TIMEOUT_MS
        }
    };
    let pool = match raw.get("pool") {
        None | Some(Value::Null) => 1,
        Some(value) => match value.as_u64() {
            Some(pool) if (1..=MAX_POOL as u64).contains(&pool) && persistent => pool as usize,
            Some(pool) if (1..=MAX_POOL as u64).contains(&pool) => {
                problems.push(KeyProblem {
                    key: "pool",
                    message: "pool only applies to \"mode\": \"persistent\"; ignored".to_owned(),
                });
                pool as usize
            }
            _ => {
                problems.push(KeyProblem {
                    key: "pool",
                    message: format!(
                        "pool must be a whole number from 1 to {MAX_POOL}, not {value}; 1 applies"
                    ),
                });
                1
            }
        },
    };
    let prewarm = match raw.get("prewarm") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(prewarm)) => *prewarm,
        Some(other) => {
            problems.push(KeyProblem {
                key: "prewarm",
                message: format!(
                    "prewarm must be true or false, not {}; false applies",
                    crate::json::json_type(other)
                ),
            });
            false
        }
    };
    if persistent {
        if prewarm {
            problems.push(KeyProblem {
                key: "prewarm",
                message: "prewarm does not apply to a persistent hook, whose worker is already \
                          running; ignored"
                    .to_owned(),
            });
        }
        return (
            ExecMode::Persistent(WorkerSettings {
                pool,
                idle_timeout_ms,
            }),
            problems,
        );
    }
    let prewarm_idle_ms = prewarm.then_some(idle_timeout_ms);
    (ExecMode::OneShot { prewarm_idle_ms }, problems)
}

/// Reads the hook's `async` key: whether the hook runs in the background, outside the
/// event's decision. Only `true` or `false`; anything else is a problem and `false` applies.
pub fn parse_async(raw: &Map<String, Value>) -> (bool, Option<KeyProblem>) {
    match raw.get("async") {
        None | Some(Value::Null) => (false, None),
        Some(Value::Bool(value)) => (*value, None),
        Some(other) => (
            false,
            Some(KeyProblem {
                key: "async",
                message: format!(
                    "async must be true or false, not {}; the hook runs in the event (false)",
                    crate::json::json_type(other)
                ),
            }),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn async_key() {
        // (entry, async, problem?)
        let cases = [
            (json!({}), false, false),
            (json!({"async": null}), false, false),
            (json!({"async": false}), false, false),
            (json!({"async": true}), true, false),
            (json!({"async": "true"}), false, true),
            (json!({"async": 1}), false, true),
            (json!({"async": [true]}), false, true),
        ];
        for (entry, expected, problem) in cases {
            let (value, found) = parse_async(&raw(entry.clone()));
            assert_eq!(value, expected, "{entry}");
            assert_eq!(found.is_some(), problem, "{entry}: {found:?}");
        }
    }

    fn raw(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn max_memory() {
        // (hook keys, limit in bytes, a problem reported)
        let cases = [
            (json!({}), None, false),
            (json!({"max_memory_mb": 64}), Some(64 << 20), false),
            (json!({"max_memory_mb": 0}), None, true),
            (json!({"max_memory_mb": -5}), None, true),
            (json!({"max_memory_mb": 1.5}), None, true),
            (json!({"max_memory_mb": "64"}), None, true),
            (json!({"max_memory_mb": MAX_MEMORY_MB + 1}), None, true),
        ];
        for (keys, limit, problem) in cases {
            let raw = raw(keys.clone());
            let (got, got_problem) = parse_max_memory(&raw);
            assert_eq!(got, limit, "{keys}");
            assert_eq!(got_problem.is_some(), problem, "{keys}");
            assert_eq!(
                parse_exec_mode(&raw)
                    .1
                    .iter()
                    .any(|p| p.key == "max_memory_mb"),
                problem,
                "{keys}"
            );
        }
    }

    #[test]
    fn exec_modes() {
        let one = |prewarm_idle_ms| ExecMode::OneShot { prewarm_idle_ms };
        let persistent = |pool, idle_timeout_ms| {
            ExecMode::Persistent(WorkerSettings {
                pool,
                idle_timeout_ms,
            })
        };
        // (entry, mode, problem keys)
        let cases: Vec<(Value, ExecMode, Vec<&str>)> = vec![
            (json!({}), one(None), vec![]),
            (json!({"mode": "oneshot"}), one(None), vec![]),
            (json!({"mode": null, "prewarm": null}), one(None), vec![]),
            (
                json!({"mode": "persistent"}),
                persistent(1, DEFAULT_IDLE_TIMEOUT_MS),
                vec![],
            ),
            (
                json!({"mode": "persistent", "pool": 4, "idle_timeout": 5000}),
                persistent(4, 5000),
                vec![],
            ),
            (
                json!({"mode": "persistent", "pool": 0}),
                persistent(1, DEFAULT_IDLE_TIMEOUT_MS),
                vec!["pool"],
            ),
            (
                json!({"mode": "persistent", "pool": 17}),
                persistent(1, DEFAULT_IDLE_TIMEOUT_MS),
                vec!["pool"],
            ),
            (
                json!({"mode": "persistent", "pool": "2"}),
                persistent(1, DEFAULT_IDLE_TIMEOUT_MS),
                vec!["pool"],
            ),
            (
                json!({"mode": "persistent", "prewarm": true}),
                persistent(1, DEFAULT_IDLE_TIMEOUT_MS),
                vec!["prewarm"],
            ),
            (json!({"mode": "Persistent"}), one(None), vec!["mode"]),
            (json!({"mode": 1}), one(None), vec!["mode"]),
            (json!({"pool": 2}), one(None), vec!["pool"]),
            (
                json!({"prewarm": true}),
                one(Some(DEFAULT_IDLE_TIMEOUT_MS)),
                vec![],
            ),
            (
                json!({"prewarm": true, "idle_timeout": 100}),
                one(Some(100)),
                vec![],
            ),
            (json!({"prewarm": "yes"}), one(None), vec!["prewarm"]),
            (
                json!({"prewarm": true, "idle_timeout": 0}),
                one(Some(DEFAULT_IDLE_TIMEOUT_MS)),
                vec!["idle_timeout"],
            ),
            (
                json!({"prewarm": true, "idle_timeout": -5}),
                one(Some(DEFAULT_IDLE_TIMEOUT_MS)),
                vec!["idle_timeout"],
            ),
            (
                json!({"prewarm": true, "idle_timeout": "1s"}),
                one(Some(DEFAULT_IDLE_TIMEOUT_MS)),
                vec!["idle_timeout"],
            ),
        ];
        for (entry, expected, keys) in cases {
            let (mode, problems) = parse_exec_mode(&raw(entry.clone()));
            assert_eq!(mode, expected, "{entry}");
            let found: Vec<&str> = problems.iter().map(|problem| problem.key).collect();
            assert_eq!(found, keys, "{entry}: {problems:?}");
        }
    }

    #[test]
    fn drop_fields() {
        // (entry, fields, problem?)
        let cases = [
            (json!({}), vec![], false),
            (json!({"drop_fields": null}), vec![], false),
            (json!({"drop_fields": []}), vec![], false),
            (
                json!({"drop_fields": ["llm_request", "full_content"]}),
                vec!["llm_request", "full_content"],
                false,
            ),
            (json!({"drop_fields": "llm_request"}), vec![], true),
            (json!({"drop_fields": ["llm_request", 3]}), vec![], true),
            (json!({"drop_fields": ["hook_event_name"]}), vec![], true),
        ];
        for (entry, expected, problem) in cases {
            let (fields, found) = parse_drop_fields(&raw(entry.clone()));
            assert_eq!(fields, expected, "{entry}");
            assert_eq!(found.is_some(), problem, "{entry}: {found:?}");
        }
    }
}
