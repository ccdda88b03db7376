//! Trusting project hooks: `hookctl trust`, `hookctl untrust` and
//! `hookctl trust --list`.
//!
//! `trust` first asks the daemon what it would trust (the project's hooks that are not trusted,
//! each with its name, command, and the path and SHA-256 of every project script its command
//! runs), prints exactly that, and asks for confirmation. Only then does it send those keys
//! back; the daemon stores the ones that are still current, so a script edited while the user
//! was reading is not trusted by this confirmation. Without a terminal to ask on, `--yes` is
//! required: trusting must never happen by accident in a script.
//!
//! A hook whose run-time files cannot all be verified (the daemon lists what under
//! "cannot verify") is shown but not trusted unless `--anyway` is given as well: the user
//! then vouches for what hookd cannot check.

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::{Context, bail};
use hookd_client::{Client, TrustListMessage, TrustPreviewMessage, TrustedHook};

/// Arguments of `hookctl trust`.
#[derive(Debug, clap::Args)]
pub struct TrustArgs {
    /// The project dir whose hooks to trust (or, with --list, whose trusted hooks to show)
    /// [default: the current dir; with --list: every project].
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Trust without asking. Required when stdin is not a terminal.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Also trust hooks whose run-time files cannot all be verified (listed under "cannot
    /// verify"): you vouch for those parts yourself.
    #[arg(long, conflicts_with = "list")]
    pub anyway: bool,
    /// Show the trusted hooks instead of trusting anything.
    #[arg(long, conflicts_with = "yes")]
    pub list: bool,
}

/// Arguments of `hookctl untrust`.
#[derive(Debug, clap::Args)]
pub struct UntrustArgs {
    /// The project dir whose trusted hooks to forget [default: the current dir].
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
}

/// `hookctl trust` and `hookctl trust --list`.
pub async fn trust(client: &Client, args: TrustArgs) -> anyhow::Result<String> {
    if args.list {
        let cwd = match args.cwd {
            Some(dir) => Some(crate::manage::project_dir(Some(dir))?.display().to_string()),
            None => None,
        };
        let listing = client
            .trust_list(cwd)
            .await
            .context("trust --list failed")?;
        return Ok(render_trusted(&listing));
    }
    let cwd = crate::manage::project_dir(args.cwd)?.display().to_string();
    let preview = client
        .trust_preview(cwd.clone())
        .await
        .context("trust failed")?;
    if !preview.folder_trusted {
        return Ok(format!(
            "The folder {cwd} is not trusted (folder trust, as Gemini CLI decides it): its \
             project hooks are not loaded at all, so there is nothing to trust.\n"
        ));
    }
    if preview.untrusted.is_empty() {
        return Ok(match preview.trusted {
            0 => format!("{cwd} has no project hooks to trust.\n"),
            n => format!("Nothing to trust: the {n} project hook(s) of {cwd} are trusted.\n"),
        });
    }
    let shown = render_preview(&preview);
    let unverifiable = preview
        .untrusted
        .iter()
        .filter(|hook| !hook.uncovered.is_empty())
        .count();
    let to_trust: Vec<TrustedHook> = preview
        .untrusted
        .iter()
        .filter(|hook| args.anyway || hook.uncovered.is_empty())
        .cloned()
        .collect();
    if to_trust.is_empty() {
        return Ok(format!(
            "{shown}Nothing was trusted: what these hooks run cannot all be verified. Review \
             them, then run `hookctl trust --cwd {cwd} --anyway`.\n"
        ));
    }
    let question = if args.anyway && unverifiable > 0 {
        format!(
            "Trust these {} hook(s), {unverifiable} of them although what they run cannot all \
             be verified?",
            to_trust.len()
        )
    } else {
        format!("Trust these {} hook(s)?", to_trust.len())
    };
    if !args.yes {
        let stdin = std::io::stdin();
        if !stdin.is_terminal() {
            print!("{shown}");
            bail!(
                "not trusting without confirmation: stdin is not a terminal; read the hooks \
                 above and run `hookctl trust --cwd {cwd} --yes` to trust them"
            );
        }
        if !crate::ask_yes_no(&shown, &question)? {
            return Ok("Nothing was trusted.\n".to_owned());
        }
    }
    let edited = if args.anyway {
        client.trust_anyway(cwd.clone(), to_trust).await
    } else {
        client.trust(cwd.clone(), to_trust).await
    }
    .context("trust failed")?;
    let mut out = if args.yes { shown } else { String::new() };
    out.push_str(&edited.message);
    out.push('\n');
    if !args.anyway && unverifiable > 0 {
        out.push_str(&format!(
            "{unverifiable} hook(s) were not trusted: what they run cannot all be verified. \
             Review them, then run `hookctl trust --cwd {cwd} --anyway`.\n"
        ));
    }
    Ok(out)
}

/// `hookctl untrust`.
pub async fn untrust(client: &Client, args: UntrustArgs) -> anyhow::Result<String> {
    let cwd = crate::manage::project_dir(args.cwd)?.display().to_string();
    let edited = client.untrust(cwd).await.context("untrust failed")?;
    Ok(format!("{}\n", edited.message))
}

/// Exactly what `trust` would record, hook by hook.
pub fn render_preview(preview: &TrustPreviewMessage) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Project hooks of {} that are not trusted (project_hooks = {}):",
        preview.cwd, preview.policy
    );
    for hook in &preview.untrusted {
        render_hook(&mut out, hook);
    }
    let _ = writeln!(
        out,
        "Trusting records each hook's name, command, settings and file contents in {}; \
         editing any of them makes its hook untrusted again.",
        preview.file
    );
    out
}

/// The trust store's contents, project by project.
pub fn render_trusted(listing: &TrustListMessage) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    if listing.projects.is_empty() {
        let _ = writeln!(out, "No hooks are trusted ({}).", listing.file);
        return out;
    }
    let _ = writeln!(out, "Trusted hooks ({}):", listing.file);
    for project in &listing.projects {
        let _ = writeln!(out, "{}:", project.cwd);
        for hook in &project.hooks {
            render_hook(&mut out, hook);
        }
    }
    out
}

/// One hook: its name (or command), event, command and scripts with their hashes.
fn render_hook(out: &mut String, hook: &TrustedHook) {
    use std::fmt::Write;
    let name = if hook.name.is_empty() {
        &hook.command
    } else {
        &hook.name
    };
    match &hook.event {
        Some(event) => {
            let _ = writeln!(out, "  {name} ({event})");
        }
        None => {
            let _ = writeln!(out, "  {name}");
        }
    }
    let _ = writeln!(out, "    command: {}", hook.command);
    if let Some(settings) = &hook.settings {
        let _ = writeln!(out, "    settings: {settings}");
    }
    for gap in &hook.uncovered {
        let _ = writeln!(out, "    cannot verify: {gap}");
    }
    if hook.scripts.is_empty() {
        out.push_str("    script:  none under the project (the command line alone is trusted)\n");
    }
    for script in &hook.scripts {
        let _ = writeln!(out, "    script:  {}", script.path);
        let _ = writeln!(out, "    sha256:  {}", script.sha256);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hookd_client::TrustedScript;

    fn hook(name: &str, event: Option<&str>, scripts: &[&str]) -> TrustedHook {
        TrustedHook {
            event: event.map(str::to_owned),
            name: name.to_owned(),
            command: format!("bash {}", scripts.first().unwrap_or(&"-c true")),
            scripts: scripts
                .iter()
                .map(|path| TrustedScript {
                    path: (*path).to_owned(),
                    sha256: "0".repeat(64),
                })
                .collect(),
            settings: None,
            uncovered: Vec::new(),
        }
    }

    #[test]
    fn the_preview_shows_names_commands_scripts_and_hashes() {
        let preview = TrustPreviewMessage {
            id: 1.into(),
            cwd: "/p".to_owned(),
            policy: "require".to_owned(),
            folder_trusted: true,
            untrusted: vec![
                hook("guard", Some("BeforeTool"), &["g.sh"]),
                hook("", Some("AfterTool"), &[]),
                TrustedHook {
                    settings: Some(serde_json::json!({"env": {"BASH_ENV": "x.sh"}})),
                    uncovered: vec!["runs a program named at run time".to_owned()],
                    ..hook("dyn", Some("BeforeTool"), &[])
                },
            ],
            trusted: 0,
            file: "/h/.config/hookd/trusted-hooks.json".to_owned(),
            generation: 1,
        };
        let zeros = "0".repeat(64);
        assert_eq!(
            render_preview(&preview),
            format!(
                "Project hooks of /p that are not trusted (project_hooks = require):\n  guard \
                 (BeforeTool)\n    command: bash g.sh\n    script:  g.sh\n    sha256:  \
                 {zeros}\n  bash -c true (AfterTool)\n    command: bash -c true\n    script:  \
                 none under the project (the command line alone is trusted)\n  dyn \
                 (BeforeTool)\n    command: bash -c true\n    settings: \
                 {{\"env\":{{\"BASH_ENV\":\"x.sh\"}}}}\n    cannot verify: runs a program \
                 named at run time\n    script:  none under the project (the command line \
                 alone is trusted)\nTrusting records each hook's name, command, settings and \
                 file contents in /h/.config/hookd/trusted-hooks.json; editing any of them makes \
                 its hook untrusted again.\n"
            )
        );
    }

    #[test]
    fn the_list_groups_by_project() {
        let mut listing = TrustListMessage {
            id: 1.into(),
            file: "/t.json".to_owned(),
            projects: Vec::new(),
        };
        assert_eq!(
            render_trusted(&listing),
            "No hooks are trusted (/t.json).\n"
        );
        listing.projects.push(hookd_client::TrustedProject {
            cwd: "/p".to_owned(),
            hooks: vec![hook("guard", None, &["g.sh"])],
        });
        let zeros = "0".repeat(64);
        assert_eq!(
            render_trusted(&listing),
            format!(
                "Trusted hooks (/t.json):\n/p:\n  guard\n    command: bash g.sh\n    script:  \
                 g.sh\n    sha256:  {zeros}\n"
            )
        );
    }
}
