//! The command-line arguments of `hookctl install`, `uninstall` and `sync`, and the scope
//! (user or project) they name.

use std::path::PathBuf;

use super::Host;

/// A registered host's name, for clap: its possible values are the registry's names.
pub(super) fn host_name() -> impl clap::builder::TypedValueParser<Value = Host> {
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(Host::ALL.iter().map(|host| host.name()))
        .map(|name| Host::parse(&name).unwrap_or_default())
}

/// Which settings files: the user's or one project's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum InstallScope {
    /// The user's settings (every project).
    User,
    /// One project's settings (`--cwd`, else the current directory).
    Project,
}

impl InstallScope {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            InstallScope::User => "user",
            InstallScope::Project => "project",
        }
    }

    pub(super) fn parse(text: &str) -> Option<InstallScope> {
        match text {
            "user" => Some(InstallScope::User),
            "project" => Some(InstallScope::Project),
            _ => None,
        }
    }
}

/// Arguments of `hookctl install`.
#[derive(Debug, Clone, clap::Args)]
pub struct InstallArgs {
    /// The agent CLI whose hooks hookd takes over.
    #[arg(long, value_parser = host_name())]
    pub host: Host,
    /// The user's settings or one project's.
    #[arg(long, value_enum, default_value_t = InstallScope::User)]
    pub scope: InstallScope,
    /// The project dir (with --scope project) [default: the current dir].
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Show the changes and stop.
    #[arg(long)]
    pub dry_run: bool,
    /// Apply the changes without asking. Required when stdin is not a terminal.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// How the CLI reaches hookd: `command` (a `hookd-relay` process per event) or `http`
    /// (Claude Code's or Copilot CLI's HTTP hooks to hookd's loopback listener; user scope
    /// only; Copilot CLI keeps relays for events whose hooks can block) [default:
    /// the one of the previous install, else command].
    #[arg(long, value_enum)]
    pub transport: Option<Transport>,
    /// The port of hookd's HTTP listener (with --transport http) [default: 47411].
    #[arg(long, value_name = "N")]
    pub port: Option<u16>,
    /// Which events get an HTTP entry (with --transport http): `all` (every common event, so
    /// that a hook added to hookd later runs in sessions already started) or `hooked` (only
    /// the events hookd has hooks for, with their matchers: the CLI posts nothing else)
    /// [default: the one of the previous install, else all for Claude Code and hooked for
    /// Copilot CLI].
    #[arg(long, value_enum, value_name = "WHICH")]
    pub events: Option<HttpEvents>,
}

/// Which events an HTTP install wires.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum HttpEvents {
    /// Every common event, hooks or not: hooks added later apply to running sessions, at the
    /// price of one post per event that Claude Code pays even when hookd has nothing to run.
    #[default]
    All,
    /// The events hookd has hooks for, each with its hooks' matcher (as command relays are
    /// wired): nothing is posted that no hook wants; a hook for a new event needs
    /// `hookctl sync` and a new session.
    Hooked,
}

impl HttpEvents {
    /// The choice of a first HTTP install for `host`: every event for Claude Code (a hook
    /// added later applies to running sessions); only the hooked ones for Copilot CLI, whose
    /// guards stay command relays anyway and which pays about 20 ms for each post it makes
    /// (more than for a relay), so an entry no hook wants is pure cost.
    pub fn default_for(host: Host) -> HttpEvents {
        if host == Host::COPILOT {
            HttpEvents::Hooked
        } else {
            HttpEvents::All
        }
    }

    /// The name in the manifest and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            HttpEvents::All => "all",
            HttpEvents::Hooked => "hooked",
        }
    }
}

/// How the CLI reaches hookd.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Transport {
    /// A `hookd-relay` command entry per event.
    #[default]
    Command,
    /// HTTP entries to hookd's loopback listener (Claude Code and Copilot CLI).
    Http,
}

impl Transport {
    /// The name in the manifest and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Command => "command",
            Transport::Http => "http",
        }
    }
}

/// Arguments of `hookctl uninstall`.
#[derive(Debug, Clone, clap::Args)]
pub struct UninstallArgs {
    /// The agent CLI given to install.
    #[arg(long, value_parser = host_name())]
    pub host: Host,
    /// The scope given to install.
    #[arg(long, value_enum, default_value_t = InstallScope::User)]
    pub scope: InstallScope,
    /// The project dir (with --scope project) [default: the current dir].
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Show what would be restored and stop.
    #[arg(long)]
    pub dry_run: bool,
    /// Finish even where a moved Claude Code hook was edited in hookd's file since: the
    /// edited hook stays in hookd's file.
    #[arg(long)]
    pub force: bool,
}

/// Arguments of `hookctl sync`.
#[derive(Debug, Clone, clap::Args)]
pub struct SyncArgs {
    /// Show the changes and stop.
    #[arg(long)]
    pub dry_run: bool,
}
