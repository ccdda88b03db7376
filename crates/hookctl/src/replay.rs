//! `hookctl replay`: runs recorded events against the current settings and shows where the
//! decision differs from the recorded one.
//!
//! The input is JSON lines, either hookd's audit log (lines written with `hookd --audit-stdin`,
//! which carry the payload the hooks were given, and the decision the run reached) or plain
//! payloads, as a hook reads them on stdin (`hook_event_name`, `cwd`, the event's fields).
//! Each is sent to the daemon as an event: its hooks really run, with the current settings,
//! and the answer goes no further than this command. A payload line has no recorded decision;
//! one that carries a `decision` key of its own is compared with it.
//!
//! With `--policy FILE`, no daemon is asked: each event is decided by that Rego policy alone
//! (as a policy hook would decide it, `docs/policies.md`), to see what a policy would have
//! decided on what really happened before it is installed.
//!
//! Exit codes, like `diff`'s: 0 when every decision is the recorded one, 1 when one differs,
//! 2 when the input or the daemon failed.

use std::fmt::Write;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use hookd_client::{Client, EventRequest};
use hookd_protocol::EventResult;
use serde::Serialize;
use serde_json::{Map, Value};

/// The longest input line read, in bytes.
const MAX_LINE_BYTES: u64 = 16 * 1024 * 1024;

/// The fields hookd adds to every payload; the rest is the event's own input.
const BASE_FIELDS: [&str; 5] = [
    "hook_event_name",
    "session_id",
    "transcript_path",
    "cwd",
    "timestamp",
];

/// Arguments of `hookctl replay`.
#[derive(Debug, clap::Args)]
pub struct ReplayArgs {
    /// The recorded events: an audit log written with `hookd --audit-stdin`, or a file of
    /// hook payloads, one JSON object per line; `-` reads stdin.
    pub file: String,
    /// Run every event for this project dir instead of the recorded one.
    #[arg(long)]
    pub cwd: Option<PathBuf>,
    /// Replay at most this many events.
    #[arg(long, default_value_t = 10_000)]
    pub limit: usize,
    /// Show only the events whose decision differs (and the summary).
    #[arg(long)]
    pub only_differences: bool,
    /// Print one JSON object per event and a summary object.
    #[arg(long)]
    pub json: bool,
    /// Decide every event with this Rego policy instead of the daemon's hooks (no daemon is
    /// needed): what the policy would have decided.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// A JSON data file for --policy (repeatable).
    #[arg(long, value_name = "FILE", requires = "policy")]
    pub data: Vec<PathBuf>,
}

/// Who decides the replayed events.
enum Judge {
    /// The daemon, with its current settings.
    Daemon(Client),
    /// One policy, evaluated here.
    Policy(Box<hookd_policy::Policy>),
}

/// One recorded event, ready to send.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    /// The input line it came from (1-based).
    pub line: usize,
    /// The event name.
    pub event: String,
    /// The project dir.
    pub cwd: String,
    /// The session id.
    pub session_id: String,
    /// The event's own fields.
    pub input: Map<String, Value>,
    /// The recorded final decision, when the line has one.
    pub decision: Option<String>,
    /// The recorded decision of each hook, by name, when the line has them.
    pub hooks: Vec<(String, String)>,
}

/// What reading one line gave.
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    /// An event to replay.
    Event(Recorded),
    /// A line that cannot be replayed, and why.
    Skipped(String),
}

/// The final decision as `stats` and the log name it: `decision`, else `stop` for
/// `continue: false`, else `none`.
fn decision_of(decision: Option<&Value>, continues: Option<&Value>) -> String {
    if let Some(decision) = decision.and_then(Value::as_str) {
        return decision.to_owned();
    }
    if continues == Some(&Value::Bool(false)) {
        return "stop".to_owned();
    }
    "none".to_owned()
}

/// Reads one input line (an audit line or a payload).
pub fn parse_line(line: usize, text: &str) -> Parsed {
    let value: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(err) => return Parsed::Skipped(format!("not JSON: {err}")),
    };
    let Value::Object(mut object) = value else {
        return Parsed::Skipped("not a JSON object".to_owned());
    };
    let is_audit = object.contains_key("hooks") && object.contains_key("generation");
    if is_audit {
        let Some(Value::Object(stdin)) = object.remove("stdin") else {
            return Parsed::Skipped(
                "an audit line without the hooks' payload (start hookd with --audit-stdin to \
                 record it)"
                    .to_owned(),
            );
        };
        let hooks = object
            .get("hooks")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|hook| {
                let name = hook.get("name")?.as_str()?.to_owned();
                let decision = match hook.get("decision").and_then(Value::as_str) {
                    Some(decision) => decision.to_owned(),
                    None => match hook.get("failure").and_then(Value::as_str) {
                        Some(failure) => failure.to_owned(),
                        None if hook.get("success") == Some(&Value::Bool(true)) => "ok".to_owned(),
                        None => hook.get("outcome")?.as_str()?.to_owned(),
                    },
                };
                Some((name, decision))
            })
            .collect();
        let decision = Some(decision_of(object.get("decision"), object.get("continue")));
        return from_payload(line, stdin, object.get("cwd"), decision, hooks);
    }
    let decision = object
        .remove("decision")
        .map(|decision| decision_of(Some(&decision), None));
    from_payload(line, object, None, decision, Vec::new())
}

/// A recorded event from a hook payload.
fn from_payload(
    line: usize,
    mut payload: Map<String, Value>,
    project: Option<&Value>,
    decision: Option<String>,
    hooks: Vec<(String, String)>,
) -> Parsed {
    let Some(event) = payload
        .get("hook_event_name")
        .and_then(Value::as_str)
        .map(str::to_owned)
    else {
        return Parsed::Skipped("no hook_event_name".to_owned());
    };
    let cwd = project
        .and_then(Value::as_str)
        .or_else(|| payload.get("cwd").and_then(Value::as_str))
        .unwrap_or_default()
        .to_owned();
    let session_id = payload
        .get("session_id")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    for field in BASE_FIELDS {
        payload.remove(field);
    }
    Parsed::Event(Recorded {
        line,
        event,
        cwd,
        session_id,
        input: payload,
        decision,
        hooks,
    })
}

/// One replayed event, as `--json` prints it.
#[derive(Debug, Clone, Serialize)]
struct Replayed {
    line: usize,
    event: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_name: Option<String>,
    recorded: Option<String>,
    now: String,
    differs: bool,
    /// Each hook that ran now: `name` and `decision`.
    hooks: Vec<(String, String)>,
}

/// The summary, as `--json` prints it last.
#[derive(Debug, Default, Clone, Serialize)]
struct Summary {
    replayed: usize,
    differ: usize,
    skipped: usize,
}

/// A hook record's decision, as the audit log's records are read.
fn hook_decision(record: &hookd_protocol::HookRecord) -> String {
    match record
        .output
        .as_ref()
        .and_then(|output| output.get("decision"))
        .and_then(Value::as_str)
    {
        Some(decision) => decision.to_owned(),
        None => match &record.failure {
            Some(failure) => failure.clone(),
            None if record.success => "ok".to_owned(),
            None => "failed".to_owned(),
        },
    }
}

/// Runs `hookctl replay` and returns its exit code.
pub async fn run(socket: &Path, args: &ReplayArgs) -> ExitCode {
    match replay(socket, args).await {
        Ok(false) => ExitCode::SUCCESS,
        Ok(true) => ExitCode::from(1),
        Err(err) => {
            eprintln!("hookctl: {}", crate::error_text(&err));
            ExitCode::from(2)
        }
    }
}

/// Replays every line; returns whether a decision differed.
async fn replay(socket: &Path, args: &ReplayArgs) -> anyhow::Result<bool> {
    let reader: Box<dyn Read> = if args.file == "-" {
        Box::new(std::io::stdin())
    } else {
        Box::new(
            std::fs::File::open(&args.file)
                .with_context(|| format!("cannot open {}", args.file))?,
        )
    };
    let cwd = args
        .cwd
        .clone()
        .map(|dir| crate::absolute_cwd(Some(dir)))
        .transpose()?;
    let mut judge = match &args.policy {
        Some(policy) => Judge::Policy(Box::new(hookd_policy::Policy::load(
            &hookd_policy::Sources {
                policy: policy.clone(),
                data: args.data.clone(),
            },
            &[],
        )?)),
        None => Judge::Daemon(crate::connect(socket, true).await?),
    };
    let mut reader = BufReader::new(reader);
    let mut summary = Summary::default();
    let mut number = 0;
    let mut buffer = Vec::new();
    loop {
        buffer.clear();
        let read = (&mut reader)
            .take(MAX_LINE_BYTES + 1)
            .read_until(b'\n', &mut buffer)
            .with_context(|| format!("cannot read {}", args.file))?;
        if read == 0 {
            break;
        }
        number += 1;
        if buffer.len() as u64 > MAX_LINE_BYTES {
            bail!("line {number} is longer than {MAX_LINE_BYTES} bytes");
        }
        let text = String::from_utf8_lossy(&buffer);
        if text.trim().is_empty() {
            continue;
        }
        if summary.replayed >= args.limit {
            eprintln!("hookctl: stopped after {} events (--limit)", args.limit);
            break;
        }
        let recorded = match parse_line(number, text.trim()) {
            Parsed::Event(recorded) => recorded,
            Parsed::Skipped(reason) => {
                summary.skipped += 1;
                eprintln!("hookctl: line {number} skipped: {reason}");
                continue;
            }
        };
        let replayed = match &mut judge {
            Judge::Daemon(client) => {
                let result = send(client, &recorded, cwd.as_deref()).await?;
                compare(&recorded, &result)
            }
            Judge::Policy(policy) => decide(policy, &recorded, cwd.as_deref())?,
        };
        summary.replayed += 1;
        if replayed.differs {
            summary.differ += 1;
        }
        if args.only_differences && !replayed.differs {
            continue;
        }
        let text = if args.json {
            crate::to_json_line(&replayed)?
        } else {
            render(&recorded, &replayed)
        };
        print!("{text}");
    }
    if args.json {
        print!("{}", crate::to_json_line(&summary)?);
    } else {
        println!(
            "{} events replayed, {} with a different decision, {} lines skipped",
            summary.replayed, summary.differ, summary.skipped
        );
    }
    Ok(summary.differ > 0)
}

/// Sends one recorded event and returns the daemon's answer.
async fn send(
    client: &Client,
    recorded: &Recorded,
    cwd: Option<&Path>,
) -> anyhow::Result<EventResult> {
    let dir = match cwd {
        Some(dir) => dir.display().to_string(),
        None if Path::new(&recorded.cwd).is_absolute() => recorded.cwd.clone(),
        None => bail!(
            "line {}: no absolute project dir recorded; pass --cwd",
            recorded.line
        ),
    };
    let mut request = EventRequest::new(recorded.event.clone(), dir);
    request.input = recorded.input.clone();
    request.session_id = recorded.session_id.clone();
    let response = client
        .event(request)
        .await
        .with_context(|| format!("line {}: the daemon rejected the event", recorded.line))?;
    Ok(response.result)
}

/// The replayed event against its record.
fn compare(recorded: &Recorded, result: &EventResult) -> Replayed {
    let final_output = result.final_output.as_ref();
    let now = decision_of(
        final_output.and_then(|output| output.get("decision")),
        final_output.and_then(|output| output.get("continue")),
    );
    let differs = recorded
        .decision
        .as_ref()
        .is_some_and(|decision| *decision != now);
    let hooks = result
        .hooks
        .iter()
        .map(|hook| (hook.name.clone(), hook_decision(hook)))
        .collect();
    replayed(recorded, now, differs, hooks)
}

/// The record of `recorded` decided `now` by `hooks`.
fn replayed(
    recorded: &Recorded,
    now: String,
    differs: bool,
    hooks: Vec<(String, String)>,
) -> Replayed {
    Replayed {
        line: recorded.line,
        event: recorded.event.clone(),
        tool_name: recorded
            .input
            .get("tool_name")
            .and_then(Value::as_str)
            .map(str::to_owned),
        differs,
        recorded: recorded.decision.clone(),
        now,
        hooks,
    }
}

/// The recorded event decided by `policy` alone: `deny`, `ask`, else `allow` (which a
/// recorded `none` also is: nothing decided).
fn decide(
    policy: &mut hookd_policy::Policy,
    recorded: &Recorded,
    cwd: Option<&Path>,
) -> anyhow::Result<Replayed> {
    let mut payload = recorded.input.clone();
    payload.insert(
        "hook_event_name".to_owned(),
        Value::from(recorded.event.as_str()),
    );
    payload.insert(
        "session_id".to_owned(),
        Value::from(recorded.session_id.as_str()),
    );
    let project = cwd.map_or_else(|| recorded.cwd.clone(), |dir| dir.display().to_string());
    payload
        .entry("cwd")
        .or_insert_with(|| Value::from(project.as_str()));
    let context = hookd_policy::Context {
        host: String::new(),
        project,
    };
    let decision = policy
        .evaluate(hookd_policy::policy_input(&payload, &context))
        .with_context(|| format!("line {}: the policy failed", recorded.line))?;
    let now = if !decision.deny.is_empty() {
        "deny"
    } else if !decision.ask.is_empty() {
        "ask"
    } else {
        "allow"
    };
    let same = |recorded: &str| {
        recorded == now || (now == "allow" && matches!(recorded, "none" | "allow"))
    };
    let differs = recorded
        .decision
        .as_deref()
        .is_some_and(|decision| !same(decision));
    let hooks = vec![("policy".to_owned(), now.to_owned())];
    Ok(replayed(recorded, now.to_owned(), differs, hooks))
}

/// One replayed event as text.
fn render(recorded: &Recorded, replayed: &Replayed) -> String {
    let mut out = String::new();
    let mut what = replayed.event.clone();
    if let Some(tool) = &replayed.tool_name {
        let _ = write!(what, " {tool}");
    }
    let hooks = |hooks: &[(String, String)]| -> String {
        if hooks.is_empty() {
            return "no hooks".to_owned();
        }
        let parts: Vec<String> = hooks
            .iter()
            .map(|(name, decision)| format!("{name}={decision}"))
            .collect();
        parts.join(" ")
    };
    match &replayed.recorded {
        Some(before) if replayed.differs => {
            let _ = writeln!(
                out,
                "line {}: {what}: DIFFERS: recorded {before}, now {}",
                replayed.line, replayed.now
            );
            if !recorded.hooks.is_empty() {
                let _ = writeln!(out, "  recorded: {}", hooks(&recorded.hooks));
            }
            let _ = writeln!(out, "  now:      {}", hooks(&replayed.hooks));
        }
        Some(_) => {
            let _ = writeln!(
                out,
                "line {}: {what}: same: {} ({})",
                replayed.line,
                replayed.now,
                hooks(&replayed.hooks)
            );
        }
        None => {
            let _ = writeln!(
                out,
                "line {}: {what}: {} ({})",
                replayed.line,
                replayed.now,
                hooks(&replayed.hooks)
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_policy_decides_recorded_events_without_a_daemon() {
        let dir = tempfile::tempdir().unwrap();
        let policy = dir.path().join("p.rego");
        std::fs::write(
            &policy,
            "package p\n\ndeny contains \"no rm\" if contains(input.tool.command, \"rm -rf\")\n",
        )
        .unwrap();
        let mut loaded = hookd_policy::Policy::load(
            &hookd_policy::Sources {
                policy,
                data: vec![],
            },
            &[],
        )
        .unwrap();
        // (command, recorded decision, decided now, differs)
        let cases = [
            ("rm -rf /", Some("allow"), "deny", true),
            ("rm -rf /", Some("deny"), "deny", false),
            ("ls", Some("none"), "allow", false),
            ("ls", None, "allow", false),
        ];
        for (command, before, now, differs) in cases {
            let recorded = Recorded {
                line: 1,
                event: "BeforeTool".to_owned(),
                cwd: "/p".to_owned(),
                session_id: "s".to_owned(),
                input:
                    json!({"tool_name": "run_shell_command", "tool_input": {"command": command}})
                        .as_object()
                        .unwrap()
                        .clone(),
                decision: before.map(str::to_owned),
                hooks: vec![],
            };
            let replayed = decide(&mut loaded, &recorded, None).unwrap();
            assert_eq!(replayed.now, now, "{command}");
            assert_eq!(replayed.differs, differs, "{command} {before:?}");
        }
    }

    #[test]
    fn lines_become_events_or_are_skipped_with_a_reason() {
        let audit = json!({"time": "t", "event": "BeforeTool", "session_id": "s", "cwd": "/p",
            "tool_name": "x", "generation": 1,
            "hooks": [{"name": "gate", "decision": "deny", "success": true, "failure": null},
                      {"name": "slow", "decision": null, "success": false, "failure": "timed_out"}],
            "decision": "deny", "continue": null, "success": true,
            "stdin": {"hook_event_name": "BeforeTool", "session_id": "s", "transcript_path": "",
                      "cwd": "/p/sub", "timestamp": "t", "tool_name": "x", "tool_input": {}}});
        let Parsed::Event(event) = parse_line(1, &audit.to_string()) else {
            panic!("not an event")
        };
        assert_eq!(event.event, "BeforeTool");
        assert_eq!(
            event.cwd, "/p",
            "the audit line's project dir wins over the payload's"
        );
        assert_eq!(event.decision.as_deref(), Some("deny"));
        assert_eq!(
            event.hooks,
            [
                ("gate".to_owned(), "deny".to_owned()),
                ("slow".to_owned(), "timed_out".to_owned())
            ]
        );
        assert_eq!(
            Value::Object(event.input),
            json!({"tool_name": "x", "tool_input": {}})
        );

        let stopped = json!({"event": "AfterAgent", "generation": 1, "hooks": [], "cwd": "/p",
            "decision": null, "continue": false,
            "stdin": {"hook_event_name": "AfterAgent", "cwd": "/p"}});
        let Parsed::Event(event) = parse_line(2, &stopped.to_string()) else {
            panic!("not an event")
        };
        assert_eq!(event.decision.as_deref(), Some("stop"));

        let payload = json!({"hook_event_name": "BeforeTool", "cwd": "/q", "tool_name": "y"});
        let Parsed::Event(event) = parse_line(3, &payload.to_string()) else {
            panic!("not an event")
        };
        assert_eq!((event.cwd.as_str(), event.decision), ("/q", None));

        let skipped = [
            ("{", "not JSON"),
            ("[1]", "not a JSON object"),
            (r#"{"tool_name":"x"}"#, "no hook_event_name"),
            (
                r#"{"event":"BeforeTool","generation":1,"hooks":[]}"#,
                "--audit-stdin",
            ),
        ];
        for (line, reason) in skipped {
            match parse_line(9, line) {
                Parsed::Skipped(why) => assert!(why.contains(reason), "{line}: {why}"),
                other => panic!("{line}: {other:?}"),
            }
        }
    }
}
