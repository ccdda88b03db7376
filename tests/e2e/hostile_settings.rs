//! Settings files written to stall the daemon: catastrophic matchers, settings paths that are
//! devices, FIFOs, directories, symlink loops or huge files, redact filters with hundreds of
//! heavy patterns, and tens of thousands of hooks. For each, another project's client gets its
//! answer within [`OTHER_CLIENT_BOUND`] while the attack runs, and the attacked project gets
//! the safe decision: a matcher is evaluated as JavaScript would or refused so that its gate
//! runs, an unreadable file keeps its last good version, and a file over a limit is not built.
//!
//! The other client runs on a thread and runtime of its own, so a stalled daemon makes the test
//! fail on a timeout instead of hanging it.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use hookd_client::{Client, ConnectOptions, EventRequest, StreamRequest};
use hookd_protocol::Diagnostic;
use hookd_testkit::{Daemon, DaemonOptions, command_hook, fire, input, saying, within, write};
use serde_json::{Value, json};

/// How long another project's first event may take while an attack runs. Generous for an
/// unoptimised build on a busy machine; the attacks took from seconds to hours before.
const OTHER_CLIENT_BOUND: Duration = Duration::from_secs(5);

/// How long the attacked project's own answers may take.
const ATTACKED_BOUND: Duration = Duration::from_secs(20);

/// A gate that denies, saying its name.
fn gate(name: &str) -> Value {
    command_hook(
        name,
        &format!("echo '{{\"decision\":\"deny\",\"reason\":\"{name}\"}}'"),
    )
}

/// Creates a project directory next to the daemon's own whose BeforeAgent hook says `hi`.
fn other_project(daemon: &Daemon, name: &str) -> PathBuf {
    let project = daemon.dir.path().join(name);
    write(
        &project.join(".gemini/settings.json"),
        &saying("other", "hi").to_string(),
    );
    project
}

/// Starts another client on a thread of its own that fires `BeforeAgent` for `project` (a
/// project no other test event touched, so its registry is built now) and reports how long
/// the answer took. [`OtherClient::answered_within`] waits for it.
struct OtherClient {
    answer: mpsc::Receiver<Result<Duration, String>>,
}

impl OtherClient {
    fn start(socket: &Path, project: &Path) -> OtherClient {
        let (sender, answer) = mpsc::channel();
        let socket = socket.to_owned();
        let cwd = project.display().to_string();
        std::thread::spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime,
                Err(err) => {
                    let _ = sender.send(Err(err.to_string()));
                    return;
                }
            };
            let result = runtime.block_on(async move {
                let started = Instant::now();
                let client = Client::connect(&socket, ConnectOptions::default())
                    .await
                    .map_err(|err| err.to_string())?;
                let response = client
                    .event(EventRequest::new("BeforeAgent", &cwd))
                    .await
                    .map_err(|err| err.to_string())?;
                let message = response
                    .result
                    .final_output
                    .as_ref()
                    .and_then(|output| output.get("systemMessage").cloned());
                if message != Some(json!("hi")) {
                    return Err(format!("wrong answer: {:?}", response.result));
                }
                Ok(started.elapsed())
            });
            let _ = sender.send(result);
        });
        OtherClient { answer }
    }

    /// Panics unless the other client got its right answer within [`OTHER_CLIENT_BOUND`].
    /// Blocks the calling thread: call it from the test's own thread, never from a task.
    fn answered_within(self, what: &str) -> Duration {
        match self.answer.recv_timeout(OTHER_CLIENT_BOUND) {
            Ok(Ok(took)) => took,
            Ok(Err(err)) => panic!("{what}: the other client failed: {err}"),
            Err(_) => {
                panic!("{what}: the other client got no answer within {OTHER_CLIENT_BOUND:?}")
            }
        }
    }
}

/// Fires BeforeTool for `tool` and returns the names of the hooks that ran and the decision.
async fn before_tool(client: &Client, cwd: &str, tool: &str) -> (Vec<String>, Option<Value>) {
    let result = within(
        "the attacked project's event",
        ATTACKED_BOUND,
        fire(
            client,
            cwd,
            "BeforeTool",
            json!({"tool_name": tool, "tool_input": {}}),
        ),
    )
    .await;
    let mut names: Vec<String> = result.hooks.into_iter().map(|hook| hook.name).collect();
    names.sort();
    let decision = result
        .final_output
        .and_then(|output| output.get("decision").cloned());
    (names, decision)
}

/// The diagnostics of `cwd`'s registry after a forced reload.
async fn diagnostics(client: &Client, cwd: &str) -> Vec<Diagnostic> {
    let registries = within("reload", ATTACKED_BOUND, client.reload())
        .await
        .expect("reload");
    registries
        .into_iter()
        .filter(|registry| registry.cwd == cwd)
        .flat_map(|registry| registry.diagnostics)
        .collect()
}

/// Asserts that some diagnostic names `path` and says `reason`.
fn assert_reported(diagnostics: &[Diagnostic], path: &Path, reason: &str) {
    let path = path.display().to_string();
    assert!(
        diagnostics.iter().any(
            |diagnostic| diagnostic.path.as_deref() == Some(path.as_str())
                && diagnostic.message.contains(reason)
        ),
        "no diagnostic for {path} saying {reason:?}: {diagnostics:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn catastrophic_matchers_are_linear_or_refused_and_gates_stay_closed() {
    let settings = json!({"hooks": {"BeforeTool": [
        {"matcher": "(.*){20}!", "hooks": [gate("g-star20")]},
        {"matcher": "(.*){12}!", "hooks": [gate("g-star12")]},
        {"matcher": "(a+)+$", "hooks": [gate("g-plus")]},
        // Look-ahead around a catastrophic shape: cannot be bounded, so it is refused and
        // its gate runs for every tool.
        {"matcher": "(?=(a+)+$)a", "hooks": [gate("g-refused")]},
        // Look-behind that can be bounded: evaluated as JavaScript would.
        {"matcher": "(?<=mcp_)github", "hooks": [gate("g-lookbehind")]}
    ]}});
    let daemon = Daemon::start(settings).await;
    let client = daemon.client().await;
    let cwd = daemon.cwd();
    let other = other_project(&daemon, "other");

    let attack_names = [
        "a".repeat(28) + "!",
        "a".repeat(28),
        "run_shell_command".to_owned(),
    ];
    let attacks: Vec<_> = attack_names
        .iter()
        .map(|tool| {
            let (socket, cwd, tool) = (daemon.socket.clone(), cwd.clone(), tool.clone());
            tokio::spawn(async move {
                let client = Client::connect(&socket, ConnectOptions::default())
                    .await
                    .expect("connect");
                before_tool(&client, &cwd, &tool).await
            })
        })
        .collect();
    let took = OtherClient::start(&daemon.socket, &other).answered_within("matchers");
    eprintln!("other project answered in {took:?} during the matcher attack");

    let deny = Some(json!("deny"));
    let expected: [&[&str]; 3] = [
        &["g-refused", "g-star12", "g-star20"],
        &["g-plus", "g-refused"],
        &["g-refused"],
    ];
    for ((tool, attack), expected) in attack_names.iter().zip(attacks).zip(expected) {
        let (names, decision) = attack.await.expect("attack task");
        assert_eq!(names, expected, "{tool}");
        assert_eq!(decision, deny, "{tool}");
    }
    let (names, _) = before_tool(&client, &cwd, "mcp_github_list").await;
    assert_eq!(names, ["g-lookbehind", "g-refused"]);

    let settings_path = daemon.project.join(".gemini/settings.json");
    let reported = diagnostics(&client, &cwd).await;
    assert_reported(&reported, &settings_path, "\"(?=(a+)+$)a\" is refused");
    daemon.stop().await;
}

/// How a settings path is made hostile.
enum Hostile {
    Symlink(&'static str),
    Fifo,
    Directory,
    Loop,
    Huge,
}

impl Hostile {
    /// Replaces the file at `path` and returns what the diagnostic must say. The hostile
    /// thing is made beside the file and renamed over it, so the daemon never sees the path
    /// missing (a deleted settings file is not an error: its layer and its kept version go,
    /// which is not what these cases test); only a directory, which cannot be renamed over a
    /// file, replaces it after a removal.
    fn install(&self, path: &Path) -> &'static str {
        let aside = path.with_extension("aside");
        let reason = match self {
            Hostile::Symlink(target) => {
                std::os::unix::fs::symlink(target, &aside).expect("symlink");
                "a character device"
            }
            Hostile::Fifo => {
                nix::unistd::mkfifo(&aside, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
                "a FIFO"
            }
            Hostile::Directory => {
                std::fs::remove_file(path).expect("remove the good file");
                std::fs::create_dir(path).expect("mkdir");
                return "a directory";
            }
            Hostile::Loop => {
                let other = path.with_extension("loop");
                std::os::unix::fs::symlink(&other, &aside).expect("symlink");
                std::os::unix::fs::symlink(path, &other).expect("symlink back");
                "symlink loop"
            }
            Hostile::Huge => {
                // Valid JSON, 5 MiB of white space.
                let mut text = " ".repeat(5 * 1024 * 1024);
                text.push_str("{}");
                write(&aside, &text);
                "larger than"
            }
        };
        std::fs::rename(&aside, path).expect("rename over the good file");
        reason
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_paths_that_never_end_or_never_open_keep_the_last_good_version() {
    let good = json!({"hooks": {"BeforeTool": [{"hooks": [gate("kept")]}]}});
    let daemon = Daemon::start(good.clone()).await;
    let client = daemon.client().await;
    let cases = [
        ("zero", Hostile::Symlink("/dev/zero")),
        ("urandom", Hostile::Symlink("/dev/urandom")),
        ("fifo", Hostile::Fifo),
        ("directory", Hostile::Directory),
        ("loop", Hostile::Loop),
        ("huge", Hostile::Huge),
    ];
    // Every project is loaded (and its good version kept) before any turns hostile.
    let mut projects = Vec::new();
    for (name, hostile) in cases {
        let project = daemon.dir.path().join(name);
        let settings = project.join(".gemini/settings.json");
        write(&settings, &good.to_string());
        let cwd = project.display().to_string();
        assert_eq!(
            before_tool(&client, &cwd, "x").await,
            (vec!["kept".to_owned()], Some(json!("deny")))
        );
        projects.push((name, hostile, cwd, settings));
    }
    for (name, hostile, cwd, settings) in &projects {
        let reason = hostile.install(settings);
        // A reload rebuilds every cached project from its (now hostile) files.
        let reload = tokio::spawn({
            let socket = daemon.socket.clone();
            async move {
                let client = Client::connect(&socket, ConnectOptions::default())
                    .await
                    .expect("connect");
                within("reload", ATTACKED_BOUND, client.reload())
                    .await
                    .expect("reload");
            }
        });
        let other = other_project(&daemon, &format!("other-{name}"));
        OtherClient::start(&daemon.socket, &other).answered_within(name);
        reload.await.expect("reload task");
        assert_eq!(
            before_tool(&client, cwd, "x").await,
            (vec!["kept".to_owned()], Some(json!("deny"))),
            "{name}: the last good version stays"
        );
        let reported = diagnostics(&client, cwd).await;
        assert_reported(&reported, settings, reason);
        assert_reported(&reported, settings, "last valid version");
    }
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fifo_as_the_user_settings_file_does_not_block_the_start() {
    let options = DaemonOptions {
        configure: Box::new(|config| {
            let home = PathBuf::from(config.env.get("HOME").cloned().unwrap_or_default());
            nix::unistd::mkfifo(
                &home.join(".gemini/settings.json"),
                nix::sys::stat::Mode::S_IRWXU,
            )
            .expect("mkfifo");
        }),
        ..DaemonOptions::default()
    };
    let settings = json!({"hooks": {"BeforeTool": [{"hooks": [gate("project-gate")]}]}});
    let daemon = within(
        "the start with a FIFO as the user settings",
        OTHER_CLIENT_BOUND,
        Daemon::start_with(settings, options),
    )
    .await;
    let client = daemon.client().await;
    let cwd = daemon.cwd();
    assert_eq!(
        before_tool(&client, &cwd, "x").await,
        (vec!["project-gate".to_owned()], Some(json!("deny")))
    );
    let status = within("status", ATTACKED_BOUND, client.status())
        .await
        .expect("status");
    let fifo = daemon.home.join(".gemini/settings.json");
    let text = format!("{status:?}");
    assert!(
        text.contains(&fifo.display().to_string()) && text.contains("a FIFO"),
        "the FIFO is reported: {text}"
    );
    daemon.stop().await;
}

/// A redact hook with `count` copies of `pattern` (numbered, so no two are the same).
fn redact_hook(name: &str, count: usize, pattern: &str) -> Value {
    let patterns: Vec<Value> = (0..count)
        .map(|i| json!({"name": format!("p{i}"), "regex": format!("{pattern}{i}")}))
        .collect();
    json!({"type": "builtin", "builtin": "redact", "name": name, "patterns": patterns})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redact_filters_are_limited_and_never_stall_other_projects() {
    // 200 heavy patterns: over the limit, so the file is never built.
    let over = json!({"hooks": {"AfterModel": [{"hooks": [
        redact_hook("too-many", 200, r"\w{20}[a-z]{1,30}\d")
    ]}]}});
    let daemon = Daemon::start(over).await;
    let client = daemon.client().await;
    let cwd = daemon.cwd();
    let first = tokio::spawn({
        let (socket, cwd) = (daemon.socket.clone(), cwd.clone());
        async move {
            let client = Client::connect(&socket, ConnectOptions::default())
                .await
                .expect("connect");
            within(
                "the over-limit project's event",
                ATTACKED_BOUND,
                fire(&client, &cwd, "AfterModel", json!({"content": "x"})),
            )
            .await
        }
    });
    OtherClient::start(&daemon.socket, &other_project(&daemon, "other-limit"))
        .answered_within("200 patterns");
    let result = first.await.expect("event task");
    assert!(result.hooks.is_empty(), "an over-limit file is not built");
    let settings = daemon.project.join(".gemini/settings.json");
    assert_reported(&diagnostics(&client, &cwd).await, &settings, "200 patterns");

    // Within the limits but as heavy as they allow, and a 1 MiB event carrying a secret.
    let heavy_project = daemon.dir.path().join("heavy");
    let hooks: Vec<Value> = (0..4)
        .map(|i| redact_hook(&format!("heavy-{i}"), 12, r"(\w+\s?){3}x"))
        .collect();
    write(
        &heavy_project.join(".gemini/settings.json"),
        &json!({"hooks": {"AfterModel": [{"hooks": hooks}]}}).to_string(),
    );
    let secret = format!("ghp_{}", "A1".repeat(20));
    let mut content = "héllo wörld ab1 x abcdefghij x ".repeat(32 * 1024);
    content.push_str(&secret);
    let heavy_cwd = heavy_project.display().to_string();
    let heavy = tokio::spawn({
        let socket = daemon.socket.clone();
        async move {
            let client = Client::connect(&socket, ConnectOptions::default())
                .await
                .expect("connect");
            let request = EventRequest::new("AfterModel", &heavy_cwd)
                .with_input(input(json!({"content": content})));
            within("the 1 MiB event", ATTACKED_BOUND, client.event(request))
                .await
                .expect("event")
        }
    });
    OtherClient::start(&daemon.socket, &other_project(&daemon, "other-heavy"))
        .answered_within("a 1 MiB event through heavy filters");
    let response = heavy.await.expect("event task");
    let output = serde_json::to_string(&response.result.final_output).expect("json");
    assert!(!output.contains(&secret), "the secret is redacted");
    assert!(
        output.contains("[REDACTED:github-token]"),
        "{}",
        &output[..200.min(output.len())]
    );
    daemon.stop().await;
}

/// How many streams send a huge chunk at once: one more than the daemon filters on its
/// blocking pool at a time, and more than the test runtime's two worker threads, which the
/// filters held before they were moved off them.
const HUGE_STREAMS: usize = 3;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_streamed_chunks_through_heavy_filters_stall_no_one_and_fail_closed() {
    // Four filters as heavy as the limits allow, each with a 250 ms deadline; a deny gate when
    // one misses it.
    let hooks: Vec<Value> = (0..4)
        .map(|i| {
            let mut hook = redact_hook(&format!("heavy-{i}"), 12, r"(\w+\s?){3}x");
            hook["timeout"] = json!(250);
            hook["on_failure"] = json!("deny");
            hook
        })
        .collect();
    let daemon = Daemon::start(json!({"hooks": {"AfterModel": [{"hooks": hooks}]}})).await;
    let secret = format!("ghp_{}", "A1".repeat(20));
    // 12 MiB of text ending in a secret: seconds through the first filter alone.
    let mut huge = "héllo wörld ab1 x abcdefghij x ".repeat(384 * 1024);
    huge.push_str(&secret);
    let chunk = |text: &str| input(json!({"candidates": [{"content": {"parts": [text]}}]}));
    let streams: Vec<_> = (0..HUGE_STREAMS)
        .map(|_| {
            let (socket, cwd, huge) = (daemon.socket.clone(), daemon.cwd(), huge.clone());
            tokio::spawn(async move {
                let client = Client::connect(&socket, ConnectOptions::default())
                    .await
                    .expect("connect");
                let mut stream = client
                    .open_stream(StreamRequest::new(cwd))
                    .await
                    .expect("open");
                let started = Instant::now();
                stream.send_chunk(chunk(&huge)).await.expect("send");
                let huge_result = within("the huge chunk", ATTACKED_BOUND, stream.next_result())
                    .await
                    .expect("result")
                    .expect("a result");
                let took = started.elapsed();
                // The filter's state went with the abandoned run: later text is withheld too.
                stream
                    .send_chunk(chunk("a small chunk"))
                    .await
                    .expect("send");
                let small_result = within("the small chunk", ATTACKED_BOUND, stream.next_result())
                    .await
                    .expect("result")
                    .expect("a result");
                let end = within("the close", ATTACKED_BOUND, stream.close())
                    .await
                    .expect("close");
                (took, [huge_result, small_result], end.flush)
            })
        })
        .collect();
    let other = OtherClient::start(&daemon.socket, &other_project(&daemon, "other-stream"))
        .answered_within("huge streamed chunks through heavy filters");
    eprintln!("other client answered in {other:?} while {HUGE_STREAMS} huge chunks were filtered");
    for stream in streams {
        let (took, results, flush) = stream.await.expect("stream task");
        eprintln!("huge chunk answered in {took:?}");
        for result in results {
            let content = result.content.as_deref().unwrap_or_default();
            assert!(
                content.starts_with("[hookd: text withheld: redact filter \"heavy-0\""),
                "{}",
                content.chars().take(200).collect::<String>()
            );
            assert!(!content.contains(&secret));
            let decision = result
                .result
                .final_output
                .as_ref()
                .and_then(|output| output.get("decision").cloned());
            assert_eq!(decision, Some(json!("deny")), "on_failure deny stands");
            assert_eq!(result.result.hooks[0].failure.as_deref(), Some("timed_out"));
        }
        assert_eq!(flush, "", "what the filters held is withheld");
    }
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_thousand_hooks_are_refused_and_a_thousand_stay_fast() {
    let many: Vec<Value> = (0..50_000)
        .map(|i| json!({"type": "command", "command": format!("true {i}")}))
        .collect();
    let daemon = Daemon::start(json!({})).await;
    // Written compactly (2 MiB): within the file size limit, so the hook limit is what refuses
    // it. No event has built the project yet.
    write(
        &daemon.project.join(".gemini/settings.json"),
        &json!({"hooks": {"BeforeTool": [{"hooks": many}]}}).to_string(),
    );
    let client = daemon.client().await;
    let cwd = daemon.cwd();
    let first = tokio::spawn({
        let (socket, cwd) = (daemon.socket.clone(), cwd.clone());
        async move {
            let client = Client::connect(&socket, ConnectOptions::default())
                .await
                .expect("connect");
            before_tool(&client, &cwd, "x").await
        }
    });
    OtherClient::start(&daemon.socket, &other_project(&daemon, "other-many"))
        .answered_within("50,000 hooks");
    assert_eq!(first.await.expect("event task"), (Vec::new(), None));
    let settings = daemon.project.join(".gemini/settings.json");
    assert_reported(&diagnostics(&client, &cwd).await, &settings, "50000 hooks");

    // At the limit: 1,000 matchers none of which matches, answered quickly.
    let thousand_project = daemon.dir.path().join("thousand");
    let definitions: Vec<Value> = (0..1_000)
        .map(|i| json!({"matcher": format!("^tool_{i}[a-z]?$"), "hooks": [gate(&format!("g{i}"))]}))
        .collect();
    write(
        &thousand_project.join(".gemini/settings.json"),
        &json!({"hooks": {"BeforeTool": definitions}}).to_string(),
    );
    let thousand_cwd = thousand_project.display().to_string();
    assert_eq!(
        before_tool(&client, &thousand_cwd, "tool_999").await,
        (vec!["g999".to_owned()], Some(json!("deny")))
    );
    let started = Instant::now();
    for _ in 0..20 {
        assert_eq!(
            before_tool(&client, &thousand_cwd, "read_file").await,
            (Vec::new(), None)
        );
    }
    let per_event = started.elapsed() / 20;
    eprintln!("1,000 hooks: {per_event:?} per unmatched event");
    assert!(
        per_event < Duration::from_millis(250),
        "{per_event:?} per event"
    );
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_extension_hooks_file_turned_hostile_keeps_its_last_good_version() {
    let daemon = Daemon::start(json!({})).await;
    let extension = daemon.home.join(".gemini/extensions/guard");
    write(
        &extension.join("gemini-extension.json"),
        &json!({"name": "guard", "version": "1.0.0"}).to_string(),
    );
    let hooks_file = extension.join("hooks/hooks.json");
    write(
        &hooks_file,
        &json!({"hooks": {"BeforeTool": [{"hooks": [gate("ext-gate")]}]}}).to_string(),
    );
    let client = daemon.client().await;
    let cwd = daemon.cwd();
    // The extension was written after the start: a reload reads it.
    let _ = diagnostics(&client, &cwd).await;
    assert_eq!(
        before_tool(&client, &cwd, "x").await,
        (vec!["ext-gate".to_owned()], Some(json!("deny")))
    );
    for (hostile, reason) in [
        (Hostile::Symlink("/dev/zero"), "a character device"),
        (Hostile::Fifo, "a FIFO"),
    ] {
        hostile.install(&hooks_file);
        let other = other_project(&daemon, &format!("other-ext-{}", reason.len()));
        let reload = tokio::spawn({
            let socket = daemon.socket.clone();
            async move {
                let client = Client::connect(&socket, ConnectOptions::default())
                    .await
                    .expect("connect");
                within("reload", ATTACKED_BOUND, client.reload())
                    .await
                    .expect("reload");
            }
        });
        OtherClient::start(&daemon.socket, &other).answered_within(reason);
        reload.await.expect("reload task");
        assert_eq!(
            before_tool(&client, &cwd, "x").await,
            (vec!["ext-gate".to_owned()], Some(json!("deny"))),
            "{reason}: the last good version stays"
        );
        let reported = diagnostics(&client, &cwd).await;
        assert_reported(&reported, &hooks_file, reason);
        assert_reported(&reported, &hooks_file, "last valid version");
    }
    daemon.stop().await;
}

/// A hook's `if` written to stall the daemon: hundreds of wildcards against a 100 KB command
/// line match in linear time, and an `if` too long to compile leaves its gate closed (the hook
/// runs) rather than open; another project is answered meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_if_conditions_are_linear_and_never_open_a_gate() {
    let mut wildcards = gate("g-wildcards");
    wildcards["if"] = json!(format!("Bash({}b)", "*a".repeat(40)));
    // Too many wildcards to compile within the size limit: undecidable, so it runs.
    let mut huge = gate("g-huge");
    huge["if"] = json!(format!("Bash({}b)", "*a".repeat(400)));
    let mut too_long = gate("g-too-long");
    too_long["if"] = json!(format!("Bash({})", "x".repeat(4096)));
    let settings = json!({"hooks": {"BeforeTool": [
        {"matcher": "run_shell_command", "hooks": [wildcards, huge, too_long]}
    ]}});
    let daemon = Daemon::start(settings).await;
    let client = daemon.client().await;
    let cwd = daemon.cwd();
    let other = other_project(&daemon, "other");

    let long_command = "a".repeat(100_000);
    let attack = {
        let (socket, cwd, command) = (daemon.socket.clone(), cwd.clone(), long_command.clone());
        tokio::spawn(async move {
            let client = Client::connect(&socket, ConnectOptions::default())
                .await
                .expect("connect");
            within(
                "the attacked project's event",
                ATTACKED_BOUND,
                fire(
                    &client,
                    &cwd,
                    "BeforeTool",
                    json!({"tool_name": "run_shell_command", "tool_input": {"command": command}}),
                ),
            )
            .await
        })
    };
    OtherClient::start(&daemon.socket, &other).answered_within("if conditions");
    let result = attack.await.expect("attack task");
    let mut names: Vec<String> = result.hooks.iter().map(|hook| hook.name.clone()).collect();
    names.sort();
    // No `b` in the command: the wildcard gate does not apply; those that cannot be compiled
    // run, and deny.
    assert_eq!(names, ["g-huge", "g-too-long"]);
    assert_eq!(
        result
            .final_output
            .and_then(|output| output.get("decision").cloned()),
        Some(json!("deny"))
    );
    // With a `b` at the end the wildcard gate applies too.
    let matching = format!("{long_command}b");
    let result = fire(
        &client,
        &cwd,
        "BeforeTool",
        json!({"tool_name": "run_shell_command", "tool_input": {"command": matching}}),
    )
    .await;
    let mut names: Vec<String> = result.hooks.into_iter().map(|hook| hook.name).collect();
    names.sort();
    assert_eq!(names, ["g-huge", "g-too-long", "g-wildcards"]);
    daemon.stop().await;
}
