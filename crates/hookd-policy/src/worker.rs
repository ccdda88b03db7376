//! The policy evaluator's loop ([`serve`]): hookd runs each policy hook as a persistent worker
//! of its own binary (`hookd --policy-worker ...`), which reads one hook payload per line and
//! writes one hook answer per line, as any persistent worker does.
//!
//! Evaluating in a process of its own is what bounds a policy: regorus stops an evaluation
//! that runs past its time limit where it checks (loops, comprehensions, rule bodies), and
//! what it cannot stop (one builtin asked for a billion-element array) is stopped by the
//! daemon, which gives the worker a memory limit and kills it at the hook's timeout. Either
//! way the event's answer is the hook's failure policy, and no other client waits for it.
//!
//! The files are looked at before every event: a save is compiled at once; a save that does
//! not compile keeps the last good version deciding, and the error is written to stderr (the
//! daemon's log) once per broken version. With no good version, or when an evaluation fails,
//! the worker writes why to stderr and exits with status 1: the run fails and its failure
//! policy decides.

use std::io::{BufRead, Write};
use std::path::PathBuf;

use serde_json::{Map, Value};

use crate::input::{Context, policy_input};
use crate::policy::{Policy, PolicyError, Sources};

/// The first argument of the daemon's binary that makes it a policy evaluator.
pub const WORKER_FLAG: &str = "--policy-worker";

/// What one worker evaluates.
#[derive(Debug, Clone)]
pub struct WorkerSpec {
    /// The policy's files.
    pub sources: Sources,
    /// The digests the files must have (a trusted project policy), else empty.
    pub trusted: Vec<(PathBuf, String)>,
    /// The session's host and project.
    pub context: Context,
}

impl WorkerSpec {
    /// Parses the worker's arguments (after `--policy-worker`): `--policy FILE`, `--data FILE`
    /// (repeatable), `--sha256 FILE=HEX` (repeatable), `--host NAME`, `--project DIR`.
    pub fn from_args(args: &[String]) -> Result<WorkerSpec, String> {
        let mut policy = None;
        let mut data = Vec::new();
        let mut trusted = Vec::new();
        let mut context = Context::default();
        let mut args = args.iter();
        while let Some(flag) = args.next() {
            let mut value = || {
                args.next()
                    .cloned()
                    .ok_or_else(|| format!("{flag} needs a value"))
            };
            match flag.as_str() {
                "--policy" => policy = Some(PathBuf::from(value()?)),
                "--data" => data.push(PathBuf::from(value()?)),
                "--sha256" => {
                    let pair = value()?;
                    let (path, digest) = pair
                        .rsplit_once('=')
                        .ok_or_else(|| format!("--sha256 wants FILE=HEX, not {pair}"))?;
                    trusted.push((PathBuf::from(path), digest.to_owned()));
                }
                "--host" => context.host = value()?,
                "--project" => context.project = value()?,
                other => return Err(format!("unknown argument {other}")),
            }
        }
        let policy = policy.ok_or("--policy FILE is required")?;
        Ok(WorkerSpec {
            sources: Sources { policy, data },
            trusted,
            context,
        })
    }

    /// The worker's arguments for this spec (the inverse of [`WorkerSpec::from_args`]).
    pub fn to_args(&self) -> Vec<String> {
        let mut args = vec![
            "--policy".to_owned(),
            self.sources.policy.display().to_string(),
        ];
        for data in &self.sources.data {
            args.push("--data".to_owned());
            args.push(data.display().to_string());
        }
        for (path, digest) in &self.trusted {
            args.push("--sha256".to_owned());
            args.push(format!("{}={digest}", path.display()));
        }
        if !self.context.host.is_empty() {
            args.push("--host".to_owned());
            args.push(self.context.host.clone());
        }
        if !self.context.project.is_empty() {
            args.push("--project".to_owned());
            args.push(self.context.project.clone());
        }
        args
    }
}

/// Why the worker stopped.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// The policy has no version that compiles, or an evaluation failed.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// A line was not a JSON object.
    #[error("the event is not a JSON object: {0}")]
    Payload(String),
    /// Reading stdin or writing stdout failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Answers every line of `input` on `output` until `input` ends; returns the error that
/// stopped it otherwise (the caller writes it to stderr and exits non-zero). `log` gets the
/// messages about broken saves.
pub fn serve(
    spec: &WorkerSpec,
    input: impl BufRead,
    mut output: impl Write,
    mut log: impl Write,
) -> Result<(), WorkerError> {
    let mut current: Option<Policy> = None;
    let mut reported: Option<String> = None;
    for line in input.lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        if current.as_ref().is_none_or(Policy::is_stale) {
            match Policy::load(&spec.sources, &spec.trusted) {
                Ok(policy) => {
                    current = Some(policy);
                    reported = None;
                }
                Err(err) if current.is_some() => {
                    let text = err.to_string();
                    if reported.as_deref() != Some(text.as_str()) {
                        let _ = writeln!(
                            log,
                            "policy {}: {text}; the last good version still decides",
                            spec.sources.policy.display()
                        );
                        reported = Some(text);
                    }
                }
                Err(err) => return Err(err.into()),
            }
        }
        let Some(policy) = current.as_mut() else {
            continue;
        };
        let payload: Map<String, Value> =
            serde_json::from_str(&line).map_err(|err| WorkerError::Payload(err.to_string()))?;
        let event = payload
            .get("hook_event_name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let decision = policy.evaluate(policy_input(&payload, &spec.context))?;
        let mut text = decision.hook_output(&event).to_string();
        text.push('\n');
        output.write_all(text.as_bytes())?;
        output.flush()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(policy: PathBuf) -> WorkerSpec {
        WorkerSpec {
            sources: Sources {
                policy,
                data: vec![],
            },
            trusted: vec![],
            context: Context {
                host: "codex".to_owned(),
                project: "/p".to_owned(),
            },
        }
    }

    #[test]
    fn arguments_round_trip() {
        let mut original = spec(PathBuf::from("/x/p.rego"));
        original.sources.data.push(PathBuf::from("/x/d.json"));
        original
            .trusted
            .push((PathBuf::from("/x/p.rego"), "ab".repeat(32)));
        let parsed = WorkerSpec::from_args(&original.to_args()).unwrap();
        assert_eq!(parsed.sources, original.sources);
        assert_eq!(parsed.trusted, original.trusted);
        assert_eq!(parsed.context, original.context);
        assert!(WorkerSpec::from_args(&["--data".to_owned()]).is_err());
        assert!(WorkerSpec::from_args(&[]).is_err());
    }

    #[test]
    fn each_line_gets_an_answer_and_a_broken_save_keeps_the_last_good_version() {
        let dir = tempfile::tempdir().unwrap();
        let policy = dir.path().join("p.rego");
        std::fs::write(
            &policy,
            "package p\n\ndeny contains \"no rm\" if contains(input.tool.command, \"rm \")\n",
        )
        .unwrap();
        let spec = spec(policy.clone());
        let event = |command: &str| {
            serde_json::json!({"hook_event_name": "BeforeTool", "tool_name": "run_shell_command",
                "tool_input": {"command": command}})
            .to_string()
        };
        let run = |lines: &[String]| {
            let mut out = Vec::new();
            let mut log = Vec::new();
            let result = serve(&spec, lines.join("\n").as_bytes(), &mut out, &mut log);
            (
                result,
                String::from_utf8(out).unwrap(),
                String::from_utf8(log).unwrap(),
            )
        };
        let (result, out, _) = run(&[event("rm x"), event("ls")]);
        assert!(result.is_ok());
        assert_eq!(
            out, "{\"decision\":\"deny\",\"reason\":\"no rm\"}\n{}\n",
            "{out}"
        );

        // No good version at all: the worker stops with the error.
        std::fs::write(&policy, "package p\n\ndeny if {\n").unwrap();
        let (result, out, _) = run(&[event("rm x")]);
        assert!(matches!(result, Err(WorkerError::Policy(_))), "{result:?}");
        assert_eq!(out, "");
    }

    #[test]
    fn a_save_between_events_is_picked_up_and_a_broken_one_is_reported_once() {
        let dir = tempfile::tempdir().unwrap();
        let policy = dir.path().join("p.rego");
        std::fs::write(&policy, "package p\n\ndeny contains \"one\" if true\n").unwrap();
        let spec = spec(policy.clone());
        let line = "{\"hook_event_name\":\"BeforeAgent\",\"prompt\":\"x\"}\n";
        // A reader that saves a new version of the policy after the first event.
        struct Saving<'a> {
            policy: &'a std::path::Path,
            lines: std::collections::VecDeque<(&'static str, Option<&'static str>)>,
            buffer: Vec<u8>,
        }
        impl std::io::Read for Saving<'_> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                if self.buffer.is_empty() {
                    let Some((line, save)) = self.lines.pop_front() else {
                        return Ok(0);
                    };
                    if let Some(text) = save {
                        let next = self.policy.with_extension("next");
                        std::fs::write(&next, text)?;
                        std::fs::rename(&next, self.policy)?;
                    }
                    self.buffer = line.as_bytes().to_vec();
                }
                let n = buf.len().min(self.buffer.len());
                buf[..n].copy_from_slice(&self.buffer[..n]);
                self.buffer.drain(..n);
                Ok(n)
            }
        }
        let reader = Saving {
            policy: &policy,
            lines: [
                (line, None),
                (line, Some("package p\n\ndeny contains \"two\" if true\n")),
                (line, Some("package p\n\ndeny if {\n")),
                (line, None),
            ]
            .into(),
            buffer: Vec::new(),
        };
        let mut out = Vec::new();
        let mut log = Vec::new();
        serve(&spec, std::io::BufReader::new(reader), &mut out, &mut log).unwrap();
        let out = String::from_utf8(out).unwrap();
        let reasons: Vec<&str> = out
            .lines()
            .map(|line| {
                let value: Value = serde_json::from_str(line).unwrap();
                match value["reason"].as_str() {
                    Some("one") => "one",
                    Some("two") => "two",
                    _ => "?",
                }
            })
            .collect();
        assert_eq!(reasons, ["one", "two", "two", "two"]);
        let log = String::from_utf8(log).unwrap();
        assert_eq!(log.matches("last good version").count(), 1, "{log}");
    }
}
