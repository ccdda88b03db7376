//! `hookctl policy`: tools for authors of policy hooks, with no daemon.
//!
//! - `eval FILE --input PAYLOAD [--host NAME]`: one decision for one recorded payload (a
//!   hook's stdin in hookd's language, or with `--host` the host's own), printed with the
//!   input the policy saw and, with `--host`, what that host hears.
//! - `test PATH...`: runs the `test_*` rules of every `.rego` file given or found in the
//!   directories given; exits 1 when one fails.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use clap::Subcommand;
use hookd_core::dialect::Dialect;
use hookd_policy::{Context, Policy, Sources, policy_input};
use serde_json::{Map, Value};

/// Arguments of `hookctl policy`.
#[derive(Debug, clap::Args)]
pub struct PolicyArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: PolicyAction,
}

/// The `hookctl policy` subcommands.
#[derive(Debug, Subcommand)]
pub enum PolicyAction {
    /// Evaluate a policy for one payload and print the input it saw, its decision and the
    /// answer the host hears. Exits 2 when it denies, 1 on an error.
    Eval(EvalArgs),
    /// Run the `test_*` rules of policies (files, or every .rego file under directories).
    /// Exits 1 when a test fails or a policy does not compile.
    Test(TestArgs),
}

/// Arguments of `hookctl policy eval`.
#[derive(Debug, clap::Args)]
pub struct EvalArgs {
    /// The policy (.rego).
    pub file: PathBuf,
    /// The payload: a JSON file holding a hook's stdin (`-` for stdin).
    #[arg(long, value_name = "FILE")]
    pub input: PathBuf,
    /// The payload is this host's own (claude, codex, gemini), as its hooks get it: it is
    /// translated as the relay does, and the host's answer is printed too.
    #[arg(long, value_name = "NAME")]
    pub host: Option<String>,
    /// A JSON data file (repeatable), as the hook's `data`.
    #[arg(long, value_name = "FILE")]
    pub data: Vec<PathBuf>,
    /// The project root the policy sees [default: the payload's cwd].
    #[arg(long, value_name = "DIR")]
    pub project: Option<String>,
}

/// Arguments of `hookctl policy test`.
#[derive(Debug, clap::Args)]
pub struct TestArgs {
    /// Policy files, or directories searched for .rego files (not recursively into hidden
    /// directories) [default: the current directory].
    pub paths: Vec<PathBuf>,
    /// A JSON data file (repeatable) given to every policy.
    #[arg(long, value_name = "FILE")]
    pub data: Vec<PathBuf>,
}

/// Runs `hookctl policy`; prints and returns the exit code.
pub fn run(args: &PolicyArgs) -> ExitCode {
    let outcome = match &args.action {
        PolicyAction::Eval(args) => eval(args),
        PolicyAction::Test(args) => test(args),
    };
    match outcome {
        Ok((text, code)) => {
            print!("{text}");
            ExitCode::from(code)
        }
        Err(err) => {
            eprintln!("hookctl policy: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// `hookctl policy eval`: the report and the exit code (0, or 2 for a deny).
pub fn eval(args: &EvalArgs) -> anyhow::Result<(String, u8)> {
    let text = if args.input == Path::new("-") {
        std::io::read_to_string(std::io::stdin()).context("cannot read stdin")?
    } else {
        std::fs::read_to_string(&args.input)
            .with_context(|| format!("cannot read {}", args.input.display()))?
    };
    let payload: Map<String, Value> = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a JSON object", args.input.display()))?;
    let dialect = match &args.host {
        Some(name) => Some(
            Dialect::parse(name)
                .with_context(|| format!("unknown host {name:?} (one of {})", Dialect::names()))?,
        ),
        None => None,
    };
    let relayed = match dialect {
        Some(dialect) => {
            let host_event = payload
                .get("hook_event_name")
                .and_then(Value::as_str)
                .context("the payload has no hook_event_name")?
                .to_owned();
            Some(
                dialect
                    .relay()
                    .relay_input(&host_event, payload.clone())
                    .with_context(|| format!("{} cannot relay this payload", dialect.product()))?,
            )
        }
        None => None,
    };
    let hookd_payload = relayed
        .as_ref()
        .map_or_else(|| payload.clone(), |relayed| relayed.input.clone());
    let mut policy = Policy::load(
        &Sources {
            policy: args.file.clone(),
            data: args.data.clone(),
        },
        &[],
    )?;
    let context = Context {
        host: dialect.map(|d| d.name().to_owned()).unwrap_or_default(),
        project: args.project.clone().unwrap_or_default(),
    };
    let input = policy_input(&hookd_payload, &context);
    let decision = policy.evaluate(input.clone())?;
    let event = hookd_payload
        .get("hook_event_name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let answer = decision.hook_output(event);
    let mut report = String::new();
    let _ = writeln!(
        report,
        "input:\n{}",
        serde_json::to_string_pretty(&without_payload(&input)).unwrap_or_default()
    );
    let _ = writeln!(
        report,
        "decision: {}",
        if !decision.deny.is_empty() {
            "deny"
        } else if !decision.ask.is_empty() {
            "ask"
        } else {
            "none"
        }
    );
    let _ = writeln!(report, "hook answer (hookd): {answer}");
    if let (Some(dialect), Some(relayed)) = (dialect, &relayed) {
        let heard = dialect.relay().relay_answer(relayed, Some(&answer), &[]);
        let _ = writeln!(
            report,
            "{} hears: exit {}{}{}",
            dialect.product(),
            heard.exit_code,
            if heard.stdout.is_empty() {
                String::new()
            } else {
                format!(", stdout {}", heard.stdout.trim_end())
            },
            if heard.stderr.is_empty() {
                String::new()
            } else {
                format!(", stderr {:?}", heard.stderr.trim_end())
            }
        );
    }
    let code = if decision.deny.is_empty() { 0 } else { 2 };
    Ok((report, code))
}

/// The input without the raw payload (which the report's reader already has).
fn without_payload(input: &Value) -> Value {
    let mut input = input.clone();
    if let Some(object) = input.as_object_mut() {
        object.remove("payload");
    }
    input
}

/// `hookctl policy test`: the report and the exit code (0, or 1 when something failed).
pub fn test(args: &TestArgs) -> anyhow::Result<(String, u8)> {
    let roots = if args.paths.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        args.paths.clone()
    };
    let mut files = Vec::new();
    for root in &roots {
        collect_rego(root, &mut files, 0)?;
    }
    if files.is_empty() {
        bail!("no .rego file in {}", display_list(&roots));
    }
    let mut report = String::new();
    let (mut passed, mut failed) = (0usize, 0usize);
    for file in &files {
        let loaded = Policy::load(
            &Sources {
                policy: file.clone(),
                data: args.data.clone(),
            },
            &[],
        );
        let mut policy = match loaded {
            Ok(policy) => policy,
            Err(err) => {
                failed += 1;
                let _ = writeln!(report, "FAIL {}: does not compile: {err}", file.display());
                continue;
            }
        };
        let outcomes = policy.run_tests();
        if outcomes.is_empty() {
            let _ = writeln!(report, "---- {}: no test_* rule", file.display());
        }
        for test in outcomes {
            match test.outcome {
                Ok(()) => {
                    passed += 1;
                    let _ = writeln!(report, "PASS {}: {}", file.display(), test.name);
                }
                Err(why) => {
                    failed += 1;
                    let _ = writeln!(report, "FAIL {}: {} {why}", file.display(), test.name);
                }
            }
        }
    }
    let _ = writeln!(report, "{passed} passed, {failed} failed");
    Ok((report, u8::from(failed > 0)))
}

/// The .rego files at `path` (itself, or under it), sorted, not into hidden directories.
fn collect_rego(path: &Path, files: &mut Vec<PathBuf>, depth: usize) -> anyhow::Result<()> {
    const MAX_DEPTH: usize = 16;
    let meta =
        std::fs::metadata(path).with_context(|| format!("cannot read {}", path.display()))?;
    if meta.is_file() {
        files.push(path.to_owned());
        return Ok(());
    }
    if depth > MAX_DEPTH {
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
        .with_context(|| format!("cannot read {}", path.display()))?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .collect();
    entries.sort();
    for entry in entries {
        let name = entry.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with('.') {
            continue;
        }
        if entry.is_dir() {
            collect_rego(&entry, files, depth + 1)?;
        } else if name.ends_with(".rego") {
            files.push(entry);
        }
    }
    Ok(())
}

fn display_list(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|path| path.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The starter policies of docs/examples/policies pass their own tests.
    #[test]
    fn the_starter_policies_pass_their_tests() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/examples/policies");
        let (report, code) = test(&TestArgs {
            paths: vec![dir],
            data: vec![],
        })
        .unwrap();
        assert_eq!(code, 0, "{report}");
        assert!(!report.contains("FAIL"), "{report}");
        assert!(!report.contains("no test_"), "{report}");
        assert!(report.contains("passed, 0 failed"), "{report}");
    }

    #[test]
    fn a_failing_test_and_a_broken_policy_fail_the_run() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("a.rego"),
            "package a\n\ndeny contains \"x\" if input.x\n\ntest_ok if { count(deny) == 1 with input as {\"x\": true} }\n\ntest_bad if { count(deny) == 1 with input as {\"x\": false} }\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("b.rego"), "package b\n\ndeny if {\n").unwrap();
        let (report, code) = test(&TestArgs {
            paths: vec![dir.path().to_owned()],
            data: vec![],
        })
        .unwrap();
        assert_eq!(code, 1, "{report}");
        assert!(report.contains("PASS"), "{report}");
        assert!(report.contains("test_bad"), "{report}");
        assert!(report.contains("b.rego: does not compile"), "{report}");
        assert!(report.contains("1 passed, 2 failed"), "{report}");
    }

    #[test]
    fn eval_translates_a_claude_payload_and_says_what_claude_hears() {
        let dir = tempfile::tempdir().unwrap();
        let starter = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../docs/examples/policies/dangerous_shell.rego");
        let payload = dir.path().join("payload.json");
        std::fs::write(
            &payload,
            serde_json::json!({"session_id": "s", "transcript_path": "/t", "cwd": "/p",
                "hook_event_name": "PreToolUse", "tool_name": "Bash",
                "tool_input": {"command": "rm -rf /"}})
            .to_string(),
        )
        .unwrap();
        let (report, code) = eval(&EvalArgs {
            file: starter,
            input: payload,
            host: Some("claude".to_owned()),
            data: vec![],
            project: None,
        })
        .unwrap();
        assert_eq!(code, 2, "{report}");
        assert!(report.contains("\"kind\": \"shell\""), "{report}");
        assert!(report.contains("decision: deny"), "{report}");
        assert!(report.contains("Claude Code hears"), "{report}");
        assert!(report.contains("permissionDecision"), "{report}");
    }
}
