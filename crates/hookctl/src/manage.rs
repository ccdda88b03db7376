//! Managing hooks from the command line, mirroring Gemini CLI's `/hooks` commands
//! (`disable` writes the user settings unless `--project` names a project): `enable`, `disable`, `enable-all`, `disable-all`, plus `reload`, `watch` and
//! `validate`.
//!
//! Edits are made by the daemon (it owns the registries and rebuilds them before answering);
//! `validate` needs no daemon: it parses a file with the engine and prints what it finds.

use std::path::{Path, PathBuf};

use anyhow::Context;
use hookd_client::{Client, Scope};
use hookd_core::Source;
use hookd_core::extension::{ExtensionInput, parse_extension_hooks};
use hookd_core::settings::{Diagnostic, Severity, parse_settings};

/// Arguments of `hookctl enable`.
#[derive(Debug, clap::Args)]
pub struct EnableArgs {
    /// The hook's name (its `name`, else its command, as `hookctl list` shows it).
    pub name: String,
    /// The project whose settings are also cleaned [default: the current dir].
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
}

/// Arguments of `hookctl disable`.
#[derive(Debug, clap::Args)]
pub struct DisableArgs {
    /// The hook's name (its `name`, else its command, as `hookctl list` shows it).
    pub name: String,
    /// Write the project settings of DIR instead of the user settings.
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
}

/// Arguments of `hookctl enable-all` and `hookctl disable-all`.
#[derive(Debug, clap::Args)]
pub struct AllArgs {
    /// The project whose hooks to change; `disable-all` then writes its project settings
    /// instead of the user settings [default: the current dir, user settings].
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
}

/// Arguments of `hookctl watch`.
#[derive(Debug, clap::Args)]
pub struct WatchArgs {
    /// Only changes of this project dir's registry [default: every loaded project].
    #[arg(long)]
    pub cwd: Option<PathBuf>,
    /// Exit after this many changes [default: run until interrupted].
    #[arg(long)]
    pub count: Option<u64>,
}

/// Arguments of `hookctl validate`.
#[derive(Debug, clap::Args)]
pub struct ValidateArgs {
    /// The settings file, or an extension's `hooks/hooks.json` [default:
    /// ./.gemini/settings.json].
    pub file: Option<PathBuf>,
}

/// A failure whose report is already written: printed on stdout, exit code 1.
#[derive(Debug, thiserror::Error)]
#[error("{report}")]
pub struct Reported {
    /// What to print.
    pub report: String,
}

/// `hookctl enable`.
pub async fn enable(client: &Client, args: EnableArgs) -> anyhow::Result<String> {
    let cwd = project_dir(args.project)?;
    let edited = client
        .enable(cwd.display().to_string(), args.name)
        .await
        .context("enable failed")?;
    Ok(format!("{}\n", edited.message))
}

/// `hookctl disable`.
pub async fn disable(client: &Client, args: DisableArgs) -> anyhow::Result<String> {
    let scope = scope_of(&args.project);
    let cwd = project_dir(args.project)?;
    let edited = client
        .disable(cwd.display().to_string(), args.name, scope)
        .await
        .context("disable failed")?;
    Ok(format!("{}\n", edited.message))
}

/// `hookctl enable-all`.
pub async fn enable_all(client: &Client, args: AllArgs) -> anyhow::Result<String> {
    let cwd = project_dir(args.project)?;
    let edited = client
        .enable_all(cwd.display().to_string())
        .await
        .context("enable-all failed")?;
    Ok(format!("{}\n", edited.message))
}

/// `hookctl disable-all`.
pub async fn disable_all(client: &Client, args: AllArgs) -> anyhow::Result<String> {
    let scope = scope_of(&args.project);
    let cwd = project_dir(args.project)?;
    let edited = client
        .disable_all(cwd.display().to_string(), scope)
        .await
        .context("disable-all failed")?;
    Ok(format!("{}\n", edited.message))
}

/// `--project DIR` made absolute and free of `.` and `..` components (without resolving
/// symlinks: agents name their directories as they see them), or the current dir.
pub(crate) fn project_dir(project: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    let absolute = crate::absolute_cwd(project)?;
    let mut clean = PathBuf::new();
    for component in absolute.components() {
        match component {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                clean.pop();
            }
            other => clean.push(other),
        }
    }
    Ok(clean)
}

/// `--project DIR` chooses the project scope; without it the user settings are written.
fn scope_of(project: &Option<PathBuf>) -> Scope {
    if project.is_some() {
        Scope::Project
    } else {
        Scope::User
    }
}

/// `hookctl reload`.
pub async fn reload(client: &Client) -> anyhow::Result<String> {
    let registries = client.reload().await.context("reload failed")?;
    let mut out = format!("reloaded {} registr", registries.len());
    out.push_str(if registries.len() == 1 {
        "y\n"
    } else {
        "ies\n"
    });
    for registry in &registries {
        out.push_str(&format!(
            "registry {}: generation {}, {} hooks\n",
            registry.cwd, registry.generation, registry.hooks
        ));
        for diagnostic in &registry.diagnostics {
            out.push_str(&format!("  {}\n", crate::render_diagnostic(diagnostic)));
        }
    }
    Ok(out)
}

/// `hookctl watch`: prints each `registry_changed` frame as one JSON line as it arrives.
pub async fn watch(client: &Client, args: WatchArgs) -> anyhow::Result<String> {
    use std::io::Write;
    let cwd = match args.cwd {
        Some(dir) => Some(crate::absolute_cwd(Some(dir))?.display().to_string()),
        None => None,
    };
    let mut subscription = client.subscribe(cwd).await.context("subscribe failed")?;
    let mut seen = 0u64;
    while args.count.is_none_or(|count| seen < count) {
        let Some(change) = subscription.recv().await else {
            anyhow::bail!("the daemon closed the connection");
        };
        let change = change.context("the subscription failed")?;
        let line = crate::to_json_line(&hookd_protocol::ServerMessage::RegistryChanged(change))?;
        let mut stdout = std::io::stdout().lock();
        stdout
            .write_all(line.as_bytes())
            .and_then(|()| stdout.flush())
            .context("cannot write to stdout")?;
        seen += 1;
    }
    Ok(String::new())
}

/// `hookctl validate`: parses a settings file (or an extension's hooks file) the way the
/// daemon does and reports every problem, including matchers that are not valid regular
/// expressions (Gemini CLI then compares them as plain text). Fails (exit code 1, report on
/// stdout) when the file has errors or warnings: something in it would be skipped (a hook
/// dropped, an unknown event name) or not work as written.
pub fn validate(args: ValidateArgs) -> anyhow::Result<String> {
    let path = match args.file {
        Some(file) => crate::absolute_cwd(Some(file))?,
        None => std::env::current_dir()
            .context("cannot determine the current directory")?
            .join(".gemini/settings.json"),
    };
    let Some(bytes) = crate::read_settings_file(&path)? else {
        anyhow::bail!("cannot read {}: no such file", path.display());
    };
    let text = String::from_utf8_lossy(&bytes);
    let (hooks, mut diagnostics) = if is_extension_hooks_file(&path) {
        check_extension_hooks(&path, &text)
    } else {
        check_settings(&path, &text)
    };
    if !is_extension_hooks_file(&path) {
        diagnostics.extend(check_matchers(&path, &text));
    }
    let errors = diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .count();
    let warnings = diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Warning)
        .count();
    let mut report = String::new();
    for diagnostic in &diagnostics {
        report.push_str(&format!("{}: {diagnostic}\n", diagnostic.severity));
    }
    report.push_str(&format!(
        "{}: {hooks} hook(s), {errors} error(s), {warnings} warning(s)\n",
        path.display()
    ));
    if errors + warnings > 0 {
        return Err(Reported { report }.into());
    }
    Ok(report)
}

/// A warning per matcher that is not a valid regular expression: Gemini CLI (and hookd) then
/// match it as the exact tool name, which is rarely what was meant.
fn check_matchers(path: &Path, text: &str) -> Vec<Diagnostic> {
    let lookup = |name: &str| std::env::var(name).ok();
    let parsed = parse_settings(Source::Project, path, text, &lookup);
    let Some(layer) = parsed.layer else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for event_hooks in &layer.hooks {
        for (index, definition) in event_hooks.definitions.iter().enumerate() {
            let Some(matcher) = definition.matcher.as_deref() else {
                continue;
            };
            let compiled = hookd_core::matcher::Matcher::compile(
                Some(matcher),
                event_hooks.event.matcher_kind(),
            );
            if compiled.is_exact_fallback() {
                found.push(
                    Diagnostic::warning(format!(
                        "matcher {matcher:?} is not a valid regular expression; it only matches \
                         a tool named exactly {:?}",
                        matcher.trim()
                    ))
                    .with_path(path)
                    .with_key(format!("hooks.{}[{index}].matcher", event_hooks.event)),
                );
            }
        }
    }
    found
}

/// An extension's hooks file lives at `<extension>/hooks/hooks.json`.
fn is_extension_hooks_file(path: &Path) -> bool {
    path.file_name().is_some_and(|name| name == "hooks.json")
        && path
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|dir| dir == "hooks")
}

/// Parses a settings file with the process environment for `$VAR` expansion.
fn check_settings(path: &Path, text: &str) -> (usize, Vec<Diagnostic>) {
    let lookup = |name: &str| std::env::var(name).ok();
    let parsed = parse_settings(Source::Project, path, text, &lookup);
    let hooks = parsed.layer.as_ref().map_or(0, |layer| layer.hook_count());
    (hooks, parsed.diagnostics)
}

/// Parses an extension's hooks file, its directory standing for the extension.
fn check_extension_hooks(path: &Path, text: &str) -> (usize, Vec<Diagnostic>) {
    let dir = path
        .parent()
        .and_then(Path::parent)
        .unwrap_or(Path::new("/"));
    let name = dir
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let extension = ExtensionInput {
        name,
        path: dir.to_owned(),
        hooks_file: path.to_owned(),
        hooks_text: Some(text.to_owned()),
        settings: Vec::new(),
        setting_values: Vec::new(),
        workspace_setting_values: Vec::new(),
        active: true,
    };
    let workspace = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let mut diagnostics = Vec::new();
    let events = parse_extension_hooks(&extension, &workspace, &mut diagnostics);
    // A hooks file that cannot be read at all is reported as a warning by the loader (the
    // extension still loads); for `validate` it is an error: nothing in it would run.
    for diagnostic in &mut diagnostics {
        if diagnostic.message.contains("invalid JSON")
            || diagnostic.message.contains("must be an object")
        {
            diagnostic.severity = Severity::Error;
        }
    }
    let hooks = events
        .iter()
        .flat_map(|event| &event.definitions)
        .map(|definition| definition.hooks.len())
        .sum();
    (hooks, diagnostics)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Validates `text` written at `relative` in a temp dir: the number of hooks, whether it
    /// fails, and a part of the report.
    fn check(relative: &str, text: &str, hooks: usize, fails: bool, report_part: &str) {
        let dir = tempfile::tempdir().unwrap_or_else(|err| panic!("{err}"));
        let path = dir.path().join(relative);
        std::fs::create_dir_all(path.parent().unwrap_or(dir.path()))
            .unwrap_or_else(|err| panic!("{err}"));
        std::fs::write(&path, text).unwrap_or_else(|err| panic!("{err}"));
        let result = validate(ValidateArgs {
            file: Some(path.clone()),
        });
        let report = match result {
            Ok(report) => {
                assert!(!fails, "{text} should fail: {report}");
                report
            }
            Err(err) => {
                assert!(fails, "{text} should pass: {err}");
                err.downcast::<Reported>()
                    .unwrap_or_else(|err| panic!("not a report: {err}"))
                    .report
            }
        };
        assert!(
            report.contains(&format!("{hooks} hook(s)")),
            "{text}: {report}"
        );
        assert!(report.contains(report_part), "{text}: {report}");
    }

    #[test]
    fn validates_settings_and_extension_hooks() {
        let hook =
            r#"{"hooks": {"BeforeTool": [{"hooks": [{"type": "command", "command": "x"}]}]}}"#;
        check(".gemini/settings.json", hook, 1, false, "0 error(s)");
        check(
            ".gemini/settings.json",
            "{\n  \"hooks\": {},\n}",
            0,
            true,
            "settings.json:3:1: invalid JSON",
        );
        check(
            ".gemini/settings.json",
            r#"{"hooks": {"BeforeTol": []}}"#,
            0,
            true,
            "Invalid hook event name",
        );
        check("ext/hooks/hooks.json", hook, 1, false, "0 error(s)");
        check(
            "ext/hooks/hooks.json",
            "{\"hooks\": [",
            0,
            true,
            "invalid JSON",
        );
        check("ext/hooks/hooks.json", "{\"hooks\": []}", 0, true, "error");
    }
}
