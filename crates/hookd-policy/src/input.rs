//! The input a policy sees: one host-neutral view of the event beside the payload hookd gives
//! every hook ([`policy_input`]).
//!
//! hookd's payload already speaks one language for every host (Gemini CLI's event and tool
//! names, with each host's tool input keys translated), so a policy reads the same fields
//! whichever CLI fired the event. On top of it the view says what kind of tool it is and
//! where it reaches: the shell command, the files (absolute, normalised, and which of them
//! are outside the project) and the URL. docs/policies.md has the whole schema.

use serde_json::{Map, Value, json};

/// What the daemon knows about the event beyond its payload.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Context {
    /// The host that relayed the event (`claude`, `gemini`, `codex`), empty when a client
    /// fired it directly.
    pub host: String,
    /// The session's project root as the host gave it (`CLAUDE_PROJECT_DIR`, ...), else the
    /// session's working directory.
    pub project: String,
}

/// The kind of a tool, from its name in hookd's payload.
pub fn tool_kind(name: &str) -> &'static str {
    match name {
        "run_shell_command" => "shell",
        "read_file"
        | "read_many_files"
        | "glob"
        | "grep_search"
        | "search_file_content"
        | "list_directory" => "read",
        "write_file" => "write",
        "replace" => "edit",
        "web_fetch" => "fetch",
        "google_web_search" => "search",
        _ if name.starts_with("mcp_") || name.starts_with("mcp__") => "mcp",
        _ => "other",
    }
}

/// The policy input for a hook `payload` (the JSON object hookd writes to a hook's stdin).
pub fn policy_input(payload: &Map<String, Value>, context: &Context) -> Value {
    let text = |key: &str| payload.get(key).and_then(Value::as_str).unwrap_or("");
    let cwd = text("cwd");
    let project = if context.project.is_empty() {
        cwd
    } else {
        context.project.as_str()
    };
    let project = normalize(project, "/");
    let mut input = Map::new();
    input.insert("event".to_owned(), Value::from(text("hook_event_name")));
    input.insert("host".to_owned(), Value::from(context.host.as_str()));
    input.insert("session".to_owned(), Value::from(text("session_id")));
    input.insert("project".to_owned(), Value::from(project.as_str()));
    input.insert("cwd".to_owned(), Value::from(cwd));
    if let Some(name) = payload.get("tool_name").and_then(Value::as_str) {
        let tool_input = payload
            .get("tool_input")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        input.insert(
            "tool".to_owned(),
            tool_view(name, &tool_input, cwd, &project),
        );
    }
    if let Some(prompt) = payload.get("prompt").and_then(Value::as_str) {
        input.insert("prompt".to_owned(), Value::from(prompt));
    }
    input.insert("payload".to_owned(), Value::Object(payload.clone()));
    Value::Object(input)
}

/// The host-neutral view of a tool call.
fn tool_view(name: &str, tool_input: &Map<String, Value>, cwd: &str, project: &str) -> Value {
    let kind = tool_kind(name);
    let text = |key: &str| tool_input.get(key).and_then(Value::as_str);
    let base = text("dir_path").map_or_else(|| cwd.to_owned(), |dir| normalize(dir, cwd));
    let mut paths: Vec<String> = Vec::new();
    let mut push = |path: &str| {
        let path = normalize(path, &base);
        if !paths.contains(&path) {
            paths.push(path);
        }
    };
    for key in ["file_path", "absolute_path", "path", "dir_path"] {
        if let Some(path) = text(key).filter(|path| !path.is_empty()) {
            push(path);
        }
    }
    if let Some(list) = tool_input.get("paths").and_then(Value::as_array) {
        for path in list.iter().filter_map(Value::as_str) {
            push(path);
        }
    }
    // Codex CLI's edits are patches (`apply_patch`, `replace` in hookd's names): the files
    // are in the patch's own headers.
    for key in ["command", "patch", "input"] {
        if let Some(patch) = text(key).filter(|text| text.contains("*** Begin Patch")) {
            for path in patch_paths(patch) {
                push(path);
            }
        }
    }
    let command = if kind == "shell" {
        text("command").unwrap_or("")
    } else {
        ""
    };
    let url = text("url").map(str::to_owned).or_else(|| {
        text("prompt")
            .filter(|_| kind == "fetch")
            .and_then(first_url)
            .map(str::to_owned)
    });
    let outside: Vec<&String> = paths
        .iter()
        .filter(|path| !is_within(path, project))
        .collect();
    let mut view = json!({
        "name": name,
        "kind": kind,
        "command": command,
        "paths": paths,
        "outside_project": outside,
        "url": url.unwrap_or_default(),
        "input": tool_input,
    });
    if kind == "mcp" {
        let rest = name
            .strip_prefix("mcp__")
            .or_else(|| name.strip_prefix("mcp_"))
            .unwrap_or(name);
        let (server, tool) = rest
            .split_once("__")
            .or_else(|| rest.split_once('_'))
            .unwrap_or((rest, ""));
        view["mcp"] = json!({"server": server, "tool": tool});
    }
    view
}

/// The files a patch in Codex CLI's format names (`*** Add File: path`, `*** Update File:`,
/// `*** Delete File:`, `*** Move to:`).
fn patch_paths(patch: &str) -> impl Iterator<Item = &str> {
    patch.lines().filter_map(|line| {
        [
            "*** Add File: ",
            "*** Update File: ",
            "*** Delete File: ",
            "*** Move to: ",
        ]
        .iter()
        .find_map(|prefix| line.strip_prefix(prefix))
        .map(str::trim)
        .filter(|path| !path.is_empty())
    })
}

/// The first `http://` or `https://` URL in `text`.
fn first_url(text: &str) -> Option<&str> {
    let start = text.find("https://").or_else(|| text.find("http://"))?;
    let rest = &text[start..];
    let end = rest
        .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | ')'))
        .unwrap_or(rest.len());
    Some(&rest[..end])
}

/// `path` made absolute against `base` and normalised by its text alone (`.` and `..`
/// resolved, repeated `/` removed; no file is looked at, so a symbolic link is not
/// followed). `~` and `~/...` stay as written: the policy decides what a home is.
pub fn normalize(path: &str, base: &str) -> String {
    if path == "~" || path.starts_with("~/") {
        return path.to_owned();
    }
    let joined = if path.starts_with('/') {
        path.to_owned()
    } else {
        format!("{base}/{path}")
    };
    let mut parts: Vec<&str> = Vec::new();
    for part in joined.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            part => parts.push(part),
        }
    }
    format!("/{}", parts.join("/"))
}

/// Whether normalised `path` is `root` or inside it.
fn is_within(path: &str, root: &str) -> bool {
    if root == "/" {
        return path.starts_with('/');
    }
    path == root
        || path
            .strip_prefix(root)
            .is_some_and(|rest| rest.starts_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => unreachable!("an object"),
        }
    }

    #[test]
    fn paths_are_normalised_without_touching_the_disk() {
        let cases = [
            ("a/b", "/p", "/p/a/b"),
            ("/x/../y/./z", "/p", "/y/z"),
            ("../../../..", "/p/q", "/"),
            ("//etc//passwd", "/", "/etc/passwd"),
            ("~/.ssh/id_rsa", "/p", "~/.ssh/id_rsa"),
            (".", "/p/q/", "/p/q"),
        ];
        for (path, base, expected) in cases {
            assert_eq!(normalize(path, base), expected, "{path} in {base}");
        }
    }

    #[test]
    fn each_tool_gets_its_kind_and_reach() {
        let context = Context {
            host: "claude".to_owned(),
            project: "/proj".to_owned(),
        };
        // (tool name, tool input, kind, command, paths, outside the project, url)
        type Case<'a> = (
            &'a str,
            Value,
            &'a str,
            &'a str,
            Vec<&'a str>,
            Vec<&'a str>,
            &'a str,
        );
        let cases: Vec<Case<'_>> = vec![
            (
                "run_shell_command",
                json!({"command": "rm -rf build"}),
                "shell",
                "rm -rf build",
                vec![],
                vec![],
                "",
            ),
            (
                "read_file",
                json!({"file_path": "../secrets/.env"}),
                "read",
                "",
                vec!["/secrets/.env"],
                vec!["/secrets/.env"],
                "",
            ),
            (
                "write_file",
                json!({"file_path": "src/main.rs", "content": "x"}),
                "write",
                "",
                vec!["/proj/src/main.rs"],
                vec![],
                "",
            ),
            (
                "replace",
                json!({"command": "*** Begin Patch\n*** Update File: a.txt\n*** Add File: /etc/cron.d/x\n*** End Patch"}),
                "edit",
                "",
                vec!["/proj/a.txt", "/etc/cron.d/x"],
                vec!["/etc/cron.d/x"],
                "",
            ),
            (
                "web_fetch",
                json!({"prompt": "summarise https://example.com/a?b=1 please"}),
                "fetch",
                "",
                vec![],
                vec![],
                "https://example.com/a?b=1",
            ),
            (
                "glob",
                json!({"pattern": "*.rs", "dir_path": "/proj-other"}),
                "read",
                "",
                vec!["/proj-other"],
                vec!["/proj-other"],
                "",
            ),
            (
                "mcp_github_create_issue",
                json!({"title": "t"}),
                "mcp",
                "",
                vec![],
                vec![],
                "",
            ),
        ];
        for (name, tool_input, kind, command, paths, outside, url) in cases {
            let input = policy_input(
                &payload(json!({"hook_event_name": "BeforeTool", "session_id": "s",
                    "cwd": "/proj", "tool_name": name, "tool_input": tool_input})),
                &context,
            );
            let tool = &input["tool"];
            assert_eq!(tool["kind"], kind, "{name}");
            assert_eq!(tool["command"], command, "{name}");
            assert_eq!(tool["paths"], json!(paths), "{name}");
            assert_eq!(tool["outside_project"], json!(outside), "{name}");
            assert_eq!(tool["url"], url, "{name}");
            assert_eq!(input["host"], "claude");
            assert_eq!(input["project"], "/proj");
            assert_eq!(input["payload"]["tool_name"], name);
        }
    }

    #[test]
    fn mcp_names_split_into_server_and_tool() {
        let input = policy_input(
            &payload(json!({"tool_name": "mcp__github__create_issue", "tool_input": {}})),
            &Context::default(),
        );
        assert_eq!(
            input["tool"]["mcp"],
            json!({"server": "github", "tool": "create_issue"})
        );
    }

    #[test]
    fn without_a_project_the_working_directory_is_the_project() {
        let input = policy_input(
            &payload(json!({"hook_event_name": "BeforeAgent", "cwd": "/w/x/", "prompt": "hi"})),
            &Context::default(),
        );
        assert_eq!(input["project"], "/w/x");
        assert_eq!(input["prompt"], "hi");
        assert!(input.get("tool").is_none());
    }
}
