//! One policy hook's Rego: its files read safely and compiled once per version ([`Policy`]),
//! evaluated against an input with a time limit ([`Policy::evaluate`]), and its `test_*`
//! rules run ([`Policy::run_tests`]).
//!
//! hookd reads the rules `deny`, `ask`, `context` and `tool_input` of the policy's package
//! through an entry module of its own, so a package defines only the rules it needs: an
//! undefined one counts as empty.

use std::path::{Path, PathBuf};
use std::time::Duration;

use regorus::Engine;
use regorus::utils::limits::ExecutionTimerConfig;
use serde_json::Value;

use crate::decision::{Decision, DecisionError};
use crate::files::{FileError, FileVersion, read_capped};

/// The most bytes of one `.rego` file.
pub const MAX_POLICY_BYTES: u64 = 1024 * 1024;
/// The most bytes of one JSON data file.
pub const MAX_DATA_BYTES: u64 = 16 * 1024 * 1024;
/// How long one evaluation may run before regorus stops it (checked as it goes; what it
/// cannot stop, the daemon's timeout and memory limit on the evaluating process do).
pub const DEFAULT_EVAL_LIMIT: Duration = Duration::from_millis(500);

/// The package of hookd's entry module.
const ENTRY_PACKAGE: &str = "hookd_entry";
/// The rule of the entry module evaluated for a decision.
const ENTRY_RULE: &str = "data.hookd_entry.result";

/// The files of one policy hook.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Sources {
    /// The `.rego` file.
    pub policy: PathBuf,
    /// JSON files merged into `data`, in order.
    pub data: Vec<PathBuf>,
}

impl Sources {
    /// Every file, the policy first.
    pub fn files(&self) -> impl Iterator<Item = &Path> {
        std::iter::once(self.policy.as_path()).chain(self.data.iter().map(PathBuf::as_path))
    }
}

/// Why a policy cannot be loaded or evaluated.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// A file could not be read as a policy or data file.
    #[error(transparent)]
    File(#[from] FileError),
    /// A file's contents are not the ones the user trusted.
    #[error("{path}: its contents changed since they were trusted (`hookctl trust`)")]
    Untrusted {
        /// The file.
        path: PathBuf,
    },
    /// The Rego does not compile, or a data file is not a JSON object.
    #[error("{path}: {message}")]
    Compile {
        /// The file.
        path: PathBuf,
        /// regorus's message.
        message: String,
    },
    /// The evaluation failed (an error, or the time limit).
    #[error("evaluation failed: {0}")]
    Evaluate(String),
    /// The result is not a decision.
    #[error("the policy's result is not a decision: {0}")]
    Decision(#[from] DecisionError),
}

/// A compiled policy, and the versions of the files it was compiled from.
#[derive(Debug)]
pub struct Policy {
    engine: Engine,
    package: String,
    policy_text: String,
    versions: Vec<FileVersion>,
    digests: Vec<(PathBuf, String)>,
}

impl Policy {
    /// Reads and compiles `sources`. `trusted` holds the SHA-256 digests the files must have
    /// (a project's policy runs only as the user trusted it); empty: any contents.
    pub fn load(sources: &Sources, trusted: &[(PathBuf, String)]) -> Result<Policy, PolicyError> {
        let mut versions = Vec::new();
        let mut digests = Vec::new();
        let mut read = |path: &Path, max: u64| -> Result<Vec<u8>, PolicyError> {
            let file = read_capped(path, max)?;
            if let Some((_, expected)) = trusted.iter().find(|(trusted, _)| trusted == path)
                && *expected != file.sha256
            {
                return Err(PolicyError::Untrusted {
                    path: path.to_owned(),
                });
            }
            versions.push(file.version);
            digests.push((path.to_owned(), file.sha256));
            Ok(file.bytes)
        };
        let policy_bytes = read(&sources.policy, MAX_POLICY_BYTES)?;
        let policy_text = String::from_utf8(policy_bytes).map_err(|_| PolicyError::Compile {
            path: sources.policy.clone(),
            message: "not UTF-8 text".to_owned(),
        })?;
        let mut engine = Engine::new();
        engine.set_rego_v0(false);
        engine.set_execution_timer_config(ExecutionTimerConfig {
            limit: DEFAULT_EVAL_LIMIT,
            check_interval: std::num::NonZeroU32::MIN.saturating_add(63),
        });
        let compile_error = |path: &Path, err: &dyn std::fmt::Display| PolicyError::Compile {
            path: path.to_owned(),
            message: err.to_string().trim().to_owned(),
        };
        let package = engine
            .add_policy(sources.policy.display().to_string(), policy_text.clone())
            .map_err(|err| compile_error(&sources.policy, &err))?;
        for data in &sources.data {
            let bytes = read(data, MAX_DATA_BYTES)?;
            let value: Value = serde_json::from_slice(&bytes)
                .map_err(|err| compile_error(data, &format!("not JSON: {err}")))?;
            if !value.is_object() {
                return Err(compile_error(data, &"a data file must hold a JSON object"));
            }
            engine
                .add_data(regorus::Value::from(value))
                .map_err(|err| compile_error(data, &err))?;
        }
        engine
            .add_policy("hookd-entry.rego".to_owned(), entry_module(&package))
            .map_err(|err| compile_error(&sources.policy, &err))?;
        // A policy that refers to something it does not define fails here, not per event.
        engine
            .eval_rule(ENTRY_RULE.to_owned())
            .map_err(|err| compile_error(&sources.policy, &err))?;
        Ok(Policy {
            engine,
            package,
            policy_text,
            versions,
            digests,
        })
    }

    /// The package the policy declares (`data.hookd.shell`).
    pub fn package(&self) -> &str {
        &self.package
    }

    /// Each file's SHA-256, as read for this version.
    pub fn digests(&self) -> &[(PathBuf, String)] {
        &self.digests
    }

    /// Whether any file is not the version this policy was compiled from (a save, a
    /// replacement, a removal).
    pub fn is_stale(&self) -> bool {
        self.versions.iter().any(FileVersion::changed)
    }

    /// The decision for `input` (the JSON [`crate::input::policy_input`] builds).
    pub fn evaluate(&mut self, input: Value) -> Result<Decision, PolicyError> {
        self.engine.set_input(regorus::Value::from(input));
        let result = self
            .engine
            .eval_rule(ENTRY_RULE.to_owned())
            .map_err(|err| PolicyError::Evaluate(err.to_string().trim().to_owned()))?;
        let json = result
            .to_json_str()
            .map_err(|err| PolicyError::Evaluate(err.to_string()))?;
        let value: Value =
            serde_json::from_str(&json).map_err(|err| PolicyError::Evaluate(err.to_string()))?;
        Ok(Decision::from_result(&value)?)
    }

    /// Runs every rule named `test_*` of the policy's package (with no input of its own: a
    /// test sets it with `with input as ...`), in the order they appear; a test passes when
    /// its rule is true.
    pub fn run_tests(&mut self) -> Vec<TestOutcome> {
        self.engine.set_input(regorus::Value::new_object());
        test_names(&self.policy_text)
            .into_iter()
            .map(|name| {
                let result = self.engine.eval_rule(format!("{}.{name}", self.package));
                let outcome = match result {
                    Ok(regorus::Value::Bool(true)) => Ok(()),
                    Ok(value) => Err(format!(
                        "is {}",
                        value
                            .to_json_str()
                            .unwrap_or_else(|_| "not true".to_owned())
                            .trim()
                    )),
                    Err(err) => Err(err.to_string().trim().to_owned()),
                };
                TestOutcome { name, outcome }
            })
            .collect()
    }
}

/// The result of one `test_*` rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestOutcome {
    /// The rule's name.
    pub name: String,
    /// `Ok` when it was true; else what it was, or the error.
    pub outcome: Result<(), String>,
}

/// The names of the `test_*` rules a policy's text defines, each once, in order.
fn test_names(text: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("test_") else {
            continue;
        };
        let tail: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let name = format!("test_{tail}");
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// hookd's entry module for the package `package` (`data.x.y`): one object with the four
/// rules hookd reads, each empty when the package does not define it.
fn entry_module(package: &str) -> String {
    let rule = |name: &str, empty: &str| {
        format!(
            "{name} := value if {{\n  value := {package}.{name}\n}} else := {empty}\n",
            package = package
        )
    };
    format!(
        "package {ENTRY_PACKAGE}\n\n{}{}{}{}\nresult := {{\"deny\": deny, \"ask\": ask, \
         \"context\": context, \"tool_input\": tool_input}}\n",
        rule("deny", "set()"),
        rule("ask", "set()"),
        rule("context", "set()"),
        rule("tool_input", "null"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    const SHELL: &str = r#"package hookd.shell

deny contains "no rm -rf" if {
  input.tool.kind == "shell"
  regex.match(`\brm\s+-[a-zA-Z]*[rR][a-zA-Z]*f`, input.tool.command)
}

ask contains reason if {
  some branch in data.protected
  contains(input.tool.command, concat(" ", ["push origin", branch]))
  reason := sprintf("pushing to %s", [branch])
}

test_denies_rm if {
  deny["no rm -rf"] with input as {"tool": {"kind": "shell", "command": "rm -rf /"}}
}

test_allows_ls if {
  count(deny) == 0 with input as {"tool": {"kind": "shell", "command": "ls"}}
}

test_wrong if {
  count(deny) == 1 with input as {"tool": {"kind": "shell", "command": "ls"}}
}
"#;

    #[test]
    fn a_policy_decides_with_its_data_and_runs_its_tests() {
        let dir = tempfile::tempdir().unwrap();
        let policy = write(dir.path(), "shell.rego", SHELL);
        let data = write(dir.path(), "data.json", r#"{"protected": ["main"]}"#);
        let sources = Sources {
            policy,
            data: vec![data],
        };
        let mut loaded = Policy::load(&sources, &[]).unwrap();
        assert_eq!(loaded.package(), "data.hookd.shell");
        let decide = |policy: &mut Policy, command: &str| {
            policy
                .evaluate(json!({"tool": {"kind": "shell", "command": command}}))
                .unwrap()
        };
        assert_eq!(decide(&mut loaded, "rm -rf build").deny, ["no rm -rf"]);
        assert_eq!(
            decide(&mut loaded, "git push origin main").ask,
            ["pushing to main"]
        );
        assert!(decide(&mut loaded, "ls").is_empty());
        let outcomes = loaded.run_tests();
        let names: Vec<(&str, bool)> = outcomes
            .iter()
            .map(|test| (test.name.as_str(), test.outcome.is_ok()))
            .collect();
        assert_eq!(
            names,
            [
                ("test_denies_rm", true),
                ("test_allows_ls", true),
                ("test_wrong", false)
            ]
        );
    }

    #[test]
    fn broken_policies_and_data_name_the_file_and_the_error() {
        let dir = tempfile::tempdir().unwrap();
        let broken = write(dir.path(), "broken.rego", "package x\n\ndeny if {\n");
        let good = write(dir.path(), "good.rego", "package x\n\ndeny if false\n");
        let not_object = write(dir.path(), "list.json", "[1, 2]");
        let not_json = write(dir.path(), "bad.json", "{");
        let cases = [
            (broken.clone(), vec![], "broken.rego"),
            (
                good.clone(),
                vec![not_object],
                "a data file must hold a JSON object",
            ),
            (good.clone(), vec![not_json], "not JSON"),
            (dir.path().join("missing.rego"), vec![], "missing.rego"),
        ];
        for (policy, data, expected) in cases {
            let err = Policy::load(&Sources { policy, data }, &[]).unwrap_err();
            assert!(err.to_string().contains(expected), "{err}");
        }
    }

    #[test]
    fn trusted_digests_must_match_and_staleness_is_seen() {
        let dir = tempfile::tempdir().unwrap();
        let policy = write(
            dir.path(),
            "p.rego",
            "package p\n\ndeny contains \"x\" if true\n",
        );
        let sources = Sources {
            policy: policy.clone(),
            data: vec![],
        };
        let loaded = Policy::load(&sources, &[]).unwrap();
        let digest = loaded.digests()[0].1.clone();
        assert!(!loaded.is_stale());
        assert!(Policy::load(&sources, &[(policy.clone(), digest.clone())]).is_ok());
        std::fs::write(&policy, "package p\n\ndeny contains \"y\" if true\n").unwrap();
        assert!(loaded.is_stale());
        let err = Policy::load(&sources, &[(policy, digest)]).unwrap_err();
        assert!(matches!(err, PolicyError::Untrusted { .. }), "{err}");
    }

    #[test]
    fn an_evaluation_past_its_time_limit_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        // Cooperative work regorus can interrupt: a comprehension over a million pairs.
        let policy = write(
            dir.path(),
            "slow.rego",
            "package slow\n\ndeny contains \"x\" if {\n  input.go\n  count({[a, b] | some a in numbers.range(1, 3000); some b in numbers.range(1, 3000)}) > 0\n}\n",
        );
        let mut loaded = Policy::load(
            &Sources {
                policy,
                data: vec![],
            },
            &[],
        )
        .unwrap();
        let started = std::time::Instant::now();
        let err = loaded.evaluate(json!({"go": true})).unwrap_err();
        assert!(err.to_string().contains("time limit"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn test_rules_are_found_once_each() {
        let names = test_names("test_a if {\n}\ntest_a if {\n}\n  test_indented\ntest_b := true\n");
        assert_eq!(names, ["test_a", "test_b"]);
    }
}
