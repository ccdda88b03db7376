//! What a client sends: the handshake and the requests.
//!
//! Every message is one JSON object tagged by `"type"`; each variant has its own payload
//! struct. Unknown fields are ignored so that newer clients can talk to older daemons.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::PROTOCOL_VERSION;
use crate::error::{ErrorCode, ProtocolError};
use crate::id::RequestId;

/// An environment passed over the wire: variable names to values.
pub type WireEnv = BTreeMap<String, String>;

/// Any message a client may send.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ClientMessage {
    /// The handshake; must be the first frame of a connection and appear only there.
    Hello(ClientHello),
    /// Fire an event: run the matching hooks and answer with their aggregate.
    Event(EventRequest),
    /// Cancel an in-flight `event` request of this connection.
    Cancel(CancelRequest),
    /// List the hooks configured for a project directory.
    List(ListRequest),
    /// Ask for the daemon's state.
    Status(StatusRequest),
    /// Ask for the daemon's run counters since start (per hook, event, client and relay host).
    Stats(StatsRequest),
    /// Check that the daemon answers.
    Ping(PingRequest),
    /// Receive a `registry_changed` frame each time a registry is rebuilt.
    Subscribe(SubscribeRequest),
    /// Re-read every settings layer and rebuild every registry now.
    Reload(ReloadRequest),
    /// Remove a hook name from the disabled lists of the user and project settings.
    Enable(EnableRequest),
    /// Add a hook name to the disabled list of the user (or project) settings.
    Disable(DisableRequest),
    /// Empty the disabled lists of the user and project settings.
    EnableAll(EnableAllRequest),
    /// Add every configured hook's name to the disabled list of the user (or project) settings.
    DisableAll(DisableAllRequest),
    /// Ask which project hooks `trust` would trust.
    TrustPreview(TrustPreviewRequest),
    /// Trust project hooks (hookd's project-hook trust).
    Trust(TrustRequest),
    /// Forget a project's trusted hooks.
    Untrust(UntrustRequest),
    /// List the trusted hooks.
    TrustList(TrustListRequest),
    /// Open an AfterModel stream session: the plan is computed once and `llm_request` sent once.
    StreamOpen(StreamOpenRequest),
    /// One model response chunk of an open stream.
    Chunk(ChunkRequest),
    /// Close an open stream: its queued chunks are answered first, then the held-back text.
    StreamClose(StreamCloseRequest),
    /// Ask which events have at least one enabled hook for a project, optionally watching.
    HookedEvents(HookedEventsRequest),
    /// Get, set, delete or list one session's state (`docs/state.md`).
    State(crate::state::StateRequest),
}

impl ClientMessage {
    /// The `"type"` tag of every client message, in declaration order.
    pub const TYPES: [&'static str; 22] = [
        "hello",
        "event",
        "cancel",
        "list",
        "status",
        "ping",
        "subscribe",
        "reload",
        "enable",
        "disable",
        "enable_all",
        "disable_all",
        "trust_preview",
        "trust",
        "untrust",
        "trust_list",
        "stream_open",
        "chunk",
        "stream_close",
        "hooked_events",
        "stats",
        "state",
    ];

    /// The message's `"type"` tag.
    pub fn type_name(&self) -> &'static str {
        match self {
            ClientMessage::Hello(_) => "hello",
            ClientMessage::Event(_) => "event",
            ClientMessage::Cancel(_) => "cancel",
            ClientMessage::List(_) => "list",
            ClientMessage::Status(_) => "status",
            ClientMessage::Ping(_) => "ping",
            ClientMessage::Subscribe(_) => "subscribe",
            ClientMessage::Reload(_) => "reload",
            ClientMessage::Enable(_) => "enable",
            ClientMessage::Disable(_) => "disable",
            ClientMessage::EnableAll(_) => "enable_all",
            ClientMessage::DisableAll(_) => "disable_all",
            ClientMessage::TrustPreview(_) => "trust_preview",
            ClientMessage::Trust(_) => "trust",
            ClientMessage::Untrust(_) => "untrust",
            ClientMessage::TrustList(_) => "trust_list",
            ClientMessage::StreamOpen(_) => "stream_open",
            ClientMessage::Chunk(_) => "chunk",
            ClientMessage::StreamClose(_) => "stream_close",
            ClientMessage::HookedEvents(_) => "hooked_events",
            ClientMessage::Stats(_) => "stats",
            ClientMessage::State(_) => "state",
        }
    }

    /// The request's id; `None` for `hello`, which has none.
    pub fn id(&self) -> Option<&RequestId> {
        match self {
            ClientMessage::Hello(_) => None,
            ClientMessage::Event(request) => Some(&request.id),
            ClientMessage::Cancel(request) => Some(&request.id),
            ClientMessage::List(request) => Some(&request.id),
            ClientMessage::Status(request) => Some(&request.id),
            ClientMessage::Stats(request) => Some(&request.id),
            ClientMessage::State(request) => Some(&request.id),
            ClientMessage::Ping(request) => Some(&request.id),
            ClientMessage::Subscribe(request) => Some(&request.id),
            ClientMessage::Reload(request) => Some(&request.id),
            ClientMessage::Enable(request) => Some(&request.id),
            ClientMessage::Disable(request) => Some(&request.id),
            ClientMessage::EnableAll(request) => Some(&request.id),
            ClientMessage::DisableAll(request) => Some(&request.id),
            ClientMessage::TrustPreview(request) => Some(&request.id),
            ClientMessage::Trust(request) => Some(&request.id),
            ClientMessage::Untrust(request) => Some(&request.id),
            ClientMessage::TrustList(request) => Some(&request.id),
            ClientMessage::StreamOpen(request) => Some(&request.id),
            ClientMessage::Chunk(request) => Some(&request.id),
            ClientMessage::StreamClose(request) => Some(&request.id),
            ClientMessage::HookedEvents(request) => Some(&request.id),
        }
    }
}

/// The client's handshake.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientHello {
    /// The protocol version the client speaks; this crate speaks [`PROTOCOL_VERSION`].
    pub protocol: u32,
    /// The client's name and version, such as `hookctl/0.1.0` (for logs and `status`).
    pub client: String,
    /// The client's environment. Hooks of this connection run with it unless a request
    /// carries its own; without it they run with the daemon's environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<WireEnv>,
}

impl ClientHello {
    /// A handshake for [`PROTOCOL_VERSION`].
    pub fn new(client: impl Into<String>, env: Option<WireEnv>) -> Self {
        ClientHello {
            protocol: PROTOCOL_VERSION,
            client: client.into(),
            env,
        }
    }

    /// Checks that the client speaks this crate's protocol version.
    ///
    /// The error is the `unsupported_version` frame the daemon sends before closing.
    pub fn check_version(&self) -> Result<(), ProtocolError> {
        if self.protocol == PROTOCOL_VERSION {
            return Ok(());
        }
        Err(ProtocolError::new(
            ErrorCode::UnsupportedVersion,
            format!(
                "the client speaks protocol {}; this daemon speaks protocol {PROTOCOL_VERSION}",
                self.protocol
            ),
        ))
    }
}

/// Fire an event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventRequest {
    /// The request's id.
    pub id: RequestId,
    /// The event's name, such as `BeforeTool`. A string so that an unknown name gets an
    /// `unknown_event` error from the daemon rather than failing to parse.
    pub event: String,
    /// The event-specific input fields (`tool_name`, `tool_input`, `prompt`, ...).
    #[serde(default)]
    pub input: Map<String, Value>,
    /// The absolute directory the agent runs in; also the project directory.
    pub cwd: String,
    /// The agent's session id (`""` when absent).
    #[serde(default)]
    pub session_id: String,
    /// The path of the agent's transcript (`""` when absent).
    #[serde(default)]
    pub transcript_path: String,
    /// The environment for this request's hooks, overriding the connection's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<WireEnv>,
    /// Whether to send a `hook_result` frame as each hook finishes, before the `result`.
    #[serde(default)]
    pub stream_hooks: bool,
    /// The agent's plans directory, passed on to the hooks' environment when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plans_dir: Option<String>,
    /// The project's root as the host knows it (Claude Code's `CLAUDE_PROJECT_DIR`, Gemini
    /// CLI's project directory), when it differs from `cwd`: the daemon reads this directory's
    /// project settings and gives hooks this directory as the project, while `cwd` stays the
    /// directory the agent (or its shell tool) runs in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_dir: Option<String>,
    /// The host CLI that relayed this event through `hookctl relay` (`"gemini"` or
    /// `"claude"`): hooks defined in files that host runs itself are skipped, so no hook runs
    /// both in the host and in hookd.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relayed_by: Option<String>,
    /// Answer at once and run the event's hooks in the background, outside the answer and
    /// unaffected by the client disconnecting (what a relay sends for `SessionEnd`, whose
    /// host kills it after a second or two). The answer is an empty result; the hooks' results
    /// go to the daemon's log, audit log and `stats`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub detach: bool,
}

impl EventRequest {
    /// A request with an empty input and every optional field absent.
    pub fn new(id: impl Into<RequestId>, event: impl Into<String>, cwd: impl Into<String>) -> Self {
        EventRequest {
            id: id.into(),
            event: event.into(),
            input: Map::new(),
            cwd: cwd.into(),
            session_id: String::new(),
            transcript_path: String::new(),
            env: None,
            stream_hooks: false,
            plans_dir: None,
            project_dir: None,
            relayed_by: None,
            detach: false,
        }
    }
}

/// Cancel an in-flight `event` request of the same connection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CancelRequest {
    /// The cancel request's own id.
    pub id: RequestId,
    /// The id of the `event` request to cancel.
    pub target: RequestId,
}

/// List the hooks configured for a project directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListRequest {
    /// The request's id.
    pub id: RequestId,
    /// The absolute project directory.
    pub cwd: String,
}

/// Ask for the daemon's state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatusRequest {
    /// The request's id.
    pub id: RequestId,
}

/// Ask for the daemon's run counters since start (`stats`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatsRequest {
    /// The request's id.
    pub id: RequestId,
}

/// Check that the daemon answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PingRequest {
    /// The request's id.
    pub id: RequestId,
}

/// Subscribe to registry changes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubscribeRequest {
    /// The request's id; every `registry_changed` frame of the subscription carries it.
    pub id: RequestId,
    /// Only changes of this project directory's registry; absent: every loaded project.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

/// Re-read every settings layer and rebuild every loaded registry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReloadRequest {
    /// The request's id.
    pub id: RequestId,
}

/// Which settings file a `disable` or `disable_all` request writes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// The user settings, `~/.gemini/settings.json` (the default, hookd's edit scopes).
    #[default]
    User,
    /// The project settings, `<cwd>/.gemini/settings.json`.
    Project,
}

impl Scope {
    /// The scope's wire name (`user`, `project`).
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::User => "user",
            Scope::Project => "project",
        }
    }
}

/// Enable a hook by name: remove the name from `hooksConfig.disabled` in the user settings and
/// in the project settings of `cwd`, wherever it appears.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnableRequest {
    /// The request's id.
    pub id: RequestId,
    /// The absolute project directory: its settings are the project scope, and its registry
    /// answers which hooks exist.
    pub cwd: String,
    /// The hook's display name.
    pub name: String,
}

/// Disable a hook by name: add the name to `hooksConfig.disabled` of one scope.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DisableRequest {
    /// The request's id.
    pub id: RequestId,
    /// The absolute project directory.
    pub cwd: String,
    /// The hook's display name.
    pub name: String,
    /// The settings file to write; the user settings when absent.
    #[serde(default)]
    pub scope: Scope,
}

/// Enable every hook: empty `hooksConfig.disabled` in the user and project settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnableAllRequest {
    /// The request's id.
    pub id: RequestId,
    /// The absolute project directory.
    pub cwd: String,
}

/// Disable every hook the project's registry holds, in one scope.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DisableAllRequest {
    /// The request's id.
    pub id: RequestId,
    /// The absolute project directory.
    pub cwd: String,
    /// The settings file to write; the user settings when absent.
    #[serde(default)]
    pub scope: Scope,
}

/// Ask what `trust` would trust for a project: its project hooks that are not trusted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrustPreviewRequest {
    /// The request's id.
    pub id: RequestId,
    /// The absolute project directory.
    pub cwd: String,
}

/// Trust project hooks of a project, exactly as a `trust_preview` answer listed them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrustRequest {
    /// The request's id.
    pub id: RequestId,
    /// The absolute project directory.
    pub cwd: String,
    /// The hooks to trust. Only those that are still exactly what the project's hooks are
    /// (same name, command and script contents) are trusted; the answer says how many were
    /// not.
    pub hooks: Vec<crate::response::TrustedHook>,
    /// Also trust hooks whose run-time files cannot all be verified (their `uncovered` is not
    /// empty); without it they are skipped.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub anyway: bool,
}

/// Forget every trusted hook of a project.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UntrustRequest {
    /// The request's id.
    pub id: RequestId,
    /// The absolute project directory.
    pub cwd: String,
}

/// List the trust store: every project with trusted hooks, or one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrustListRequest {
    /// The request's id.
    pub id: RequestId,
    /// Only this absolute project directory; absent: every project.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

/// Open an AfterModel stream session (`stream_open`).
///
/// The daemon computes the plan once, from the registry of `cwd` as it is now, and keeps that
/// registry snapshot for the stream's life; `input` (with `llm_request`) is sent once and given
/// to the hooks with every chunk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamOpenRequest {
    /// The stream's id: every frame of the stream, both ways, carries it.
    pub id: RequestId,
    /// The event; only `AfterModel` can be streamed.
    pub event: String,
    /// The absolute directory the agent runs in; also the project directory.
    pub cwd: String,
    /// The agent's session id (`""` when absent).
    #[serde(default)]
    pub session_id: String,
    /// The path of the agent's transcript (`""` when absent).
    #[serde(default)]
    pub transcript_path: String,
    /// The environment for this stream's hooks, overriding the connection's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<WireEnv>,
    /// The agent's plans directory, passed on to the hooks' environment when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plans_dir: Option<String>,
    /// The fields every chunk's hooks receive besides the chunk's own: `llm_request` and any
    /// other input field.
    #[serde(default)]
    pub input: Map<String, Value>,
}

impl StreamOpenRequest {
    /// An AfterModel stream with an empty input and every optional field absent.
    pub fn new(id: impl Into<RequestId>, cwd: impl Into<String>) -> Self {
        StreamOpenRequest {
            id: id.into(),
            event: "AfterModel".to_owned(),
            cwd: cwd.into(),
            session_id: String::new(),
            transcript_path: String::new(),
            env: None,
            plans_dir: None,
            input: Map::new(),
        }
    }
}

/// One chunk of an open stream (`chunk`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChunkRequest {
    /// The stream's id.
    pub id: RequestId,
    /// The client's number for the chunk, echoed in its `chunk_result`.
    pub seq: u64,
    /// The model response chunk, as the hooks receive it.
    pub llm_response: Map<String, Value>,
}

/// Close an open stream (`stream_close`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamCloseRequest {
    /// The stream's id.
    pub id: RequestId,
}

/// Ask which events have at least one enabled hook for a project (`hooked_events`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookedEventsRequest {
    /// The request's id; with `subscribe`, every later answer carries it too.
    pub id: RequestId,
    /// The absolute project directory.
    pub cwd: String,
    /// Keep answering: a new `hooked_events` frame each time the project's registry changes,
    /// until the request is cancelled or the connection closes.
    #[serde(default)]
    pub subscribe: bool,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::encode::encode;
    use crate::parse::parse_client_message;

    /// Encodes `message`, compares the frame body with `expected` byte for byte (so field
    /// order is pinned too), and parses it back through the classifying parser.
    fn check(message: ClientMessage, expected: &str) {
        let body = encode(&message);
        assert_eq!(std::str::from_utf8(&body).unwrap(), expected);
        assert_eq!(parse_client_message(&body).unwrap(), message);
        assert_eq!(
            serde_json::from_slice::<ClientMessage>(&body).unwrap(),
            message
        );
    }

    #[test]
    fn every_variant_round_trips() {
        check(
            ClientMessage::Hello(ClientHello::new("hookctl/0.1.0", None)),
            r#"{"type":"hello","protocol":1,"client":"hookctl/0.1.0"}"#,
        );
        let env = WireEnv::from([
            ("PATH".to_owned(), "/bin".to_owned()),
            ("A".to_owned(), "".to_owned()),
        ]);
        check(
            ClientMessage::Hello(ClientHello::new("gemini/0.9", Some(env.clone()))),
            r#"{"type":"hello","protocol":1,"client":"gemini/0.9","env":{"A":"","PATH":"/bin"}}"#,
        );
        check(
            ClientMessage::Event(EventRequest::new(1, "BeforeTool", "/home/u/proj")),
            r#"{"type":"event","id":1,"event":"BeforeTool","input":{},"cwd":"/home/u/proj","session_id":"","transcript_path":"","stream_hooks":false}"#,
        );
        let mut full = EventRequest::new("req-7", "BeforeTool", "/p");
        full.input = json!({"tool_name": "run_shell_command", "tool_input": {"command": "ls"}})
            .as_object()
            .cloned()
            .unwrap();
        full.session_id = "s1".to_owned();
        full.transcript_path = "/t.json".to_owned();
        full.env = Some(env);
        full.stream_hooks = true;
        full.plans_dir = Some("/p/plans".to_owned());
        check(
            ClientMessage::Event(full),
            r#"{"type":"event","id":"req-7","event":"BeforeTool","input":{"tool_name":"run_shell_command","tool_input":{"command":"ls"}},"cwd":"/p","session_id":"s1","transcript_path":"/t.json","env":{"A":"","PATH":"/bin"},"stream_hooks":true,"plans_dir":"/p/plans"}"#,
        );
        check(
            ClientMessage::Cancel(CancelRequest {
                id: 2.into(),
                target: "req-7".into(),
            }),
            r#"{"type":"cancel","id":2,"target":"req-7"}"#,
        );
        check(
            ClientMessage::List(ListRequest {
                id: 3.into(),
                cwd: "/p".to_owned(),
            }),
            r#"{"type":"list","id":3,"cwd":"/p"}"#,
        );
        check(
            ClientMessage::Status(StatusRequest { id: 4.into() }),
            r#"{"type":"status","id":4}"#,
        );
        check(
            ClientMessage::Ping(PingRequest { id: "p".into() }),
            r#"{"type":"ping","id":"p"}"#,
        );
        check(
            ClientMessage::Subscribe(SubscribeRequest {
                id: 5.into(),
                cwd: None,
            }),
            r#"{"type":"subscribe","id":5}"#,
        );
        check(
            ClientMessage::Subscribe(SubscribeRequest {
                id: 5.into(),
                cwd: Some("/p".to_owned()),
            }),
            r#"{"type":"subscribe","id":5,"cwd":"/p"}"#,
        );
        check(
            ClientMessage::Reload(ReloadRequest { id: 6.into() }),
            r#"{"type":"reload","id":6}"#,
        );
        check(
            ClientMessage::Enable(EnableRequest {
                id: 7.into(),
                cwd: "/p".to_owned(),
                name: "guard".to_owned(),
            }),
            r#"{"type":"enable","id":7,"cwd":"/p","name":"guard"}"#,
        );
        check(
            ClientMessage::Disable(DisableRequest {
                id: 8.into(),
                cwd: "/p".to_owned(),
                name: "guard".to_owned(),
                scope: Scope::Project,
            }),
            r#"{"type":"disable","id":8,"cwd":"/p","name":"guard","scope":"project"}"#,
        );
        check(
            ClientMessage::EnableAll(EnableAllRequest {
                id: 9.into(),
                cwd: "/p".to_owned(),
            }),
            r#"{"type":"enable_all","id":9,"cwd":"/p"}"#,
        );
        check(
            ClientMessage::DisableAll(DisableAllRequest {
                id: 10.into(),
                cwd: "/p".to_owned(),
                scope: Scope::User,
            }),
            r#"{"type":"disable_all","id":10,"cwd":"/p","scope":"user"}"#,
        );
    }

    #[test]
    fn trust_requests_round_trip() {
        let hook = crate::response::TrustedHook {
            event: None,
            name: "guard".to_owned(),
            command: "./g.sh".to_owned(),
            settings: None,
            scripts: vec![crate::response::TrustedScript {
                path: "g.sh".to_owned(),
                sha256: "0".repeat(64),
            }],
            uncovered: Vec::new(),
        };
        let zeros = "0".repeat(64);
        check(
            ClientMessage::TrustPreview(TrustPreviewRequest {
                id: 1.into(),
                cwd: "/p".to_owned(),
            }),
            r#"{"type":"trust_preview","id":1,"cwd":"/p"}"#,
        );
        check(
            ClientMessage::Trust(TrustRequest {
                id: 2.into(),
                cwd: "/p".to_owned(),
                hooks: vec![hook],
                anyway: false,
            }),
            &format!(
                r#"{{"type":"trust","id":2,"cwd":"/p","hooks":[{{"name":"guard","command":"./g.sh","scripts":[{{"path":"g.sh","sha256":"{zeros}"}}]}}]}}"#
            ),
        );
        check(
            ClientMessage::Untrust(UntrustRequest {
                id: 3.into(),
                cwd: "/p".to_owned(),
            }),
            r#"{"type":"untrust","id":3,"cwd":"/p"}"#,
        );
        check(
            ClientMessage::TrustList(TrustListRequest {
                id: 4.into(),
                cwd: None,
            }),
            r#"{"type":"trust_list","id":4}"#,
        );
    }

    #[test]
    fn stream_requests_round_trip() {
        check(
            ClientMessage::StreamOpen(StreamOpenRequest::new(7, "/p")),
            r#"{"type":"stream_open","id":7,"event":"AfterModel","cwd":"/p","session_id":"","transcript_path":"","input":{}}"#,
        );
        let mut full = StreamOpenRequest::new("s", "/p");
        full.session_id = "s1".to_owned();
        full.transcript_path = "/t.json".to_owned();
        full.env = Some(WireEnv::from([("A".to_owned(), "b".to_owned())]));
        full.plans_dir = Some("/plans".to_owned());
        full.input = json!({"llm_request": {"model": "m"}, "extra": 1})
            .as_object()
            .cloned()
            .unwrap();
        check(
            ClientMessage::StreamOpen(full),
            r#"{"type":"stream_open","id":"s","event":"AfterModel","cwd":"/p","session_id":"s1","transcript_path":"/t.json","env":{"A":"b"},"plans_dir":"/plans","input":{"llm_request":{"model":"m"},"extra":1}}"#,
        );
        check(
            ClientMessage::Chunk(ChunkRequest {
                id: 7.into(),
                seq: 0,
                llm_response: json!({"text": "hi"}).as_object().cloned().unwrap(),
            }),
            r#"{"type":"chunk","id":7,"seq":0,"llm_response":{"text":"hi"}}"#,
        );
        check(
            ClientMessage::StreamClose(StreamCloseRequest { id: 7.into() }),
            r#"{"type":"stream_close","id":7}"#,
        );
        check(
            ClientMessage::HookedEvents(HookedEventsRequest {
                id: 8.into(),
                cwd: "/p".to_owned(),
                subscribe: true,
            }),
            r#"{"type":"hooked_events","id":8,"cwd":"/p","subscribe":true}"#,
        );
        // `subscribe` defaults to false.
        let parsed =
            parse_client_message(br#"{"type":"hooked_events","id":9,"cwd":"/p"}"#).unwrap();
        assert_eq!(
            parsed,
            ClientMessage::HookedEvents(HookedEventsRequest {
                id: 9.into(),
                cwd: "/p".to_owned(),
                subscribe: false,
            })
        );
    }

    #[test]
    fn scope_defaults_to_user() {
        let parsed =
            parse_client_message(br#"{"type":"disable","id":1,"cwd":"/p","name":"n"}"#).unwrap();
        let ClientMessage::Disable(request) = parsed else {
            panic!("not a disable: {parsed:?}");
        };
        assert_eq!(request.scope, Scope::User);
        assert_eq!(Scope::Project.as_str(), "project");
    }

    #[test]
    fn optional_event_fields_default() {
        let parsed =
            parse_client_message(br#"{"type":"event","id":5,"event":"Nope","cwd":"/p"}"#).unwrap();
        assert_eq!(
            parsed,
            ClientMessage::Event(EventRequest::new(5, "Nope", "/p"))
        );
        assert_eq!(parsed.id(), Some(&RequestId::Number(5)));
        assert_eq!(parsed.type_name(), "event");
    }

    #[test]
    fn version_check() {
        assert_eq!(ClientHello::new("c/1", None).check_version(), Ok(()));
        let mut hello = ClientHello::new("c/1", None);
        hello.protocol = 2;
        let error = hello.check_version().unwrap_err();
        assert_eq!(error.code, ErrorCode::UnsupportedVersion);
        assert_eq!(
            error.message,
            "the client speaks protocol 2; this daemon speaks protocol 1"
        );
    }
}
