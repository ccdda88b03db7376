//! The benchmark's world: a temp dir with a home, a project whose settings register the
//! hooks under test, the sockets, and the request bodies.
//!
//! One project serves every row. Its `BeforeTool` definitions are selected by tool name:
//! `bench_one` runs one `true` hook, `bench_five` runs five in parallel, and `bench_none`
//! matches nothing, which is the no-hook event.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::Context;
use hookd_protocol::{ClientMessage, EventRequest, RequestId, encode};
use serde_json::{Map, Value, json};

/// The event every row fires.
pub const EVENT: &str = "BeforeTool";

/// The tool name that matches no hook.
pub const TOOL_NO_HOOK: &str = "bench_none";

/// The tool name that matches the definition with one hook.
pub const TOOL_ONE_HOOK: &str = "bench_one";

/// The tool name that matches the definition with five hooks.
pub const TOOL_FIVE_HOOKS: &str = "bench_five";

/// The command of every hook: the cheapest command a shell can run.
pub const HOOK_COMMAND: &str = "true";

/// The tool name whose event runs one waiting hook.
pub const TOOL_SLEEP_ONE: &str = "bench_sleep_one";

/// The tool name whose event runs five waiting hooks in parallel.
pub const TOOL_SLEEP_FIVE: &str = "bench_sleep_five";

/// A hook that waits instead of computing, like one that calls a network service: five of
/// them in parallel should take as long as one, whatever the core count.
pub const SLEEP_COMMAND: &str = "sleep 0.02";

/// How many hooks the parallel row runs.
pub const PARALLEL_HOOKS: usize = 5;

/// The request id of every event: requests go one at a time on each connection, so an id
/// is free again as soon as its answer arrives.
const EVENT_ID: u64 = 1;

/// The temp dir and everything in it; removed when dropped.
#[derive(Debug)]
pub struct Fixture {
    dir: tempfile::TempDir,
    /// The daemon's `HOME`.
    pub home: PathBuf,
    /// The project directory, which is also every event's `cwd`.
    pub project: PathBuf,
}

impl Fixture {
    /// Creates the temp dir, the home and the project with its settings.
    pub fn create() -> anyhow::Result<Fixture> {
        // A short name under the temp dir keeps socket paths under the 108-byte limit.
        let dir = tempfile::Builder::new()
            .prefix("hookd-bench-")
            .tempdir()
            .context("cannot create a temp dir")?;
        let home = dir.path().join("home");
        let project = dir.path().join("project");
        std::fs::create_dir_all(home.join(".gemini"))
            .with_context(|| format!("cannot create {}", home.display()))?;
        let settings_dir = project.join(".gemini");
        std::fs::create_dir_all(&settings_dir)
            .with_context(|| format!("cannot create {}", settings_dir.display()))?;
        let settings = serde_json::to_string_pretty(&project_settings())?;
        std::fs::write(settings_dir.join("settings.json"), settings)
            .context("cannot write the project settings")?;
        Ok(Fixture { dir, home, project })
    }

    /// A path inside the temp dir.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The project directory as the events' `cwd`.
    pub fn cwd(&self) -> String {
        self.project.display().to_string()
    }

    /// The arguments that start the daemon helper on `socket`.
    pub fn daemon_args(&self, socket: &Path, runtime: &str) -> Vec<OsString> {
        crate::daemon::helper_args(socket, &self.home, self.dir.path(), runtime)
    }

    /// Where the daemon looks for system settings: a file that does not exist.
    pub fn system_settings_path(&self) -> String {
        self.path("etc-settings.json").display().to_string()
    }

    /// Where the daemon looks for system defaults: a file that does not exist.
    pub fn system_defaults_path(&self) -> String {
        self.path("etc-system-defaults.json").display().to_string()
    }

    /// The environment helpers start with: a `PATH` to find `bash`, and the private home.
    pub fn helper_env(&self) -> Vec<(String, String)> {
        vec![
            (
                "PATH".to_owned(),
                std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".to_owned()),
            ),
            ("HOME".to_owned(), self.home.display().to_string()),
        ]
    }

    /// The body of an event request for `tool_name`, as the daemon receives it.
    pub fn event_body(&self, tool_name: &str) -> Vec<u8> {
        let mut request = EventRequest::new(RequestId::Number(EVENT_ID), EVENT, self.cwd());
        request.input = tool_input(tool_name);
        encode(&ClientMessage::Event(request)).to_vec()
    }

    /// The async client's version of the same request.
    pub fn client_event(&self, tool_name: &str) -> hookd_client::EventRequest {
        hookd_client::EventRequest::new(EVENT, self.cwd()).with_input(tool_input(tool_name))
    }

    /// What a hook runner writes to a `BeforeTool` hook's stdin, with the same fields the
    /// daemon sends, for the directly spawned comparison.
    pub fn hook_stdin(&self, tool_name: &str) -> Vec<u8> {
        let mut payload = Map::new();
        payload.insert("session_id".into(), Value::from(""));
        payload.insert("transcript_path".into(), Value::from(""));
        payload.insert("cwd".into(), Value::from(self.cwd()));
        payload.insert("hook_event_name".into(), Value::from(EVENT));
        payload.insert("timestamp".into(), Value::from("2025-01-01T00:00:00.000Z"));
        payload.extend(tool_input(tool_name));
        serde_json::to_vec(&payload).unwrap_or_default()
    }
}

/// The event input: a small shell command, as an agent would send.
fn tool_input(tool_name: &str) -> Map<String, Value> {
    let mut input = Map::new();
    input.insert("tool_name".into(), Value::from(tool_name));
    input.insert("tool_input".into(), json!({ "command": "ls" }));
    input
}

/// The project's `.gemini/settings.json`.
fn project_settings() -> Value {
    let hook = |name: String| json!({ "name": name, "type": "command", "command": HOOK_COMMAND });
    // Distinct names: hooks with the same name and command would be de-duplicated.
    let five: Vec<Value> = (1..=PARALLEL_HOOKS)
        .map(|n| hook(format!("five-{n}")))
        .collect();
    let sleeper =
        |name: String| json!({ "name": name, "type": "command", "command": SLEEP_COMMAND });
    let five_sleepers: Vec<Value> = (1..=PARALLEL_HOOKS)
        .map(|n| sleeper(format!("sleep-five-{n}")))
        .collect();
    json!({
        "hooks": {
            EVENT: [
                { "matcher": format!("^{TOOL_ONE_HOOK}$"), "hooks": [hook("one".to_owned())] },
                { "matcher": format!("^{TOOL_FIVE_HOOKS}$"), "hooks": five },
                { "matcher": format!("^{TOOL_SLEEP_ONE}$"), "hooks": [sleeper("sleep-one".to_owned())] },
                { "matcher": format!("^{TOOL_SLEEP_FIVE}$"), "hooks": five_sleepers },
            ]
        }
    })
}
