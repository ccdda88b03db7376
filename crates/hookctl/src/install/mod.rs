//! `hookctl install`, `hookctl uninstall` and `hookctl sync`: hand an agent CLI's hooks to
//! hookd, keep the CLI's relay entries in step with hookd's hooks, and give everything back.
//!
//! `install --host HOST --scope user|project`:
//!
//! 1. reads the host's settings file of that scope (Gemini CLI: `~/.gemini/settings.json` or
//!    `<project>/.gemini/settings.json`; Claude Code: `~/.claude/settings.json` or
//!    `<project>/.claude/settings.json`), JSON with comments;
//! 2. moves its hooks into hookd's own hooks file of the same scope
//!    (`$XDG_CONFIG_HOME/hookd/hooks.json` or `<project>/.hookd/hooks.json`), appending each
//!    event's definitions to what is there (Claude Code's hooks are converted first, and keep
//!    Claude's language with `"dialect": "claude"`), and records each moved definition, with
//!    the host it came from, in the install manifest;
//! 3. replaces the host's `hooks` with relay entries ([`wiring`]): one `hookctl relay` entry
//!    for each event hookd has hooks for (in hookd's files as they are after the move), with a
//!    matcher covering those hooks' matchers on tool events, and a timeout covering the
//!    slowest run of them under each hook's own default (Claude Code's hooks wait 600 s, Gemini
//!    CLI's 60 s).
//!
//! Every changed file is shown as a unified diff first; `--dry-run` stops there, and without a
//! terminal `--yes` is needed to go on. Files are written atomically (temporary file, fsync,
//! rename), and the host file's text outside its `hooks` member is kept as it was, comments
//! included. Installing again is how hooks added to the host file since are moved, and how the
//! relay entries catch up with hookd's hooks; once everything is in place it changes nothing.
//! `sync` redoes step 3 for every recorded install, without moving anything.
//!
//! The manifest (`$XDG_STATE_HOME/hookd/install/<host>-<scope>[-<project digest>]/`, else under
//! `~/.local/state`) keeps each changed file's bytes from before the first install and the
//! SHA-256 of what hookctl last wrote. `uninstall` gives back exactly what this host's
//! installs moved: when nothing was touched since, every file is restored byte for byte;
//! otherwise it edits: every relay entry leaves the host file, the recorded definitions go back
//! to it and leave hookd's file, and everything else (hooks added to either file since, the
//! other host's hooks in a shared hookd file) stays where it is. A moved Claude Code hook that
//! was edited in hookd's file since cannot be converted back: uninstall refuses and names the
//! command that finishes it (`--force` leaves the edited hook in hookd's file).
//!
//! The modules, by concern: `args` (the commands' arguments), `locations` (which files, from
//! the environment), `handover` (install), `sync`, `uninstall` (with the give-back plan),
//! `http` (`--transport http`: Claude Code's and Copilot CLI's HTTP entries and which event
//! gets which),
//! `split` (what of a host file moves and what stays), `wiring` (the relay entries),
//! `guarded` (the guarded copies in a project's shared file), `trust_moved` (trusting what
//! install moved), `companions` (the host's own rules and companion files, such as Codex
//! CLI's trust records), `files` (reading, editing and writing one file), `manifest` (what
//! was changed and moved), `diff` (the report's diffs) and `status` (what `list` and
//! `doctor` show).

mod args;
mod companions;
mod diff;
mod files;
mod guarded;
mod handover;
mod http;
mod locations;
mod manifest;
mod shared;
mod split;
mod status;
mod sync;
mod trust_moved;
mod uninstall;
mod wiring;

use std::path::Path;
use std::process::ExitCode;

pub use args::{InstallArgs, InstallScope, SyncArgs, Transport, UninstallArgs};
pub use diff::unified_diff;
pub use handover::{Prompt, install};
pub use locations::Locations;
pub use shared::copilot_on_claude_project;
pub use status::{InstalledRelays, http_transports, installed_relays, stale_wiring};
pub use sync::sync;
pub use uninstall::uninstall;
pub use wiring::{WireEntry, wiring};

/// The name Gemini CLI's relay entries carry (it shows and disables hooks by name).
pub use hookd_core::dialect::gemini::RELAY_NAME;

/// The agent CLI whose hooks are handed over: one of the registered host dialects.
pub use hookd_core::dialect::Dialect as Host;

/// The relay's own binary, installed next to `hookctl`: `hookctl relay` without the rest of
/// `hookctl`, so it starts faster.
pub const RELAY_BINARY: &str = "hookd-relay";

/// The command that installs a statically linked `hookd-relay` from a checkout of hookd (the
/// dynamic loader is about a third of a dynamically linked relay's start-up). `--target` keeps
/// the flag off the build's proc-macro crates, which cannot be linked statically.
pub const STATIC_RELAY_BUILD: &str = "RUSTFLAGS='-C target-feature=+crt-static' cargo install \
     --locked --path crates/hookctl --bin hookd-relay --target \
     \"$(rustc -vV | sed -n 's/^host: //p')\"";

/// Runs `hookctl install` and prints its report.
pub fn run_install(args: &InstallArgs, socket: Option<&Path>) -> ExitCode {
    let result = install(
        args,
        socket,
        &Locations::from_process(),
        &mut Prompt::Terminal,
    );
    finish(result, (!args.dry_run).then_some(socket))
}

/// Runs `hookctl uninstall` and prints its report.
pub fn run_uninstall(args: &UninstallArgs, socket: Option<&Path>) -> ExitCode {
    let result = uninstall(args, &Locations::from_process());
    finish(result, (!args.dry_run).then_some(socket))
}

/// Runs `hookctl sync` and prints its report.
pub fn run_sync(args: &SyncArgs, socket: Option<&Path>) -> ExitCode {
    let result = sync(args, &Locations::from_process());
    finish(result, (!args.dry_run).then_some(socket))
}

/// Prints the report; when files may have changed (`reload` is `Some`, with the `--socket`
/// given, if any), asks a running daemon to read its hooks files now.
fn finish(result: anyhow::Result<String>, reload: Option<Option<&Path>>) -> ExitCode {
    match result {
        Ok(report) => {
            print!("{report}");
            if let Some(socket) = reload {
                let socket =
                    socket.map_or_else(hookd_protocol::default_socket_path, Path::to_owned);
                print!("{}", reload_daemon(&socket));
            }
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("hookctl: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// How long `install`, `uninstall` and `sync` wait for a running daemon's reload.
const RELOAD_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Asks the daemon at `socket`, if one runs, to read its settings files again at once, and
/// says what happened in one line.
///
/// A daemon notices changed files by itself, but a hooks file in a directory that did not
/// exist before (`~/.config/hookd/` on a first install) only within a couple of seconds: the
/// first events after an install would find the hooks neither in the host (moved out) nor in
/// hookd (not read yet). The reload closes that gap.
pub fn reload_daemon(socket: &Path) -> String {
    if hookd_protocol::verify_socket_path(socket).is_err() {
        return format!(
            "hookd is not running at {} (it reads the hooks files when it starts).\n",
            socket.display()
        );
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => return format!("warning: cannot ask hookd to reload: {err}\n"),
    };
    let reloaded = runtime.block_on(async {
        tokio::time::timeout(RELOAD_TIMEOUT, async {
            let options = hookd_client::ConnectOptions {
                client_name: format!("hookctl/{}", env!("CARGO_PKG_VERSION")),
                ..hookd_client::ConnectOptions::default()
            };
            let client = hookd_client::Client::connect(socket, options).await?;
            client.reload().await
        })
        .await
    });
    match reloaded {
        Ok(Ok(_)) => "hookd has read its hooks files again.\n".to_owned(),
        Ok(Err(err)) => format!(
            "warning: hookd at {} did not reload ({err}); it reads changed files within a few \
             seconds, or run `hookctl reload`.\n",
            socket.display()
        ),
        Err(_) => format!(
            "warning: hookd at {} did not answer the reload within {} s; run `hookctl reload`.\n",
            socket.display(),
            RELOAD_TIMEOUT.as_secs()
        ),
    }
}
