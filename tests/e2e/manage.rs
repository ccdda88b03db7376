//! Enabling and disabling hooks through the daemon (`/hooks enable|disable`, decision D7):
//! the edits go to the real user (or project) settings file, keep its comments and other keys,
//! take effect for the next event, and survive a daemon restart because they live in the
//! file.

use std::collections::HashMap;
use std::path::PathBuf;

use hookd_client::{Client, ClientError, ConnectOptions, Scope};
use hookd_protocol::ErrorCode;
use hookd_server::ServerConfig;
use hookd_testkit::{command_hook, fire, settings, write};
use serde_json::json;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// A home and a project that outlive the daemons started on them.
struct Machine {
    _dir: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
    project: PathBuf,
}

/// A daemon running on a [`Machine`].
struct Running {
    socket: PathBuf,
    cancel: CancellationToken,
    task: JoinHandle<()>,
}

impl Machine {
    fn new() -> Machine {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().to_path_buf();
        Machine {
            home: root.join("home"),
            project: root.join("project"),
            root,
            _dir: dir,
        }
    }

    fn user_settings(&self) -> PathBuf {
        self.home.join(".gemini/settings.json")
    }

    fn cwd(&self) -> String {
        self.project.display().to_string()
    }

    async fn start(&self) -> Running {
        let mut env = HashMap::new();
        env.insert("HOME".to_owned(), self.home.display().to_string());
        env.insert(
            "PATH".to_owned(),
            std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into()),
        );
        env.insert(
            "GEMINI_CLI_SYSTEM_SETTINGS_PATH".to_owned(),
            self.root.join("etc/settings.json").display().to_string(),
        );
        let socket = self.root.join("run/hookd.sock");
        let listener = hookd_server::bind_socket(&socket).await.expect("bind");
        let cancel = CancellationToken::new();
        let task = tokio::spawn({
            let cancel = cancel.clone();
            async move {
                hookd_server::run(listener, ServerConfig::new(env), cancel)
                    .await
                    .expect("daemon");
            }
        });
        Running {
            socket,
            cancel,
            task,
        }
    }
}

impl Running {
    async fn client(&self) -> Client {
        Client::connect(&self.socket, ConnectOptions::default())
            .await
            .expect("connect")
    }

    async fn stop(self) {
        self.cancel.cancel();
        self.task.await.expect("daemon task");
    }
}

/// The names of the hooks that ran for one BeforeTool event.
async fn ran(client: &Client, cwd: &str) -> Vec<String> {
    let result = fire(client, cwd, "BeforeTool", json!({"tool_name": "t"})).await;
    result.hooks.into_iter().map(|hook| hook.name).collect()
}

const USER_SETTINGS: &str = "{\n  // my own settings; hookd must keep this comment\n  \"theme\": \"dark\",\n  \"hooks\": {\n    \"BeforeTool\": [{\"hooks\": [{\"name\": \"audit\", \"type\": \"command\", \"command\": \"true\"}]}]\n  }\n}\n";

fn write_fixture(machine: &Machine) {
    write(&machine.user_settings(), USER_SETTINGS);
    let project = settings(&[(
        "BeforeTool",
        None,
        vec![command_hook("guard", "true"), command_hook("lint", "true")],
    )]);
    write(
        &machine.project.join(".gemini/settings.json"),
        &serde_json::to_string_pretty(&project).expect("json"),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disable_and_enable_round_trip_through_the_user_settings_and_survive_a_restart() {
    let machine = Machine::new();
    write_fixture(&machine);
    let cwd = machine.cwd();
    let daemon = machine.start().await;
    let client = daemon.client().await;
    assert_eq!(ran(&client, &cwd).await, ["guard", "lint", "audit"]);

    let edited = client.disable(&cwd, "guard", Scope::User).await.unwrap();
    assert!(edited.changed);
    let user = machine.user_settings().display().to_string();
    assert_eq!(
        edited.message,
        format!(
            "Hook \"guard\" disabled by adding it to the disabled list in user ({user}) settings."
        )
    );
    assert_eq!(edited.files, std::slice::from_ref(&user));
    // In force for the very next event, no waiting.
    assert_eq!(ran(&client, &cwd).await, ["lint", "audit"]);
    let text = std::fs::read_to_string(machine.user_settings()).unwrap();
    assert!(
        text.contains("// my own settings; hookd must keep this comment"),
        "{text}"
    );
    assert!(text.contains("\"theme\": \"dark\""), "{text}");
    assert!(text.contains("\"disabled\": [\"guard\"]"), "{text}");
    let listing = client.list(&cwd).await.unwrap();
    let guard = listing.hooks.iter().find(|h| h.name == "guard").unwrap();
    assert!(!guard.enabled);
    // The other hooks ran, so the panel shows their last run.
    let lint = listing.hooks.iter().find(|h| h.name == "lint").unwrap();
    let last = lint.last_run.as_ref().expect("lint ran");
    assert!(last.success && last.outcome == "exited", "{last:?}");

    // Again: nothing to do.
    let again = client.disable(&cwd, "guard", Scope::User).await.unwrap();
    assert!(!again.changed);
    assert_eq!(again.message, "Hook \"guard\" is already disabled.");

    // A restart reads the same file: still disabled.
    drop(client);
    daemon.stop().await;
    let daemon = machine.start().await;
    let client = daemon.client().await;
    assert_eq!(ran(&client, &cwd).await, ["lint", "audit"]);

    let enabled = client.enable(&cwd, "guard").await.unwrap();
    assert_eq!(
        enabled.message,
        format!(
            "Hook \"guard\" enabled by removing it from the disabled list in user ({user}) settings."
        )
    );
    assert_eq!(ran(&client, &cwd).await, ["guard", "lint", "audit"]);
    let text = std::fs::read_to_string(machine.user_settings()).unwrap();
    assert!(
        text.contains("// my own settings; hookd must keep this comment"),
        "{text}"
    );
    let again = client.enable(&cwd, "guard").await.unwrap();
    assert_eq!(again.message, "Hook \"guard\" is already enabled.");
    assert!(!again.changed);
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn project_scope_and_the_all_variants() {
    let machine = Machine::new();
    write_fixture(&machine);
    let cwd = machine.cwd();
    let daemon = machine.start().await;
    let client = daemon.client().await;
    let project_file = machine.project.join(".gemini/settings.json");
    let project = project_file.display().to_string();
    let user = machine.user_settings().display().to_string();

    let edited = client.disable(&cwd, "lint", Scope::Project).await.unwrap();
    assert_eq!(
        edited.message,
        format!(
            "Hook \"lint\" disabled by adding it to the disabled list in project ({project}) settings."
        )
    );
    assert_eq!(ran(&client, &cwd).await, ["guard", "audit"]);
    // Disabled in both scopes.
    let both = client.disable(&cwd, "lint", Scope::User).await.unwrap();
    assert_eq!(
        both.message,
        format!(
            "Hook \"lint\" is now disabled in both user ({user}) and project ({project}) settings."
        )
    );
    // Enabling clears it from both.
    let enabled = client.enable(&cwd, "lint").await.unwrap();
    assert_eq!(
        enabled.message,
        format!(
            "Hook \"lint\" enabled by removing it from the disabled list in user ({user}) and project ({project}) settings."
        )
    );
    assert_eq!(enabled.files.len(), 2);
    assert_eq!(ran(&client, &cwd).await, ["guard", "lint", "audit"]);

    // An unknown name is written anyway (a hook may be added later), and the answer says so.
    let unknown = client.disable(&cwd, "nope", Scope::User).await.unwrap();
    assert!(
        unknown.message.contains("No hook named \"nope\""),
        "{unknown:?}"
    );
    client.enable(&cwd, "nope").await.unwrap();

    let all = client.disable_all(&cwd, Scope::User).await.unwrap();
    assert_eq!(all.message, "Disabled 3 hook(s) successfully.");
    assert!(ran(&client, &cwd).await.is_empty());
    let again = client.disable_all(&cwd, Scope::User).await.unwrap();
    assert_eq!(again.message, "All hooks are already disabled.");
    let all = client.enable_all(&cwd).await.unwrap();
    assert_eq!(all.message, "Enabled 3 hook(s) successfully.");
    assert_eq!(ran(&client, &cwd).await, ["guard", "lint", "audit"]);
    let again = client.enable_all(&cwd).await.unwrap();
    assert_eq!(again.message, "All hooks are already enabled.");

    // A file that is not JSON is never rewritten.
    write(&project_file, "{ broken");
    let refused = client
        .disable(&cwd, "guard", Scope::Project)
        .await
        .unwrap_err();
    assert!(
        matches!(
            refused,
            ClientError::Server {
                code: ErrorCode::EditFailed,
                ..
            }
        ),
        "{refused}"
    );
    assert_eq!(std::fs::read_to_string(&project_file).unwrap(), "{ broken");
    daemon.stop().await;
}
