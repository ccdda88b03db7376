//! `hookctl migrate --from-claude`: turn a project's Claude Code hooks into Gemini CLI hooks.
//!
//! Like `gemini hooks migrate --from-claude`, it reads the project's `.claude/` settings and
//! writes the converted hooks into `.gemini/settings.json`, but it converts them correctly
//! (see `hookd_core::dialect::convert_claude_hooks`): both `settings.json` and
//! `settings.local.json` are read, as Claude Code layers them; timeouts become milliseconds;
//! `SubagentStop` is kept; matchers select the same tools; `$CLAUDE_PROJECT_DIR` becomes
//! `${GEMINI_PROJECT_DIR}`; and every entry that could not be converted, or converted only
//! with a difference, is listed. The migrated definitions are appended to the project's
//! existing hooks of each event (a definition already there is not added twice, so running
//! it again changes nothing), only the `hooks` member of the file is rewritten (comments and
//! everything else are kept), and the file is replaced atomically. Nothing else is read: the
//! user's and the system's settings stay where they are.
//!
//! Messages and failures:
//!
//! - neither settings file exists: `No Claude Code settings found in .claude directory.
//!   Expected settings.json or settings.local.json` (exit code 1);
//! - a file cannot be read or is not a JSON object: `Error reading <path>: <why>`, nothing
//!   written (exit code 1);
//! - no hooks: `No hooks found in Claude Code settings to migrate.` (exit code 0);
//! - hooks, none of which can be converted: the report, `Nothing was migrated`, exit code 1.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use hookd_core::dialect::{Conversion, ConversionProblem, Dialect, ProblemKind, Purpose};
use hookd_core::settings::{Severity, parse_settings};
use hookd_core::{Source, edit, jsonc};
use hookd_settings::atomic::AtomicWrite;
use serde_json::{Map, Value};

use crate::manage::Reported;

/// Arguments of `hookctl migrate`.
#[derive(Debug, clap::Args)]
pub struct MigrateArgs {
    /// Migrate the project's Claude Code hooks (`.claude/settings.json` and
    /// `.claude/settings.local.json`).
    #[arg(long)]
    pub from_claude: bool,
    /// The project directory [default: the current dir].
    #[arg(long)]
    pub cwd: Option<PathBuf>,
    /// Show the report and the resulting `.gemini/settings.json` without writing it.
    #[arg(long)]
    pub dry_run: bool,
}

/// The host whose hooks `--from-claude` migrates: its project files (in the order it layers
/// them) and their conversion are its dialect's.
const FROM: Dialect = Dialect::CLAUDE;

/// The Gemini CLI file written, relative to the project.
const GEMINI_FILE: &str = ".gemini/settings.json";

/// Runs `hookctl migrate` and returns what to print.
pub fn run(args: MigrateArgs) -> anyhow::Result<String> {
    if !args.from_claude {
        bail!("say which hooks to migrate: hookctl migrate --from-claude");
    }
    let project = crate::absolute_cwd(args.cwd)?;
    migrate_from_claude(&project, args.dry_run)
}

/// One Claude Code settings file and what became of its hooks.
struct ClaudeFile {
    /// The file's path relative to the project (`.claude/settings.json`).
    label: String,
    root: Map<String, Value>,
}

fn migrate_from_claude(project: &Path, dry_run: bool) -> anyhow::Result<String> {
    let mut sources: Vec<ClaudeFile> = Vec::new();
    for path in FROM.files().project_layer_files(project) {
        if !path.is_file() {
            continue;
        }
        let label = path
            .strip_prefix(project)
            .unwrap_or(&path)
            .display()
            .to_string();
        let root = read_object(&path)?;
        sources.push(ClaudeFile { label, root });
    }
    if sources.is_empty() {
        bail!(
            "No Claude Code settings found in .claude directory. Expected settings.json or \
             settings.local.json"
        );
    }
    let has_hooks = sources.iter().any(|source| match source.root.get("hooks") {
        Some(Value::Object(hooks)) => !hooks.is_empty(),
        None | Some(Value::Null) => false,
        Some(_) => true,
    });
    if !has_hooks {
        return Ok("No hooks found in Claude Code settings to migrate.\n".to_owned());
    }

    let mut report = String::new();
    let mut migrated: Map<String, Value> = Map::new();
    let mut problems: Vec<(&str, ConversionProblem)> = Vec::new();
    let mut claude_events = 0;
    for source in &sources {
        let events = source
            .root
            .get("hooks")
            .and_then(Value::as_object)
            .map_or(0, Map::len);
        claude_events += events;
        writeln!(report, "Reading {} ({events} event(s))", source.label)?;
        let conversion = FROM
            .files()
            .convert_settings(&Value::Object(source.root.clone()), Purpose::Migrate)
            // A host whose hooks are hookd's shape already: they migrate as they are.
            .unwrap_or_else(|| Conversion {
                hooks: source
                    .root
                    .get("hooks")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default(),
                problems: Vec::new(),
            });
        for (event, definitions) in conversion.hooks {
            let Value::Array(definitions) = definitions else {
                continue;
            };
            let list = migrated
                .entry(event)
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(list) = list {
                list.extend(definitions);
            }
        }
        problems.extend(
            conversion
                .problems
                .into_iter()
                .map(|problem| (source.label.as_str(), problem)),
        );
    }
    let definitions: usize = migrated
        .values()
        .filter_map(Value::as_array)
        .map(Vec::len)
        .sum();
    writeln!(
        report,
        "Migrating {claude_events} Claude Code hook event(s): {definitions} definition(s) for {} \
         Gemini CLI event(s)...",
        migrated.len()
    )?;
    write_problems(&mut report, &problems, ProblemKind::Skipped, "Not migrated")?;
    write_problems(
        &mut report,
        &problems,
        ProblemKind::Changed,
        "Migrated with a change",
    )?;
    if definitions == 0 {
        writeln!(
            report,
            "Nothing was migrated; {GEMINI_FILE} was not changed."
        )?;
        return Err(Reported { report }.into());
    }

    let target = project.join(GEMINI_FILE);
    let existing = match hookd_settings::configfile::read_config_file(&target) {
        Ok(bytes) => bytes.map(|bytes| String::from_utf8_lossy(&bytes).into_owned()),
        Err(err) => bail!("Error reading {}: {err}", target.display()),
    };
    let text = existing.clone().unwrap_or_default();
    let current = if text.trim().is_empty() {
        Map::new()
    } else {
        parse_object(&target, &text)?
    };
    let mut hooks = match current.get("hooks") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(hooks)) => hooks.clone(),
        Some(_) => bail!(
            "Error saving migrated hooks: `hooks` in {} is not an object; the file was not \
             changed",
            target.display()
        ),
    };
    let (added, present) = append_new(&mut hooks, &migrated, &target)?;
    if added == 0 {
        writeln!(
            report,
            "{GEMINI_FILE} already has all {present} migrated definition(s); nothing to write."
        )?;
        return Ok(report);
    }
    if present > 0 {
        writeln!(
            report,
            "{present} definition(s) were already in {GEMINI_FILE}."
        )?;
    }
    let new_text = edit::set_member(&text, "hooks", &Value::Object(hooks))
        .with_context(|| format!("Error saving migrated hooks to {}", target.display()))?
        .text;
    check_result(&mut report, &target, &new_text)?;
    if dry_run {
        writeln!(
            report,
            "Dry run: {GEMINI_FILE} was not changed. It would read:"
        )?;
        report.push_str(&new_text);
        if !new_text.ends_with('\n') {
            report.push('\n');
        }
        return Ok(report);
    }
    // Atomic and durable; an existing file's permissions are kept.
    AtomicWrite::new()
        .keep_mode()
        .write(&target, new_text.as_bytes())
        .with_context(|| format!("Error saving migrated hooks to {}", target.display()))?;
    writeln!(report, "✓ Hooks successfully migrated to {GEMINI_FILE}")?;
    writeln!(
        report,
        "Review them before use: they now receive Gemini CLI's events, tool names and input \
         fields, and Gemini CLI reads their exit codes and output by its own rules (see \
         docs/dialects.md in hookd)."
    )?;
    Ok(report)
}

/// Lists the problems of one kind under a heading.
fn write_problems(
    report: &mut String,
    problems: &[(&str, ConversionProblem)],
    kind: ProblemKind,
    heading: &str,
) -> std::fmt::Result {
    let of_kind: Vec<&(&str, ConversionProblem)> = problems
        .iter()
        .filter(|(_, problem)| problem.kind == kind)
        .collect();
    if of_kind.is_empty() {
        return Ok(());
    }
    writeln!(report, "{heading} ({}):", of_kind.len())?;
    for (file, problem) in of_kind {
        writeln!(
            report,
            "  {file}: {}: {}",
            problem.location, problem.message
        )?;
    }
    Ok(())
}

/// Appends each migrated definition that the event's list does not already hold; returns
/// (added, already present).
fn append_new(
    hooks: &mut Map<String, Value>,
    migrated: &Map<String, Value>,
    target: &Path,
) -> anyhow::Result<(usize, usize)> {
    let mut added = 0;
    let mut present = 0;
    for (event, definitions) in migrated {
        let Value::Array(definitions) = definitions else {
            continue;
        };
        let list = hooks
            .entry(event.clone())
            .or_insert_with(|| Value::Array(Vec::new()));
        let Value::Array(list) = list else {
            bail!(
                "Error saving migrated hooks: hooks.{event} in {} is not a list; the file was \
                 not changed",
                target.display()
            );
        };
        for definition in definitions {
            if list.contains(definition) {
                present += 1;
            } else {
                list.push(definition.clone());
                added += 1;
            }
        }
    }
    Ok((added, present))
}

/// Reads a settings file that must hold a JSON object (comments allowed); bounded and never
/// blocking, as the daemon reads it (`hookd_settings::configfile`).
fn read_object(path: &Path) -> anyhow::Result<Map<String, Value>> {
    let bytes = match hookd_settings::configfile::read_config_file(path) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => bail!("Error reading {}: no such file", path.display()),
        Err(err) => bail!("Error reading {}: {err}", path.display()),
    };
    parse_object(path, &String::from_utf8_lossy(&bytes))
}

fn parse_object(path: &Path, text: &str) -> anyhow::Result<Map<String, Value>> {
    match jsonc::parse(text) {
        Ok(Value::Object(root)) => Ok(root),
        Ok(_) => bail!(
            "Error reading {}: the file is not a JSON object",
            path.display()
        ),
        Err(err) => bail!(
            "Error reading {}:{}:{}: {}",
            path.display(),
            err.line,
            err.column,
            err.message
        ),
    }
}

/// Reports what hookd's (and Gemini CLI's) settings rules say about the new file.
fn check_result(report: &mut String, target: &Path, text: &str) -> std::fmt::Result {
    let parsed = parse_settings(Source::Project, target, text, &|_: &str| None);
    let notable: Vec<_> = parsed
        .diagnostics
        .iter()
        .filter(|diagnostic| diagnostic.severity != Severity::Info)
        .collect();
    if notable.is_empty() {
        return Ok(());
    }
    writeln!(report, "Settings check of the result:")?;
    for diagnostic in notable {
        writeln!(report, "  {}: {diagnostic}", diagnostic.severity)?;
    }
    Ok(())
}
