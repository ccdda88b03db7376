//! The hook registry and planner (spec §1.2, §1.3, §1.6, §1.7, §3; hookd's real layers).
//!
//! [`Registry::build`] takes the text of every settings layer, the extensions and a few facts
//! about the workspace, and produces the ordered list of hooks with compiled matchers:
//!
//! - **Merge.** `hooksConfig.enabled` and `hooksConfig.notifications` are last-wins in Gemini
//!   CLI's merge order (system defaults → user → workspace → system); `hooksConfig.disabled` is
//!   the union of all layers in that order, first occurrence kept. An untrusted workspace's
//!   file takes no part in the merge, as Gemini CLI drops it from the merged settings.
//! - **Environment redaction.** `security.environmentVariableRedaction.enabled` is last-wins;
//!   its `allowed` and `blocked` lists are replaced, not combined, by a later layer that sets
//!   them (Gemini CLI's default merge for arrays); [`Registry::env_redaction`] gives the result.
//! - **Master switch.** `hooksConfig.enabled = false` means no hooks at all, not even extension
//!   hooks; [`Registry::hooks_enabled`] reports it.
//! - **Folder trust.** In an untrusted folder every settings-file hook is skipped, user and
//!   system ones included (Gemini CLI's behaviour, spec §10.18), with a diagnostic; extension
//!   hooks still run.
//! - **Labels and order (real layers).** Each hook keeps its real layer. The registry order is project,
//!   user, system, system defaults, then extensions in the order given; within a layer the
//!   file's order. Gemini CLI instead concatenates system defaults, user, workspace and system
//!   and labels them all `project`; hookd follows the precedence its users document.
//! - **Project-hook trust.** Every project hook that runs a command is marked trusted or
//!   untrusted ([`HookEntry::trust`]) from the trust store's keys for the project and the
//!   digests of the script files its command runs ([`RegistryInput::hook_trust`]); the runner
//!   decides what an untrusted hook does. Other layers are never gated, and under the
//!   `require` policy an untrusted project hook, which will be refused, does not take part in
//!   de-duplication: a repository cannot silence the user's own gate by defining a copy of
//!   it (same `name:command`) that is then refused.
//! - **Relay entries.** A command hook that runs `hookctl relay` (see
//!   [`crate::dialect::is_relay_command`]) is how an agent CLI is wired to hookd, not a hook:
//!   running it would call the daemon again. It is never registered; an info diagnostic names
//!   it. So one settings file can hold both the relay wiring and real hooks. Nor is a guarded
//!   copy a project install keeps in the host's shared file for machines without hookd
//!   ([`crate::dialect::fallback_original`]): hookd runs the hook from `.hookd/hooks.json`.
//! - **Disabled hooks.** A hook whose display name (§1.6) is in the merged disabled list is
//!   registered disabled: listed by [`Registry::entries`] but never planned. A hook with a
//!   `name` can therefore only be disabled by that name.
//! - **What a project may switch off.** Under `warn` a project's `hooksConfig` merges like
//!   any layer's, as in Gemini CLI: its `disabled` list and `enabled = false` turn off the
//!   user's hooks too. Under `require` a project only switches off its own hooks: its
//!   `disabled` names apply to project hooks, its `enabled = false` turns off project hooks
//!   and its `enabled = true` does not turn hooks back on, each with a diagnostic when it
//!   would have reached further; an untrusted (refused) project definition's `sequential`
//!   does not make the other layers' hooks run in sequence.
//!
//! - **The managed layer.** An administrator's file ([`Source::Managed`], which the loader
//!   accepts only when root owns it) comes first in registry order and takes no part in the
//!   merge: no layer's `hooksConfig.disabled`, `hooksConfig.enabled = false`, folder trust,
//!   `set_enabled` or same-`name:command` copy turns a managed hook off, runs before it or
//!   takes its place. Whatever it outranks is said, never dropped silently: a disabled list
//!   naming a managed hook, a master switch it survives and each hook of another layer that
//!   a managed copy replaces get a warning naming both files, and the replaced hooks are
//!   reported by [`Registry::outranked_by`] for `list`. The managed file's own `hooksConfig`
//!   and `security` keys are not read (a warning says so): it holds hooks only.
//!
//! [`Registry::plan`] then follows §3: the enabled hooks of the event in registry order, kept
//! when their matcher matches, de-duplicated by `name:command` keeping the first (highest
//! precedence) copy (for an event Claude Code relays, by Claude Code's rule instead: the same
//! command string is the same hook, whatever its name), and run sequentially when any remaining definition says
//! `sequential: true`. Matchers are compiled once here, never per firing. An AfterModel plan
//! puts its builtin filters first (in registry order among themselves): they act on the text
//! before any other hook sees it.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::dialect::Dialect;
use crate::dialect::condition::Condition;
use crate::dialect::{fallback_original, is_relay_command};
use crate::event::HookEventName;
use crate::extension::{self, ExtensionInput};
use crate::matcher::{MatchContext, Matcher};
use crate::model::{HookEntry, LayerFile, Origin, Source};
use crate::plan::Plan;
use crate::relayed::runs_in_hookd;
use crate::sanitize::EnvRedaction;
use crate::settings::{self, Diagnostic, EventHooks, SettingsLayer};
use crate::trust::{HookTrust, HookTrustInput, ProjectHookPolicy};

/// The name `hookctl install` gives the relay entries it writes: a command hook of this name
/// is relay wiring whatever its command line says (a wrapper script, a variable), never a
/// hook.
pub const RELAY_ENTRY_NAME: &str = "hookd-relay";

/// The text of one settings file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayerText {
    /// The layer the file belongs to (any source but [`Source::Extension`]).
    pub source: Source,
    /// Whose file it is (Gemini CLI's, hookd's or Claude Code's; see [`crate::relayed`]).
    pub file: LayerFile,
    /// The file, for messages and origins.
    pub path: PathBuf,
    /// Its contents.
    pub text: String,
}

/// Everything [`Registry::build`] needs; the loader assembles it from disk.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegistryInput {
    /// The settings files that exist, in any order.
    pub layers: Vec<LayerText>,
    /// The installed extensions, in the order their hooks should run.
    pub extensions: Vec<ExtensionInput>,
    /// The workspace (project) directory: `${workspacePath}` for extensions.
    pub workspace_path: PathBuf,
    /// Whether the workspace folder is trusted.
    pub folder_trusted: bool,
    /// The environment for the load-time `$NAME` expansion of settings files.
    pub env: HashMap<String, String>,
    /// The trusted keys of this project and the digests of its hooks' script files.
    pub hook_trust: HookTrustInput,
    /// What the runner does with an untrusted project hook; under `require` such a hook does
    /// not shadow another layer's copy in de-duplication.
    pub project_hooks: ProjectHookPolicy,
}

/// The result of [`Registry::set_enabled`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EnableOutcome {
    /// Hooks whose display name matched.
    pub matched: usize,
    /// Hooks whose enabled flag actually changed.
    pub changed: usize,
    /// Matched hooks of the managed hooks file, which are left as they are.
    pub managed: usize,
}

/// One registered hook with its compiled matcher.
#[derive(Debug, Clone)]
struct RegisteredHook {
    entry: Arc<HookEntry>,
    matcher: Matcher,
    dedup_key: String,
    /// The key Claude Code de-duplicates by (for events it relays).
    claude_dedup_key: String,
    /// The hook's `if` ([`crate::dialect::condition`]), compiled; `None` without one (or with one that
    /// cannot be read, which settings validation reports).
    condition: Option<Arc<Condition>>,
}

/// The hooks of one workspace, ready for planning.
#[derive(Debug, Clone)]
pub struct Registry {
    hooks: Vec<RegisteredHook>,
    hooks_enabled: bool,
    notifications: bool,
    disabled: Vec<String>,
    /// Under `require`: the project's own `hooksConfig.disabled`, for project hooks only.
    project_disabled: Vec<String>,
    /// Under `require`: whether the project's `hooksConfig.enabled` left its own hooks on.
    project_enabled: bool,
    project_hooks: Option<Map<String, Value>>,
    diagnostics: Vec<Diagnostic>,
    trust_policy: ProjectHookPolicy,
    env_redaction: Arc<EnvRedaction>,
    /// The hooks of other layers that a managed hook outranks, by position in `hooks`, with
    /// the managed file that holds the winning copy.
    outranked: Vec<(usize, PathBuf)>,
}

impl Default for Registry {
    fn default() -> Registry {
        Registry {
            hooks: Vec::new(),
            hooks_enabled: true,
            notifications: true,
            disabled: Vec::new(),
            project_disabled: Vec::new(),
            project_enabled: true,
            project_hooks: None,
            diagnostics: Vec::new(),
            trust_policy: ProjectHookPolicy::Warn,
            env_redaction: Arc::default(),
            outranked: Vec::new(),
        }
    }
}

/// The position of a layer in Gemini CLI's merge order (later wins for scalars).
fn merge_rank(source: Source) -> u8 {
    match source {
        // Never merged (see `Registry::build`); ranked only to be total.
        Source::Managed => 5,
        Source::SystemDefaults => 0,
        Source::User => 1,
        Source::Project => 2,
        Source::System => 3,
        Source::Extension => 4,
    }
}

impl Registry {
    /// Builds the registry. Never fails: every problem becomes a diagnostic and the affected
    /// file, definition or entry is left out.
    pub fn build(input: &RegistryInput) -> Registry {
        let mut registry = Registry {
            trust_policy: input.project_hooks,
            ..Registry::default()
        };
        let lookup = |name: &str| input.env.get(name).cloned();

        let mut layers: Vec<SettingsLayer> = Vec::new();
        // Whose file each parsed layer is, by position in `layers`.
        let mut files: Vec<LayerFile> = Vec::new();
        for layer in &input.layers {
            if layer.source == Source::Extension {
                registry.diagnostics.push(
                    Diagnostic::error("extension hooks are not a settings layer; file ignored")
                        .with_path(&layer.path),
                );
                continue;
            }
            let parsed = settings::parse_settings(layer.source, &layer.path, &layer.text, &lookup);
            registry.diagnostics.extend(parsed.diagnostics);
            if let Some(parsed) = parsed.layer {
                layers.push(parsed);
                files.push(layer.file);
            }
        }

        // The managed file holds hooks only: its switches would be one more layer others
        // merge over, so they are not read at all.
        for layer in layers
            .iter()
            .filter(|layer| layer.source == Source::Managed)
        {
            if layer.hooks_config != settings::HooksConfig::default()
                || layer.folder_trust_enabled.is_some()
                || layer.env_redaction != settings::EnvRedactionSettings::default()
            {
                registry.diagnostics.push(
                    Diagnostic::warning(
                        "the managed hooks file holds hooks only: its hooksConfig and security \
                         settings are not read",
                    )
                    .with_path(&layer.path),
                );
            }
        }
        // Which file disabled which names, to tell the user when one names a managed hook.
        let mut disabling: Vec<(String, PathBuf)> = Vec::new();
        // The last file whose `hooksConfig.enabled` decided the master switch.
        let mut switched_by: Option<PathBuf> = None;
        // The merged view excludes an untrusted workspace's file entirely.
        let mut merged: Vec<&SettingsLayer> = layers
            .iter()
            .filter(|layer| layer.source != Source::Managed)
            .filter(|layer| input.folder_trusted || layer.source != Source::Project)
            .collect();
        merged.sort_by_key(|layer| merge_rank(layer.source));
        let mut env_redaction = EnvRedaction::default();
        for layer in &merged {
            let redaction = &layer.env_redaction;
            if let Some(enabled) = redaction.enabled {
                env_redaction.enabled = enabled;
            }
            if let Some(allowed) = &redaction.allowed {
                env_redaction.allowed.clone_from(allowed);
            }
            if let Some(blocked) = &redaction.blocked {
                env_redaction.blocked.clone_from(blocked);
            }
            let config = &layer.hooks_config;
            if let Some(notifications) = config.notifications {
                registry.notifications = notifications;
            }
            // Under `require` a project switches off its own hooks only.
            if input.project_hooks == ProjectHookPolicy::Require && layer.source == Source::Project
            {
                if let Some(enabled) = config.enabled {
                    registry.project_enabled = enabled;
                    if !enabled {
                        registry.diagnostics.push(
                            Diagnostic::warning(
                                "hooksConfig.enabled = false in the project's settings turns off \
                                 only the project's own hooks (project_hooks = require)",
                            )
                            .with_path(&layer.path),
                        );
                    }
                }
                for name in config.disabled.iter().flatten() {
                    disabling.push((name.clone(), layer.path.clone()));
                    if !registry.project_disabled.contains(name) {
                        registry.project_disabled.push(name.clone());
                    }
                }
                continue;
            }
            if let Some(enabled) = config.enabled {
                registry.hooks_enabled = enabled;
                switched_by = Some(layer.path.clone());
            }
            for name in config.disabled.iter().flatten() {
                disabling.push((name.clone(), layer.path.clone()));
                if !registry.disabled.contains(name) {
                    registry.disabled.push(name.clone());
                }
            }
        }

        registry.env_redaction = Arc::new(env_redaction);

        // Settings-file hooks, in precedence order (real layers, the managed file first); the
        // sort is stable.
        let mut by_precedence: Vec<(&SettingsLayer, LayerFile)> =
            layers.iter().zip(files.iter().copied()).collect();
        by_precedence.sort_by_key(|(layer, _)| layer.source);
        let managed_count: usize = by_precedence
            .iter()
            .filter(|(layer, _)| layer.source == Source::Managed)
            .map(|(layer, _)| layer.hook_count())
            .sum();

        if !registry.hooks_enabled {
            if managed_count == 0 {
                registry.diagnostics.push(Diagnostic::info(
                    "hooks are disabled by hooksConfig.enabled = false; no hook runs",
                ));
                return registry;
            }
            // The master switch reaches every hook but the managed ones.
            let mut diagnostic = Diagnostic::warning(format!(
                "hooksConfig.enabled = false turns off every hook but the managed ones: \
                 {managed_count} hook(s) of the managed hooks file still run"
            ));
            diagnostic.path = switched_by;
            registry.diagnostics.push(diagnostic);
            for (layer, file) in by_precedence
                .into_iter()
                .filter(|(layer, _)| layer.source == Source::Managed)
            {
                registry.ingest_layer(layer, file, input);
            }
            registry.note_managed_reach(&disabling);
            return registry;
        }

        if !input.folder_trusted {
            // An untrusted folder cannot skip what an administrator requires.
            for (layer, file) in by_precedence
                .iter()
                .copied()
                .filter(|(layer, _)| layer.source == Source::Managed)
            {
                registry.ingest_layer(layer, file, input);
            }
        }
        if input.folder_trusted {
            for (layer, file) in by_precedence {
                registry.ingest_layer(layer, file, input);
            }
        } else {
            let skipped: usize = layers
                .iter()
                .filter(|layer| layer.source != Source::Managed)
                .map(SettingsLayer::hook_count)
                .sum();
            if skipped > 0 {
                registry.diagnostics.push(Diagnostic::warning(format!(
                    "the folder {} is not trusted: {skipped} hook(s) from settings files are \
                     skipped; only extension hooks run",
                    input.workspace_path.display()
                )));
            }
        }

        for extension in input.extensions.iter().filter(|extension| extension.active) {
            // Under `require` the project's `.env` (Gemini CLI's workspace scope) does not
            // reach an extension's hooks: they are never gated, so nothing the repository
            // writes may flow into their command lines or environment.
            let user_only;
            let extension = if input.project_hooks == ProjectHookPolicy::Require
                && !extension.workspace_setting_values.is_empty()
            {
                let mut copy = extension.clone();
                copy.workspace_setting_values.clear();
                registry.diagnostics.push(Diagnostic::info(format!(
                    "the project's .env settings are not used for extension \"{}\" \
                     (project_hooks = require)",
                    extension.name
                )));
                user_only = copy;
                &user_only
            } else {
                extension
            };
            let events = extension::parse_extension_hooks(
                extension,
                &input.workspace_path,
                &mut registry.diagnostics,
            );
            let origin = Origin {
                path: Some(extension.hooks_file.clone()),
                extension: Some(extension.name.clone()),
                file: LayerFile::Gemini,
            };
            registry.ingest(&events, Source::Extension, &origin, None);
        }
        registry.note_project_disabled_reach();
        registry.note_managed_reach(&disabling);
        registry
    }

    /// Adds the hooks of one settings file (project hooks marked trusted or not).
    fn ingest_layer(&mut self, layer: &SettingsLayer, file: LayerFile, input: &RegistryInput) {
        let origin = Origin {
            path: Some(layer.path.clone()),
            extension: None,
            file,
        };
        let trust = (layer.source == Source::Project)
            .then_some((&input.hook_trust, input.workspace_path.as_path()));
        self.ingest(&layer.hooks, layer.source, &origin, trust);
        if layer.source == Source::Project && self.project_hooks.is_none() {
            self.project_hooks = layer.raw_hooks.clone();
        }
    }

    /// Says what the managed hooks outrank: each `hooksConfig.disabled` entry (with its file)
    /// naming a managed hook, which stays on, and each hook of another layer that a managed
    /// hook of the same event replaces in de-duplication (the same `name:command`, or, for
    /// the hosts that de-duplicate so, the same command line), recorded for
    /// [`Registry::outranked_by`].
    fn note_managed_reach(&mut self, disabling: &[(String, PathBuf)]) {
        let managed: Vec<&RegisteredHook> = self
            .hooks
            .iter()
            .filter(|hook| hook.entry.source == Source::Managed)
            .collect();
        if managed.is_empty() {
            return;
        }
        let mut notes = Vec::new();
        let mut said: HashSet<(&str, &std::path::Path)> = HashSet::new();
        for (name, path) in disabling {
            let Some(hook) = managed
                .iter()
                .find(|hook| hook.entry.config.display_name() == name.as_str())
            else {
                continue;
            };
            if !said.insert((name.as_str(), path.as_path())) {
                continue;
            }
            notes.push(
                Diagnostic::warning(format!(
                    "hooksConfig.disabled names \"{name}\", a hook of the managed hooks file {}: \
                     it stays on (managed hooks cannot be disabled)",
                    managed_path(&hook.entry)
                ))
                .with_path(path),
            );
        }
        let mut outranked = Vec::new();
        for (index, hook) in self.hooks.iter().enumerate() {
            if hook.entry.source == Source::Managed {
                continue;
            }
            let Some(winner) = managed.iter().find(|managed| {
                managed.entry.event == hook.entry.event
                    && (managed.dedup_key == hook.dedup_key
                        || (hook.entry.config.runs_command()
                            && managed.claude_dedup_key == hook.claude_dedup_key))
            }) else {
                continue;
            };
            let mut diagnostic = Diagnostic::warning(format!(
                "{} hook \"{}\" is outranked by the managed hooks file {}: the managed copy runs \
                 in its place (managed hooks cannot be overridden)",
                hook.entry.event,
                hook.entry.config.display_name(),
                managed_path(&winner.entry)
            ));
            diagnostic.path = hook.entry.origin.path.clone();
            notes.push(diagnostic);
            outranked.push((index, winner.entry.origin.path.clone().unwrap_or_default()));
        }
        self.outranked = outranked;
        self.diagnostics.extend(notes);
    }

    /// The managed hooks file whose hook takes the place of `entry` (a hook of another layer
    /// with the same identity for the same event), if any: what `list` tells the user.
    pub fn outranked_by(&self, entry: &HookEntry) -> Option<&std::path::Path> {
        let index = self
            .hooks
            .iter()
            .position(|hook| std::ptr::eq(Arc::as_ptr(&hook.entry), entry))?;
        self.outranked
            .iter()
            .find(|(outranked, _)| *outranked == index)
            .map(|(_, path)| path.as_path())
    }

    /// Says when a project's disabled list (under `require`) names a hook of another layer,
    /// which it does not turn off.
    fn note_project_disabled_reach(&mut self) {
        let reached: Vec<String> = self
            .project_disabled
            .iter()
            .filter(|name| {
                self.hooks.iter().any(|hook| {
                    hook.entry.source != Source::Project
                        && hook.entry.config.display_name() == name.as_str()
                })
            })
            .cloned()
            .collect();
        if !reached.is_empty() {
            self.diagnostics.push(Diagnostic::warning(format!(
                "the project's hooksConfig.disabled does not turn off hooks it does not own \
                 (project_hooks = require): {}",
                reached.join(", ")
            )));
        }
    }

    /// Adds the hooks of one file, compiling each definition's matcher once. `trust` is given
    /// for the project layer only: its hooks are marked trusted or untrusted.
    fn ingest(
        &mut self,
        events: &[EventHooks],
        source: Source,
        origin: &Origin,
        trust: Option<(&HookTrustInput, &std::path::Path)>,
    ) {
        for event_hooks in events {
            let event = event_hooks.event;
            for definition in &event_hooks.definitions {
                let matcher = Matcher::compile(definition.matcher.as_deref(), event.matcher_kind());
                if matcher.is_exact_fallback() && !definition.hooks.is_empty() {
                    let mut diagnostic = Diagnostic::info(format!(
                        "{event} matcher {:?} is not a valid JavaScript regular expression; it \
                         matches a tool name only when equal to it",
                        definition.matcher.as_deref().unwrap_or("").trim()
                    ));
                    diagnostic.path = origin.path.clone();
                    self.diagnostics.push(diagnostic);
                }
                if let Some(reason) = matcher.refusal().filter(|_| !definition.hooks.is_empty()) {
                    let mut diagnostic = Diagnostic::warning(format!(
                        "{event} matcher {:?} is refused because {reason}; its hooks run for \
                         every tool so that a gate stays closed",
                        definition.matcher.as_deref().unwrap_or("").trim()
                    ));
                    diagnostic.path = origin.path.clone();
                    self.diagnostics.push(diagnostic);
                }
                for config in &definition.hooks {
                    // A guarded copy runs only where hookd is absent; hookd runs the hook from
                    // the project's `.hookd/hooks.json`, so the copy would run it twice.
                    if let Some(command) = config.command.as_deref().filter(|command| {
                        config.runs_command() && fallback_original(command).is_some()
                    }) {
                        let mut diagnostic = Diagnostic::info(format!(
                            "{command:?} ({event}) is the copy of a hook for machines without \
                             hookd; hookd runs the hook from .hookd/hooks.json"
                        ));
                        diagnostic.path = origin.path.clone();
                        self.diagnostics.push(diagnostic);
                        continue;
                    }
                    // The relay's own wiring would call the daemon that runs it: never a hook.
                    if let Some(command) = config.command.as_deref().filter(|command| {
                        config.runs_command()
                            && (is_relay_command(command)
                                || config.name.as_deref() == Some(RELAY_ENTRY_NAME))
                    }) {
                        let mut diagnostic = Diagnostic::info(format!(
                            "relay entry {command:?} ({event}) is handled by hookd, not run as a \
                             hook"
                        ));
                        diagnostic.path = origin.path.clone();
                        self.diagnostics.push(diagnostic);
                        continue;
                    }
                    // A builtin filter is compiled here, once per build. Settings validation
                    // has already discarded one that does not compile or is not under
                    // AfterModel; this only keeps such a hook out if it got here anyway.
                    let builtin = match config.hook_type {
                        crate::model::HookType::Builtin if event == HookEventName::AfterModel => {
                            match crate::redact::Redactor::from_raw(&config.raw) {
                                Ok(redactor) => Some(Arc::new(redactor)),
                                Err(_) => continue,
                            }
                        }
                        crate::model::HookType::Builtin => continue,
                        _ => None,
                    };
                    let name = config.display_name();
                    // A managed hook is never disabled; `note_managed_reach` says who tried.
                    let enabled = source == Source::Managed
                        || !self.disabled.iter().any(|disabled| disabled == name)
                            && (source != Source::Project
                                || (self.project_enabled
                                    && !self
                                        .project_disabled
                                        .iter()
                                        .any(|disabled| disabled == name)));
                    let entry = HookEntry {
                        event,
                        config: config.clone(),
                        source,
                        origin: origin.clone(),
                        matcher: definition.matcher.clone(),
                        sequential: definition.sequential,
                        enabled,
                        trust: trust.map_or(HookTrust::NotRequired, |(trust, project_dir)| {
                            trust.trust_for(config, project_dir)
                        }),
                        builtin,
                        identity: Default::default(),
                    };
                    self.hooks.push(RegisteredHook {
                        dedup_key: entry.config.dedup_key(),
                        claude_dedup_key: entry.config.claude_dedup_key(),
                        condition: entry
                            .config
                            .raw
                            .get("if")
                            .and_then(|value| Condition::parse(value).ok())
                            .map(Arc::new),
                        entry: Arc::new(entry),
                        matcher: matcher.clone(),
                    });
                }
            }
        }
    }

    /// Whether hooks are on (`hooksConfig.enabled`); when off the registry is empty.
    pub fn hooks_enabled(&self) -> bool {
        self.hooks_enabled
    }

    /// The merged `security.environmentVariableRedaction` settings: what of the base
    /// environment this workspace's hooks get (`crate::sanitize`).
    pub fn env_redaction(&self) -> &Arc<EnvRedaction> {
        &self.env_redaction
    }

    /// `hooksConfig.notifications`: whether the agent CLI should show its hook indicator.
    pub fn notifications_enabled(&self) -> bool {
        self.notifications
    }

    /// The merged `hooksConfig.disabled` list, first occurrence order.
    pub fn disabled_names(&self) -> &[String] {
        &self.disabled
    }

    /// The trusted workspace file's raw `hooks` object, for the project-hook trust check
    /// (§1.8); `None` when there is none or the folder is untrusted.
    pub fn project_hooks(&self) -> Option<&Map<String, Value>> {
        self.project_hooks.as_ref()
    }

    /// The memory its compiled `redact` filters are counted as, in bytes (the sum of each
    /// filter's [`crate::redact::Redactor::compiled_bytes`]): what the daemon's budget of
    /// compiled filters charges this registry. Matchers are not counted: a matcher is one
    /// short regex, far below a filter's patterns.
    pub fn compiled_bytes(&self) -> usize {
        self.hooks
            .iter()
            .filter_map(|hook| hook.entry.builtin.as_deref())
            .map(crate::redact::Redactor::compiled_bytes)
            .sum()
    }

    /// Everything reported while building, in the order found.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }

    /// All registered hooks, disabled ones included, in registry order (for `/hooks panel`).
    pub fn entries(&self) -> impl ExactSizeIterator<Item = &Arc<HookEntry>> + '_ {
        self.hooks.iter().map(|hook| &hook.entry)
    }

    /// Enables or disables, in memory, every hook (any event, any source) whose display name
    /// is `name`. Plans already handed out are not affected.
    pub fn set_enabled(&mut self, name: &str, enabled: bool) -> EnableOutcome {
        let mut outcome = EnableOutcome::default();
        for hook in &mut self.hooks {
            if hook.entry.config.display_name() != name {
                continue;
            }
            outcome.matched += 1;
            if hook.entry.source == Source::Managed {
                // Managed hooks stay as the administrator wrote them.
                outcome.managed += 1;
                continue;
            }
            if hook.entry.enabled != enabled {
                Arc::make_mut(&mut hook.entry).enabled = enabled;
                outcome.changed += 1;
            }
        }
        outcome
    }

    /// The hooks to run for one firing of `event`, or `None` when nothing runs (§3).
    pub fn plan(&self, event: HookEventName, context: &MatchContext) -> Option<Plan> {
        self.plan_where(event, context, |_| true)
    }

    /// [`Registry::plan`] keeping only the matching hooks for which `takes_part` holds; a
    /// hook left out this way takes no part in de-duplication either.
    fn plan_where(
        &self,
        event: HookEventName,
        context: &MatchContext,
        takes_part: impl Fn(&HookEntry) -> bool,
    ) -> Option<Plan> {
        self.plan_with(
            event,
            context,
            None,
            takes_part,
            |_| true,
            DedupRule::Gemini,
        )
    }

    /// [`Registry::plan_where`] where a hook for which `runs_here` is false claims its
    /// de-duplication key (it runs elsewhere) but is left out of the plan.
    #[allow(clippy::too_many_arguments)]
    fn plan_with(
        &self,
        event: HookEventName,
        context: &MatchContext,
        input: Option<&Map<String, Value>>,
        takes_part: impl Fn(&HookEntry) -> bool,
        runs_here: impl Fn(&HookEntry) -> bool,
        dedup: DedupRule,
    ) -> Option<Plan> {
        let mut seen: HashSet<&str> = HashSet::new();
        // Under `require`, untrusted project hooks are planned (and refused) without claiming
        // their key, so a later copy from another layer still runs; among themselves they are
        // de-duplicated as usual.
        let mut refused: HashSet<&str> = HashSet::new();
        let mut hooks = Vec::new();
        let mut sequential = false;
        for hook in &self.hooks {
            let entry = &hook.entry;
            if entry.event != event
                || !entry.enabled
                || !hook.matcher.matches(context)
                || !takes_part(entry)
            {
                continue;
            }
            // The hook's `if`, checked before anything is spawned; a hook it leaves out takes
            // no part in de-duplication, like one whose matcher does not match.
            if let (Some(condition), Some(input)) = (&hook.condition, input) {
                if !condition.holds(input) {
                    continue;
                }
            }
            // The first copy of a `name:command` wins; a dropped copy's `sequential` is moot.
            let will_be_refused =
                self.trust_policy == ProjectHookPolicy::Require && entry.trust.is_untrusted();
            let key = match dedup {
                DedupRule::Gemini => hook.dedup_key.as_str(),
                DedupRule::Command => hook.claude_dedup_key.as_str(),
            };
            if seen.contains(key) {
                continue;
            }
            if will_be_refused {
                if !refused.insert(key) {
                    continue;
                }
            } else {
                seen.insert(key);
            }
            if !runs_here(entry) {
                continue;
            }
            // A refused project definition does not make the others run in sequence.
            if !will_be_refused {
                sequential |= entry.sequential;
            }
            hooks.push(Arc::clone(entry));
        }
        if hooks.is_empty() {
            return None;
        }
        if event == HookEventName::AfterModel {
            // Builtin filters act before the text goes any further: they come first, so every
            // other hook sees (and the aggregate starts from) the filtered text. The managed
            // hooks stay ahead of everything else's, filters included: nothing of another
            // layer's runs before them.
            hooks.sort_by_key(|entry| {
                (
                    entry.source != Source::Managed,
                    entry.config.hook_type != crate::model::HookType::Builtin,
                )
            });
        }
        Some(Plan {
            event,
            hooks,
            sequential,
        })
    }

    /// [`Registry::plan`] with the match context derived from the event's input fields.
    ///
    /// Hooks converted from Claude Code settings also say which Claude event (and, for
    /// Notification and SubagentStop, which notification or agent type) they were written
    /// for; they take part only in firings that are that event
    /// ([`crate::dialect::claude_hook_applies`]), so a `SubagentStop` hook does not run
    /// when the main agent stops.
    pub fn plan_for_input(&self, event: HookEventName, input: &Map<String, Value>) -> Option<Plan> {
        self.plan_relayed(event, input, None)
    }

    /// [`Registry::plan_for_input`] for an event relayed by `relayed_by` (`None`: not
    /// relayed). The hooks of files that host runs itself ([`crate::relayed::runs_in_hookd`])
    /// are left out of the plan, but still claim their `name:command` in de-duplication: the
    /// host runs them, so a copy in one of hookd's files does not run a second time. For an
    /// event Claude Code relays, hooks are de-duplicated by Claude Code's rule: identical
    /// command strings run once, whatever their names.
    pub fn plan_relayed(
        &self,
        event: HookEventName,
        input: &Map<String, Value>,
        relayed_by: Option<Dialect>,
    ) -> Option<Plan> {
        let context = MatchContext::from_input(event, input);
        self.plan_with(
            event,
            &context,
            Some(input),
            |entry| {
                entry
                    .config
                    .dialect()
                    .run()
                    .hook_applies(&entry.config, event, input)
            },
            |entry| runs_in_hookd(entry.source, entry.origin.file, relayed_by),
            if relayed_by.is_some_and(|host| host.run().dedups_by_command()) {
                DedupRule::Command
            } else {
                DedupRule::Gemini
            },
        )
    }
}

/// The managed file a managed hook came from, for messages.
fn managed_path(entry: &HookEntry) -> String {
    entry
        .origin
        .path
        .as_ref()
        .map_or_else(String::new, |path| path.display().to_string())
}

/// Which copies of a hook count as the same hook in one plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DedupRule {
    /// Gemini CLI's: the same `name:command`.
    Gemini,
    /// The same command string, whatever the names: for the events of a host that
    /// de-duplicates that way (Claude Code).
    Command,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extension::ExtensionSetting;
    use crate::settings::Severity;
    use serde_json::json;

    fn layer(source: Source, text: &str) -> LayerText {
        LayerText {
            source,
            file: LayerFile::Gemini,
            path: PathBuf::from(format!("/{}.json", source.label())),
            text: text.to_owned(),
        }
    }

    fn ext(name: &str, hooks: &str) -> ExtensionInput {
        let path = PathBuf::from(format!("/home/u/.gemini/extensions/{name}"));
        ExtensionInput {
            name: name.to_owned(),
            hooks_file: ExtensionInput::hooks_file_for(&path),
            path,
            hooks_text: Some(hooks.to_owned()),
            settings: Vec::new(),
            setting_values: Vec::new(),
            workspace_setting_values: Vec::new(),
            active: true,
        }
    }

    fn input(layers: Vec<LayerText>, extensions: Vec<ExtensionInput>) -> RegistryInput {
        RegistryInput {
            layers,
            extensions,
            workspace_path: PathBuf::from("/srv/p"),
            folder_trusted: true,
            env: HashMap::from([("HOME".to_owned(), "/home/u".to_owned())]),
            hook_trust: HookTrustInput::default(),
            project_hooks: ProjectHookPolicy::Warn,
        }
    }

    /// A settings text with one BeforeTool definition holding command hooks `name:command`
    /// (an empty name means no name).
    fn before_tool(hooks: &[(&str, &str)]) -> String {
        let hooks: Vec<Value> = hooks
            .iter()
            .map(|(name, command)| {
                let mut hook = json!({"type": "command", "command": command});
                if !name.is_empty() {
                    hook["name"] = json!(name);
                }
                hook
            })
            .collect();
        json!({"hooks": {"BeforeTool": [{"hooks": hooks}]}}).to_string()
    }

    /// `event source display-name [disabled]` for every entry in registry order.
    fn entries(registry: &Registry) -> Vec<String> {
        registry
            .entries()
            .map(|e| {
                format!(
                    "{} {} {}{}",
                    e.event,
                    e.source,
                    e.config.display_name(),
                    if e.enabled { "" } else { " [disabled]" }
                )
            })
            .collect()
    }

    fn check_entries(input: &RegistryInput, expected: &[&str]) {
        let registry = Registry::build(input);
        assert_eq!(
            entries(&registry),
            expected,
            "{:#?}",
            registry.diagnostics()
        );
    }

    /// `source display-name` of the planned hooks, and the sequential flag.
    fn planned(
        registry: &Registry,
        event: HookEventName,
        context: &MatchContext,
    ) -> Option<(Vec<String>, bool)> {
        registry.plan(event, context).map(|plan| {
            let hooks = plan
                .hooks
                .iter()
                .map(|e| format!("{} {}", e.source, e.config.display_name()))
                .collect();
            (hooks, plan.sequential)
        })
    }

    fn check_plan(
        registry: &Registry,
        event: HookEventName,
        tool: &str,
        expected: Option<(&[&str], bool)>,
    ) {
        let got = planned(registry, event, &MatchContext::tool(tool));
        let expected = expected.map(|(hooks, seq)| {
            (
                hooks.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>(),
                seq,
            )
        });
        assert_eq!(got, expected, "{event} {tool}");
    }

    #[test]
    fn layers_are_ordered_by_precedence_then_file_order() {
        // Given in Gemini CLI's merge order; registered project, user, system, defaults, extension.
        let input = input(
            vec![
                layer(
                    Source::SystemDefaults,
                    &before_tool(&[("d1", "d"), ("d2", "d")]),
                ),
                layer(Source::User, &before_tool(&[("u1", "u"), ("u2", "u")])),
                layer(Source::Project, &before_tool(&[("p1", "p"), ("p2", "p")])),
                layer(Source::System, &before_tool(&[("s1", "s")])),
            ],
            vec![
                ext("b-ext", &before_tool(&[("e1", "e")])),
                ext("a-ext", &before_tool(&[("e2", "e")])),
            ],
        );
        let expected = [
            "BeforeTool project p1",
            "BeforeTool project p2",
            "BeforeTool user u1",
            "BeforeTool user u2",
            "BeforeTool system s1",
            "BeforeTool system-defaults d1",
            "BeforeTool system-defaults d2",
            "BeforeTool extension e1",
            "BeforeTool extension e2",
        ];
        check_entries(&input, &expected);
        let registry = Registry::build(&input);
        let plan = registry
            .plan(HookEventName::BeforeTool, &MatchContext::tool("t"))
            .expect("plan");
        let order: Vec<&str> = plan.hooks.iter().map(|e| e.config.display_name()).collect();
        assert_eq!(
            order,
            ["p1", "p2", "u1", "u2", "s1", "d1", "d2", "e1", "e2"]
        );
        let origins: Vec<Option<&str>> = plan
            .hooks
            .iter()
            .map(|e| e.origin.extension.as_deref())
            .collect();
        assert_eq!(origins[7..], [Some("b-ext"), Some("a-ext")]);
        assert_eq!(
            plan.hooks[0].origin.path.as_deref(),
            Some(std::path::Path::new("/project.json"))
        );
    }

    #[test]
    fn disabled_lists_are_unioned_in_merge_order() {
        let input = input(
            vec![
                layer(Source::System, r#"{"hooksConfig": {"disabled": "b"}}"#),
                layer(
                    Source::User,
                    r#"{"hooksConfig": {"disabled": ["a", "b", "a"]}}"#,
                ),
                layer(
                    Source::SystemDefaults,
                    r#"{"hooksConfig": {"disabled": ["c"]}}"#,
                ),
                layer(
                    Source::Project,
                    &before_tool(&[("a", "x"), ("b", "y"), ("c", "z"), ("d", "w")]),
                ),
            ],
            vec![ext("e", &before_tool(&[("c", "ext")]))],
        );
        let registry = Registry::build(&input);
        assert_eq!(registry.disabled_names(), ["c", "a", "b"]);
        check_entries(
            &input,
            &[
                "BeforeTool project a [disabled]",
                "BeforeTool project b [disabled]",
                "BeforeTool project c [disabled]",
                "BeforeTool project d",
                "BeforeTool extension c [disabled]",
            ],
        );
        check_plan(
            &registry,
            HookEventName::BeforeTool,
            "t",
            Some((&["project d"], false)),
        );
    }

    #[test]
    fn under_require_a_project_switches_off_only_its_own_hooks() {
        let project_with = |config: &str| {
            let mut root: Value =
                serde_json::from_str(&before_tool(&[("p", "./p.sh")])).unwrap_or_default();
            root["hooksConfig"] = serde_json::from_str(config).unwrap_or_default();
            layer(Source::Project, &root.to_string())
        };
        let user = layer(Source::User, &before_tool(&[("user-gate", "gate")]));
        // (policy, project hooksConfig, expected entries)
        let cases: &[(ProjectHookPolicy, &str, &[&str])] = &[
            (
                ProjectHookPolicy::Require,
                r#"{"disabled": ["user-gate", "p", "e"]}"#,
                &[
                    "BeforeTool project p [disabled]",
                    "BeforeTool user user-gate",
                    "BeforeTool extension e",
                ],
            ),
            (
                ProjectHookPolicy::Require,
                r#"{"enabled": false}"#,
                &[
                    "BeforeTool project p [disabled]",
                    "BeforeTool user user-gate",
                    "BeforeTool extension e",
                ],
            ),
            // Gemini CLI's behaviour under warn: the project's list reaches every layer,
            // and enabled = false turns every hook off.
            (
                ProjectHookPolicy::Warn,
                r#"{"disabled": ["user-gate", "e"]}"#,
                &[
                    "BeforeTool project p",
                    "BeforeTool user user-gate [disabled]",
                    "BeforeTool extension e [disabled]",
                ],
            ),
            (ProjectHookPolicy::Warn, r#"{"enabled": false}"#, &[]),
        ];
        for (policy, config, expected) in cases {
            let mut input = input(
                vec![user.clone(), project_with(config)],
                vec![ext("e", &before_tool(&[("e", "e")]))],
            );
            input.project_hooks = *policy;
            check_entries(&input, expected);
            if *policy == ProjectHookPolicy::Require {
                let registry = Registry::build(&input);
                assert!(
                    registry
                        .diagnostics()
                        .iter()
                        .any(|d| d.message.contains("project_hooks = require")),
                    "{config}: {:?}",
                    registry.diagnostics()
                );
            }
        }
        // A refused project definition's `sequential` does not chain the user's hooks.
        let sequential_project = layer(
            Source::Project,
            r#"{"hooks": {"BeforeTool": [{"sequential": true, "hooks": [
                {"type": "command", "name": "p", "command": "./p.sh"}]}]}}"#,
        );
        for (policy, sequential) in [
            (ProjectHookPolicy::Require, false),
            (ProjectHookPolicy::Warn, true),
        ] {
            let mut input = input(vec![user.clone(), sequential_project.clone()], Vec::new());
            input.project_hooks = policy;
            check_plan(
                &Registry::build(&input),
                HookEventName::BeforeTool,
                "t",
                Some((&["project p", "user user-gate"], sequential)),
            );
        }
        // Nor can a project turn hooks back on that the user turned off.
        let mut input = input(
            vec![
                layer(Source::User, r#"{"hooksConfig": {"enabled": false}}"#),
                project_with(r#"{"enabled": true}"#),
            ],
            Vec::new(),
        );
        input.project_hooks = ProjectHookPolicy::Require;
        assert!(!Registry::build(&input).hooks_enabled());
    }

    #[test]
    fn enabled_is_last_wins_in_merge_order() {
        let flag = |value: Option<bool>| match value {
            Some(v) => format!(r#"{{"hooksConfig": {{"enabled": {v}}}}}"#),
            None => "{}".to_owned(),
        };
        // (system-defaults, user, project, system, trusted) -> enabled
        let cases = [
            ((None, None, None, None, true), true),
            ((Some(false), None, None, None, true), false),
            ((Some(false), Some(true), None, None, true), true),
            ((None, Some(false), None, None, true), false),
            ((None, Some(false), Some(true), None, true), true),
            ((None, None, Some(false), None, true), false),
            // An untrusted workspace takes no part in the merge.
            ((None, None, Some(false), None, false), true),
            ((None, Some(false), Some(true), None, false), false),
            ((None, Some(true), Some(true), Some(false), true), false),
            (
                (Some(false), Some(false), Some(false), Some(true), true),
                true,
            ),
        ];
        for ((defaults, user, project, system, trusted), expected) in cases {
            let mut input = input(
                vec![
                    layer(Source::SystemDefaults, &flag(defaults)),
                    layer(Source::User, &flag(user)),
                    layer(Source::Project, &flag(project)),
                    layer(Source::System, &flag(system)),
                ],
                Vec::new(),
            );
            input.folder_trusted = trusted;
            let registry = Registry::build(&input);
            assert_eq!(
                registry.hooks_enabled(),
                expected,
                "{defaults:?} {user:?} {project:?} {system:?} trusted={trusted}"
            );
        }
    }

    #[test]
    fn env_redaction_merges_last_wins_and_lists_replace() {
        let redaction =
            |text: &str| format!(r#"{{"security": {{"environmentVariableRedaction": {text}}}}}"#);
        let names = |n: &[&str]| n.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let layers = || {
            vec![
                layer(
                    Source::SystemDefaults,
                    &redaction(r#"{"enabled": true, "blocked": ["A"], "allowed": ["X"]}"#),
                ),
                layer(Source::User, &redaction(r#"{"blocked": ["B", "C"]}"#)),
                layer(
                    Source::Project,
                    &redaction(r#"{"enabled": false, "allowed": ["Y"]}"#),
                ),
                layer(Source::System, &redaction(r#"{"allowed": []}"#)),
            ]
        };
        let mut trusted = input(layers(), Vec::new());
        trusted.folder_trusted = true;
        assert_eq!(
            **Registry::build(&trusted).env_redaction(),
            EnvRedaction {
                enabled: false,
                allowed: Vec::new(),
                blocked: names(&["B", "C"]),
            }
        );
        // An untrusted workspace's file takes no part; hooks switched off change nothing.
        let mut untrusted = input(layers(), Vec::new());
        untrusted.folder_trusted = false;
        untrusted.layers.push(layer(
            Source::User,
            r#"{"hooksConfig": {"enabled": false}}"#,
        ));
        let registry = Registry::build(&untrusted);
        assert!(!registry.hooks_enabled());
        assert_eq!(
            **registry.env_redaction(),
            EnvRedaction {
                enabled: true,
                allowed: Vec::new(),
                blocked: names(&["B", "C"]),
            }
        );
        assert_eq!(
            **Registry::build(&input(Vec::new(), Vec::new())).env_redaction(),
            EnvRedaction::default()
        );
    }

    #[test]
    fn hooks_disabled_means_no_hooks_at_all() {
        let input = input(
            vec![
                layer(
                    Source::User,
                    r#"{"hooksConfig": {"enabled": false, "notifications": false}}"#,
                ),
                layer(Source::Project, &before_tool(&[("p", "p")])),
            ],
            vec![ext("e", &before_tool(&[("e", "e")]))],
        );
        let registry = Registry::build(&input);
        assert!(!registry.hooks_enabled());
        assert!(!registry.notifications_enabled());
        assert_eq!(registry.entries().len(), 0);
        assert!(
            registry
                .plan(HookEventName::BeforeTool, &MatchContext::tool("t"))
                .is_none()
        );
        assert!(
            registry
                .diagnostics()
                .iter()
                .any(|d| d.severity == Severity::Info)
        );
    }

    #[test]
    fn untrusted_folder_skips_every_settings_hook_but_not_extensions() {
        let mut input = input(
            vec![
                layer(Source::User, &before_tool(&[("u", "u")])),
                layer(Source::System, &before_tool(&[("s", "s")])),
                layer(
                    Source::Project,
                    r#"{"hooksConfig": {"disabled": ["e"]}, "hooks": {"BeforeTool": [{"hooks": [{"type": "command", "command": "p"}]}]}}"#,
                ),
            ],
            vec![ext("e", &before_tool(&[("e", "e")]))],
        );
        input.folder_trusted = false;
        let registry = Registry::build(&input);
        // The untrusted workspace's disabled list is not merged, so the extension hook is enabled.
        assert_eq!(entries(&registry), ["BeforeTool extension e"]);
        assert!(registry.project_hooks().is_none());
        let warnings: Vec<String> = registry
            .diagnostics()
            .iter()
            .filter(|d| d.severity == Severity::Warning)
            .map(|d| d.message.clone())
            .collect();
        assert_eq!(
            warnings,
            [
                "the folder /srv/p is not trusted: 3 hook(s) from settings files are skipped; only \
              extension hooks run"
            ]
        );

        input.folder_trusted = true;
        let registry = Registry::build(&input);
        assert_eq!(
            entries(&registry),
            [
                "BeforeTool project p",
                "BeforeTool user u",
                "BeforeTool system s",
                "BeforeTool extension e [disabled]"
            ]
        );
        assert!(registry.project_hooks().is_some());
    }

    #[test]
    fn dedup_keeps_the_highest_precedence_copy() {
        let registry = Registry::build(&input(
            vec![
                layer(
                    Source::User,
                    r#"{"hooks": {"BeforeTool": [{"sequential": true, "hooks": [
                        {"type": "command", "name": "n", "command": "cmd", "timeout": 1}]}]}}"#,
                ),
                layer(Source::Project, &before_tool(&[("n", "cmd")])),
            ],
            vec![ext("e", &before_tool(&[("n", "cmd")]))],
        ));
        let plan = registry
            .plan(HookEventName::BeforeTool, &MatchContext::tool("t"))
            .expect("plan");
        assert_eq!(plan.hooks.len(), 1);
        assert_eq!(plan.hooks[0].source, Source::Project);
        assert_eq!(plan.hooks[0].config.timeout_ms, None);
        // The dropped user copy's `sequential: true` does not count.
        assert!(!plan.sequential);
        // All three stay registered.
        assert_eq!(registry.entries().len(), 3);
    }

    #[test]
    fn same_command_different_names_are_not_deduplicated() {
        let registry = Registry::build(&input(
            vec![
                layer(
                    Source::Project,
                    &before_tool(&[("a", "cmd"), ("b", "cmd"), ("", "cmd")]),
                ),
                layer(Source::User, &before_tool(&[("", "cmd"), ("b", "other")])),
            ],
            Vec::new(),
        ));
        check_plan(
            &registry,
            HookEventName::BeforeTool,
            "t",
            Some((&["project a", "project b", "project cmd", "user b"], false)),
        );
    }

    #[test]
    fn disabling_works_by_display_name_only() {
        // (disabled list, expected enabled flags of [named "n" running "c", unnamed running "c"])
        let cases: [(&str, [bool; 2]); 4] = [
            (r#"[]"#, [true, true]),
            (r#"["c"]"#, [true, false]),
            (r#"["n"]"#, [false, true]),
            (r#"["n", "c"]"#, [false, false]),
        ];
        for (disabled, expected) in cases {
            let registry = Registry::build(&input(
                vec![
                    layer(
                        Source::User,
                        &format!(r#"{{"hooksConfig": {{"disabled": {disabled}}}}}"#),
                    ),
                    layer(Source::Project, &before_tool(&[("n", "c"), ("", "c")])),
                ],
                Vec::new(),
            ));
            let flags: Vec<bool> = registry.entries().map(|e| e.enabled).collect();
            assert_eq!(flags, expected, "disabled {disabled}");
        }
    }

    #[test]
    fn set_enabled_flips_every_entry_with_that_display_name() {
        let mut registry = Registry::build(&input(
            vec![
                layer(Source::User, r#"{"hooksConfig": {"disabled": ["n"]}}"#),
                layer(Source::Project, &before_tool(&[("n", "c"), ("m", "c")])),
                layer(
                    Source::System,
                    r#"{"hooks": {"AfterTool": [{"hooks": [{"type": "command", "name": "n", "command": "x"}]}]}}"#,
                ),
            ],
            vec![ext("e", &before_tool(&[("n", "e")]))],
        ));
        let before = registry.plan(HookEventName::BeforeTool, &MatchContext::tool("t"));
        assert_eq!(
            registry.set_enabled("n", true),
            EnableOutcome {
                matched: 3,
                changed: 3,
                managed: 0,
            }
        );
        assert_eq!(
            registry.set_enabled("n", true),
            EnableOutcome {
                matched: 3,
                changed: 0,
                managed: 0,
            }
        );
        assert_eq!(
            registry.set_enabled("c", false),
            EnableOutcome {
                matched: 0,
                changed: 0,
                managed: 0,
            }
        );
        check_plan(
            &registry,
            HookEventName::BeforeTool,
            "t",
            Some((&["project n", "project m", "extension n"], false)),
        );
        check_plan(
            &registry,
            HookEventName::AfterTool,
            "t",
            Some((&["system n"], false)),
        );
        assert_eq!(
            registry.set_enabled("m", false),
            EnableOutcome {
                matched: 1,
                changed: 1,
                managed: 0,
            }
        );
        check_plan(
            &registry,
            HookEventName::BeforeTool,
            "t",
            Some((&["project n", "extension n"], false)),
        );
        // A plan handed out earlier is a snapshot.
        let before = before.expect("plan");
        assert_eq!(before.hooks.len(), 1);
        assert!(before.hooks[0].enabled);
    }

    #[test]
    fn sequential_is_contagious_among_matching_hooks() {
        let registry = Registry::build(&input(
            vec![layer(
                Source::Project,
                r#"{"hooks": {"BeforeTool": [
                    {"matcher": "write", "sequential": true, "hooks": [{"type": "command", "command": "w"}]},
                    {"hooks": [{"type": "command", "command": "all"}]}
                ]}}"#,
            )],
            vec![ext("e", &before_tool(&[("", "ext")]))],
        ));
        check_plan(
            &registry,
            HookEventName::BeforeTool,
            "write_file",
            Some((&["project w", "project all", "extension ext"], true)),
        );
        check_plan(
            &registry,
            HookEventName::BeforeTool,
            "read_file",
            Some((&["project all", "extension ext"], false)),
        );
    }

    #[test]
    fn plans_filter_by_event_matcher_and_enabled() {
        let registry = Registry::build(&input(
            vec![layer(
                Source::Project,
                r#"{"hooksConfig": {"disabled": ["off"]}, "hooks": {
                    "BeforeTool": [
                        {"matcher": "read", "hooks": [{"type": "command", "command": "r"}]},
                        {"matcher": "[invalid-regex", "hooks": [{"type": "command", "command": "inv"}]},
                        {"hooks": [{"type": "command", "command": "off"}]}
                    ],
                    "SessionStart": [
                        {"matcher": "startup|resume", "hooks": [{"type": "command", "command": "alt"}]},
                        {"matcher": "resume", "hooks": [{"type": "command", "command": "res"}]}
                    ],
                    "Notification": [{"matcher": "NOPE", "hooks": [{"type": "command", "command": "n"}]}]
                }}"#,
            )],
            Vec::new(),
        ));
        check_plan(
            &registry,
            HookEventName::BeforeTool,
            "spread",
            Some((&["project r"], false)),
        );
        check_plan(
            &registry,
            HookEventName::BeforeTool,
            "[invalid-regex",
            Some((&["project inv"], false)),
        );
        check_plan(&registry, HookEventName::BeforeTool, "write_file", None);
        check_plan(&registry, HookEventName::AfterTool, "read_file", None);

        let session = |source: &str| {
            let input = json!({"source": source});
            planned(
                &registry,
                HookEventName::SessionStart,
                &MatchContext::from_input(
                    HookEventName::SessionStart,
                    input.as_object().expect("object"),
                ),
            )
        };
        assert_eq!(
            session("resume"),
            Some((vec!["project res".to_owned()], false))
        );
        assert_eq!(session("startup"), None);

        let input = json!({"notification_type": "ToolPermission"});
        let plan = registry.plan_for_input(
            HookEventName::Notification,
            input.as_object().expect("object"),
        );
        assert_eq!(plan.map(|p| p.hooks.len()), Some(1));

        let infos: Vec<&str> = registry
            .diagnostics()
            .iter()
            .filter(|d| d.severity == Severity::Info)
            .map(|d| d.message.as_str())
            .collect();
        assert_eq!(
            infos,
            [
                "BeforeTool matcher \"[invalid-regex\" is not a valid JavaScript regular expression; \
              it matches a tool name only when equal to it"
            ]
        );
    }

    #[test]
    fn bad_files_and_entries_do_not_take_others_down() {
        let input = input(
            vec![
                layer(Source::User, "{ not json"),
                layer(Source::System, "[1]"),
                layer(
                    Source::Project,
                    r#"{"hooks": {
                        "enabled": false,
                        "PreToolUse": [],
                        "BeforeTool": {"hooks": ["junk", {"type": "command", "command": "ok"}, {"type": "command"}]}
                    }}"#,
                ),
            ],
            vec![ext("e", "{\"hooks\": 1}")],
        );
        let registry = Registry::build(&input);
        // The legacy `hooks.enabled` does not switch hooks off.
        assert!(registry.hooks_enabled());
        assert_eq!(entries(&registry), ["BeforeTool project ok"]);
        let rendered: Vec<String> = registry
            .diagnostics()
            .iter()
            .map(|d| d.to_string())
            .collect();
        assert_eq!(
            rendered,
            [
                "/user.json:1:3: invalid JSON: key must be a string; file ignored",
                "/system.json: settings file must contain a JSON object; file ignored",
                "/project.json: hooks.PreToolUse: Invalid hook event name: \"PreToolUse\" from \
                 project config. Skipping.",
                "/project.json: hooks.BeforeTool[0].hooks[0]: Discarding invalid hook \
                 configuration for BeforeTool from project config: expected an object, not a string",
                "/project.json: hooks.BeforeTool[0].hooks[2].command: Discarding command hook for \
                 BeforeTool from project config: missing command",
                "/home/u/.gemini/extensions/e/hooks/hooks.json: Invalid hooks configuration of \
                 extension \"e\": \"hooks\" property must be an object",
            ]
        );
    }

    #[test]
    fn settings_are_env_expanded_and_extensions_hydrated() {
        let mut extension = ext(
            "e",
            r#"{"hooks": {"BeforeTool": [{"hooks": [
                {"type": "command", "command": "${extensionPath}/run.sh ${workspacePath} $HOME ${KEY}"}
            ]}]}}"#,
        );
        extension.settings = vec![ExtensionSetting {
            name: "Key".to_owned(),
            env_var: "KEY".to_owned(),
        }];
        extension.setting_values = vec![("KEY".to_owned(), "k".to_owned())];
        let mut inactive = ext("off", &before_tool(&[("", "never")]));
        inactive.active = false;
        let registry = Registry::build(&input(
            vec![layer(
                Source::User,
                r#"{"hooks": {"BeforeTool": [{"hooks": [{"type": "command", "command": "$HOME/u.sh ${MISSING:-d} $GEMINI_PROJECT_DIR"}]}]}}"#,
            )],
            vec![extension, inactive],
        ));
        let commands: Vec<&str> = registry
            .entries()
            .map(|e| e.config.command.as_deref().unwrap_or(""))
            .collect();
        assert_eq!(
            commands,
            [
                "/home/u/u.sh d $GEMINI_PROJECT_DIR",
                "/home/u/.gemini/extensions/e/run.sh /srv/p $HOME k",
            ]
        );
        let env: Vec<&(String, String)> = registry.entries().flat_map(|e| &e.config.env).collect();
        assert_eq!(env, [&("KEY".to_owned(), "k".to_owned())]);
    }

    #[test]
    fn only_project_hooks_that_run_commands_need_trust() {
        use crate::trust::{ScriptDigest, ScriptFile, TrustGap, TrustKey, sha256_hex};
        let mut input = input(
            vec![
                layer(
                    Source::Project,
                    r#"{"hooks": {"BeforeTool": [{"hooks": [
                        {"type": "command", "name": "guard", "command": "./g.sh"},
                        {"type": "command", "command": "echo new"},
                        {"type": "runtime", "name": "r"}
                    ]}]}}"#,
                ),
                layer(Source::User, &before_tool(&[("u", "./g.sh")])),
                layer(Source::System, &before_tool(&[("s", "s")])),
            ],
            vec![ext("e", &before_tool(&[("e", "e")]))],
        );
        let digest = sha256_hex(b"#!/bin/sh\n");
        input.hook_trust = HookTrustInput {
            trusted: vec![TrustKey {
                name: "guard".to_owned(),
                command: "./g.sh".to_owned(),
                scripts: vec![ScriptDigest {
                    path: "g.sh".to_owned(),
                    sha256: digest.clone(),
                }],
                ..TrustKey::default()
            }],
            scripts: vec![ScriptFile {
                path: PathBuf::from("/srv/p/g.sh"),
                sha256: Some(digest),
            }],
            hooks: Vec::new(),
        };
        let registry = Registry::build(&input);
        let trust: Vec<(String, &str)> = registry
            .entries()
            .map(|entry| {
                let state = match &entry.trust {
                    HookTrust::NotRequired => "-",
                    HookTrust::Trusted { .. } => "trusted",
                    HookTrust::Untrusted {
                        gap: TrustGap::New, ..
                    } => "untrusted",
                    HookTrust::Untrusted { .. } => "changed",
                };
                (
                    format!("{} {}", entry.source, entry.config.display_name()),
                    state,
                )
            })
            .collect();
        assert_eq!(
            trust,
            [
                ("project guard".to_owned(), "trusted"),
                ("project echo new".to_owned(), "untrusted"),
                ("project r".to_owned(), "-"),
                ("user u".to_owned(), "-"),
                ("system s".to_owned(), "-"),
                ("extension e".to_owned(), "-"),
            ]
        );
    }

    #[test]
    fn a_refused_project_copy_does_not_shadow_the_users_hook() {
        let layers = vec![
            layer(
                Source::Project,
                &before_tool(&[("gate", "./gate.sh"), ("gate", "./gate.sh"), ("p", "p")]),
            ),
            layer(Source::User, &before_tool(&[("gate", "./gate.sh")])),
        ];
        // (policy, planned hooks)
        let cases: [(ProjectHookPolicy, &[&str]); 2] = [
            // Gemini CLI's (and hookd's) rule: the first copy wins.
            (ProjectHookPolicy::Warn, &["project gate", "project p"]),
            // The untrusted project copy is still planned (its record says it was refused),
            // once, and the user's own copy runs too.
            (
                ProjectHookPolicy::Require,
                &["project gate", "project p", "user gate"],
            ),
        ];
        for (policy, expected) in cases {
            let mut input = input(layers.clone(), Vec::new());
            input.project_hooks = policy;
            check_plan(
                &Registry::build(&input),
                HookEventName::BeforeTool,
                "t",
                Some((expected, false)),
            );
        }
    }

    #[test]
    fn relay_entries_are_never_registered() {
        // (name, command, registered as a hook)
        let cases = [
            ("", "hookctl relay BeforeTool", false),
            (
                "",
                "/usr/local/bin/hookctl relay BeforeTool --dialect claude",
                false,
            ),
            ("", "FOO=1 exec hookctl relay BeforeTool", false),
            ("", "\"hookctl\" relay BeforeTool", false),
            ("", "hookctl list", true),
            ("", "echo hookctl relay", true),
            ("", "myhookctl relay BeforeTool", true),
            // `hookctl install`'s name marks relay wiring whatever runs it.
            ("hookd-relay", "\"$HOOKCTL\" relay BeforeTool", false),
            ("hookd-relay", "/opt/bin/relay-wrapper BeforeTool", false),
            ("my-relay", "/opt/bin/relay-wrapper BeforeTool", true),
        ];
        for (name, command, registered) in cases {
            let text = before_tool(&[(name, command), ("guard", "./guard.sh")]);
            let registry = Registry::build(&input(vec![layer(Source::User, &text)], vec![]));
            let mut expected = Vec::new();
            if registered {
                let shown = if name.is_empty() { command } else { name };
                expected.push(format!("BeforeTool user {shown}"));
            }
            expected.push("BeforeTool user guard".to_owned());
            assert_eq!(entries(&registry), expected, "{command}");
            let noted = registry.diagnostics().iter().any(|d| {
                d.severity == Severity::Info
                    && d.message.contains(&format!("relay entry {command:?}"))
                    && d.path.as_deref() == Some(std::path::Path::new("/user.json"))
            });
            assert_eq!(
                noted,
                !registered,
                "{command}: {:?}",
                registry.diagnostics()
            );
        }
    }

    #[test]
    fn guarded_copies_of_a_project_install_are_never_registered() {
        let copy = crate::dialect::fallback_command("./guard.sh");
        let shared = crate::dialect::shared_relay_command("hookd-relay BeforeTool");
        // (command, registered as a hook, what the info diagnostic says)
        let cases = [
            (
                copy.as_str(),
                false,
                "is the copy of a hook for machines without hookd",
            ),
            (shared.as_str(), false, "is handled by hookd"),
            // Only the exact text install writes is a copy.
            (
                "command -v hookd-relay >/dev/null 2>&1 || { ./guard.sh; }",
                true,
                "",
            ),
        ];
        for (command, registered, noted) in cases {
            let text = before_tool(&[("guard", command), ("other", "./other.sh")]);
            let registry = Registry::build(&input(vec![layer(Source::Project, &text)], vec![]));
            let mut expected = Vec::new();
            if registered {
                expected.push("BeforeTool project guard".to_owned());
            }
            expected.push("BeforeTool project other".to_owned());
            assert_eq!(entries(&registry), expected, "{command}");
            let said = registry.diagnostics().iter().any(|d| {
                d.severity == Severity::Info && !noted.is_empty() && d.message.contains(noted)
            });
            assert_eq!(said, !registered, "{command}: {:?}", registry.diagnostics());
        }
    }

    /// One case of the managed layer's precedence: the layers, whether the folder is trusted,
    /// the BeforeTool plan for tool `t`, and the warnings that must be said (substrings).
    struct ManagedCase {
        name: &'static str,
        layers: Vec<(Source, String)>,
        trusted: bool,
        plan: Option<&'static [&'static str]>,
        warnings: &'static [&'static str],
    }

    fn with_config(hooks: &[(&str, &str)], config: Value) -> String {
        let mut settings: Value =
            serde_json::from_str(&before_tool(hooks)).expect("before_tool writes JSON");
        settings["hooksConfig"] = config;
        settings.to_string()
    }

    #[test]
    fn managed_hooks_cannot_be_disabled_reordered_or_overridden() {
        let managed = || (Source::Managed, before_tool(&[("m", "guard")]));
        let cases = [
            ManagedCase {
                name: "managed hooks come first",
                layers: vec![
                    (Source::User, before_tool(&[("u", "u")])),
                    (Source::Project, before_tool(&[("p", "p")])),
                    managed(),
                ],
                trusted: true,
                plan: Some(&["managed m", "project p", "user u"]),
                warnings: &[],
            },
            ManagedCase {
                name: "a user's disabled list does not reach a managed hook",
                layers: vec![
                    managed(),
                    (
                        Source::User,
                        with_config(&[("u", "u")], json!({"disabled": ["m", "u"]})),
                    ),
                ],
                trusted: true,
                plan: Some(&["managed m"]),
                warnings: &["hooksConfig.disabled names \"m\", a hook of the managed hooks file"],
            },
            ManagedCase {
                name: "a project's disabled list does not reach a managed hook",
                layers: vec![
                    managed(),
                    (
                        Source::Project,
                        with_config(&[], json!({"disabled": ["m"]})),
                    ),
                ],
                trusted: true,
                plan: Some(&["managed m"]),
                warnings: &["it stays on"],
            },
            ManagedCase {
                name: "the master switch spares managed hooks",
                layers: vec![
                    managed(),
                    (Source::User, before_tool(&[("u", "u")])),
                    (
                        Source::Project,
                        with_config(&[("p", "p")], json!({"enabled": false})),
                    ),
                ],
                trusted: true,
                plan: Some(&["managed m"]),
                warnings: &["turns off every hook but the managed ones"],
            },
            ManagedCase {
                name: "without a managed file the master switch turns off everything",
                layers: vec![(
                    Source::Project,
                    with_config(&[("p", "p")], json!({"enabled": false})),
                )],
                trusted: true,
                plan: None,
                warnings: &[],
            },
            ManagedCase {
                name: "an untrusted folder still runs managed hooks",
                layers: vec![managed(), (Source::User, before_tool(&[("u", "u")]))],
                trusted: false,
                plan: Some(&["managed m"]),
                warnings: &["is not trusted: 1 hook(s)"],
            },
            ManagedCase {
                name: "a project copy of a managed hook does not take its place",
                layers: vec![
                    managed(),
                    (Source::Project, before_tool(&[("m", "guard"), ("p", "p")])),
                ],
                trusted: true,
                plan: Some(&["managed m", "project p"]),
                warnings: &["BeforeTool hook \"m\" is outranked by the managed hooks file"],
            },
            ManagedCase {
                name: "a user copy with the same command is outranked for command hosts",
                layers: vec![
                    managed(),
                    (Source::User, before_tool(&[("other-name", "guard")])),
                ],
                trusted: true,
                // Gemini CLI's identity differs (name:command), so both run here; Claude
                // Code's rule (same command) would keep the managed one, hence the warning.
                plan: Some(&["managed m", "user other-name"]),
                warnings: &["hook \"other-name\" is outranked"],
            },
            ManagedCase {
                name: "the managed file's own switches are not read",
                layers: vec![
                    (
                        Source::Managed,
                        with_config(&[("m", "guard")], json!({"disabled": ["u"]})),
                    ),
                    (Source::User, before_tool(&[("u", "u")])),
                ],
                trusted: true,
                plan: Some(&["managed m", "user u"]),
                warnings: &["holds hooks only"],
            },
        ];
        for case in cases {
            let mut input = input(
                case.layers
                    .iter()
                    .map(|(source, text)| layer(*source, text))
                    .collect(),
                vec![],
            );
            input.folder_trusted = case.trusted;
            let registry = Registry::build(&input);
            let got = planned(
                &registry,
                HookEventName::BeforeTool,
                &MatchContext::tool("t"),
            )
            .map(|(hooks, _)| hooks);
            let expected = case
                .plan
                .map(|hooks| hooks.iter().map(|h| (*h).to_owned()).collect::<Vec<_>>());
            assert_eq!(
                got,
                expected,
                "{}: {:#?}",
                case.name,
                registry.diagnostics()
            );
            for warning in case.warnings {
                assert!(
                    registry.diagnostics().iter().any(|diagnostic| {
                        diagnostic.severity == Severity::Warning
                            && diagnostic.message.contains(warning)
                    }),
                    "{}: no warning {warning:?} in {:#?}",
                    case.name,
                    registry.diagnostics()
                );
            }
            if case.warnings.is_empty() {
                assert!(
                    !registry
                        .diagnostics()
                        .iter()
                        .any(|diagnostic| diagnostic.message.contains("managed")),
                    "{}: {:#?}",
                    case.name,
                    registry.diagnostics()
                );
            }
        }
    }

    #[test]
    fn outranked_hooks_name_the_managed_file_and_set_enabled_leaves_managed_hooks() {
        let mut registry = Registry::build(&input(
            vec![
                layer(Source::Managed, &before_tool(&[("m", "guard")])),
                layer(Source::User, &before_tool(&[("m", "guard"), ("u", "u")])),
            ],
            vec![],
        ));
        let notes: Vec<(String, Option<PathBuf>)> = registry
            .entries()
            .map(|entry| {
                (
                    format!("{} {}", entry.source, entry.config.display_name()),
                    registry.outranked_by(entry).map(PathBuf::from),
                )
            })
            .collect();
        assert_eq!(
            notes,
            [
                ("managed m".to_owned(), None),
                ("user m".to_owned(), Some(PathBuf::from("/managed.json"))),
                ("user u".to_owned(), None),
            ]
        );
        assert_eq!(
            registry.set_enabled("m", false),
            EnableOutcome {
                matched: 2,
                changed: 1,
                managed: 1,
            }
        );
        check_plan(
            &registry,
            HookEventName::BeforeTool,
            "t",
            Some((&["managed m", "user u"], false)),
        );
    }

    #[test]
    fn managed_hooks_run_before_every_after_model_filter() {
        let after_model = |hooks: Value| json!({"hooks": {"AfterModel": [{"hooks": hooks}]}});
        let registry = Registry::build(&input(
            vec![
                layer(
                    Source::User,
                    &after_model(json!([
                        {"name": "user-redact", "type": "builtin", "builtin": "redact"}
                    ]))
                    .to_string(),
                ),
                layer(
                    Source::Managed,
                    &after_model(json!([
                        {"name": "audit", "type": "command", "command": "audit"}
                    ]))
                    .to_string(),
                ),
            ],
            vec![],
        ));
        let planned = planned(
            &registry,
            HookEventName::AfterModel,
            &MatchContext::default(),
        )
        .map(|(hooks, _)| hooks);
        assert_eq!(
            planned,
            Some(vec![
                "managed audit".to_owned(),
                "user user-redact".to_owned()
            ])
        );
    }

    #[test]
    fn after_model_plans_put_builtin_filters_first() {
        let after_model = |hooks: Value| json!({"hooks": {"AfterModel": [{"hooks": hooks}]}});
        let project = after_model(json!([
            {"name": "logger", "type": "command", "command": "log"},
            {"name": "project-redact", "type": "builtin", "builtin": "redact"}
        ]));
        let user = after_model(json!([
            {"name": "checker", "type": "command", "command": "check"},
            {"name": "user-redact", "type": "builtin", "builtin": "redact"}
        ]));
        let registry = Registry::build(&input(
            vec![
                layer(Source::Project, &project.to_string()),
                layer(Source::User, &user.to_string()),
            ],
            vec![],
        ));
        let planned = planned(
            &registry,
            HookEventName::AfterModel,
            &MatchContext::default(),
        );
        assert_eq!(
            planned,
            Some((
                vec![
                    "project project-redact".to_owned(),
                    "user user-redact".to_owned(),
                    "project logger".to_owned(),
                    "user checker".to_owned(),
                ],
                false
            ))
        );
    }

    #[test]
    fn relayed_events_skip_the_hooks_their_host_runs() {
        let file = |source, file, hooks: &[(&str, &str)]| LayerText {
            source,
            file,
            path: PathBuf::from(format!("/{}-{}.json", source.label(), file.label())),
            text: before_tool(hooks),
        };
        let layers = vec![
            file(Source::System, LayerFile::Gemini, &[("system", "s")]),
            file(
                Source::User,
                LayerFile::Gemini,
                &[("user", "u"), ("both", "b")],
            ),
            file(
                Source::User,
                LayerFile::Hookd,
                &[("hookd-user", "hu"), ("both", "b")],
            ),
            file(Source::Project, LayerFile::Gemini, &[("project", "p")]),
            file(
                Source::Project,
                LayerFile::Hookd,
                &[("hookd-project", "hp")],
            ),
            file(
                Source::Project,
                Dialect::CLAUDE.layer_file(),
                &[("claude", "c")],
            ),
        ];
        let extension = ext(
            "e",
            &json!({"hooks": {"BeforeTool": [{"hooks": [
                {"name": "extension", "type": "command", "command": "x"}
            ]}]}})
            .to_string(),
        );
        let registry = Registry::build(&input(layers, vec![extension]));
        let tool_input = json!({"tool_name": "t"});
        let tool_input = tool_input.as_object().cloned().unwrap_or_default();
        // (relayed by, planned hooks)
        let cases: [(Option<Dialect>, &[&str]); 3] = [
            (
                None,
                &[
                    "project project",
                    "project hookd-project",
                    "project claude",
                    "user user",
                    "user both",
                    "user hookd-user",
                    "system system",
                    "extension extension",
                ],
            ),
            // Gemini CLI runs its own "both"; hookd's copy is not run a second time.
            (
                Some(Dialect::GEMINI),
                &["project hookd-project", "project claude", "user hookd-user"],
            ),
            (
                Some(Dialect::CLAUDE),
                &[
                    "project project",
                    "project hookd-project",
                    "user user",
                    "user both",
                    "user hookd-user",
                    "system system",
                    "extension extension",
                ],
            ),
        ];
        for (host, expected) in cases {
            let planned: Vec<String> = registry
                .plan_relayed(HookEventName::BeforeTool, &tool_input, host)
                .map(|plan| {
                    plan.hooks
                        .iter()
                        .map(|e| format!("{} {}", e.source, e.config.display_name()))
                        .collect()
                })
                .unwrap_or_default();
            assert_eq!(planned, expected, "{host:?}");
        }
    }

    #[test]
    fn claude_relayed_events_dedup_identical_commands_whatever_their_names() {
        let file = |source: Source, file: LayerFile, hooks: &[(&str, &str)]| LayerText {
            source,
            file,
            path: PathBuf::from(format!("/{}-{file:?}.json", source.label())),
            text: before_tool(hooks),
        };
        let layers = vec![
            file(
                Source::User,
                LayerFile::Gemini,
                &[("gemini-guard", "guard")],
            ),
            file(
                Source::User,
                LayerFile::Hookd,
                &[("", "guard"), ("other", "other"), ("", "claude-only")],
            ),
            file(
                Source::Project,
                Dialect::CLAUDE.layer_file(),
                &[("", "claude-only")],
            ),
        ];
        let registry = Registry::build(&input(layers, vec![]));
        let tool_input = json!({"tool_name": "t"});
        let tool_input = tool_input.as_object().cloned().unwrap_or_default();
        // (relayed by, planned hooks)
        let cases: [(Option<Dialect>, &[&str]); 3] = [
            (
                None,
                &[
                    "project claude-only",
                    "user gemini-guard",
                    "user guard",
                    "user other",
                ],
            ),
            (
                Some(Dialect::GEMINI),
                &["project claude-only", "user guard", "user other"],
            ),
            // Claude Code runs `claude-only` itself, and `guard` twice is one `guard`.
            (Some(Dialect::CLAUDE), &["user gemini-guard", "user other"]),
        ];
        for (host, expected) in cases {
            let planned: Vec<String> = registry
                .plan_relayed(HookEventName::BeforeTool, &tool_input, host)
                .map(|plan| {
                    plan.hooks
                        .iter()
                        .map(|e| format!("{} {}", e.source, e.config.display_name()))
                        .collect()
                })
                .unwrap_or_default();
            assert_eq!(planned, expected, "{host:?}");
        }
    }

    #[test]
    fn if_conditions_are_checked_before_planning_for_both_dialects() {
        let settings = json!({"hooks": {"BeforeTool": [{"hooks": [
            {"name": "git-gemini", "type": "command", "command": "g", "if": "run_shell_command(git *)"},
            {"name": "git-claude", "type": "command", "command": "c", "dialect": "claude",
             "claude_event": "PreToolUse", "if": "Bash(git *)"},
            {"name": "always", "type": "command", "command": "a"},
            {"name": "unreadable", "type": "command", "command": "u", "if": "Bash(git *"}
        ]}]}});
        let registry = Registry::build(&input(
            vec![layer(Source::User, &settings.to_string())],
            vec![],
        ));
        assert!(
            registry
                .diagnostics()
                .iter()
                .any(|d| d.message.contains("not a permission rule")),
            "{:#?}",
            registry.diagnostics()
        );
        // (tool input, hooks planned)
        let cases = [
            (
                json!({"tool_name": "run_shell_command", "tool_input": {"command": "git push"}}),
                vec!["git-gemini", "git-claude", "always", "unreadable"],
            ),
            (
                json!({"tool_name": "run_shell_command", "tool_input": {"command": "rm -rf x"}}),
                vec!["always", "unreadable"],
            ),
            (
                json!({"tool_name": "read_file", "tool_input": {"file_path": "/a"}}),
                vec!["always", "unreadable"],
            ),
        ];
        for (tool_input, expected) in cases {
            let map = tool_input.as_object().cloned().unwrap_or_default();
            let names: Vec<String> = registry
                .plan_for_input(HookEventName::BeforeTool, &map)
                .map(|plan| {
                    plan.hooks
                        .iter()
                        .map(|entry| entry.config.display_name().to_owned())
                        .collect()
                })
                .unwrap_or_default();
            assert_eq!(names, expected, "{tool_input}");
        }
    }

    #[test]
    fn claude_hooks_take_part_only_in_their_own_claude_event() {
        let settings = json!({"hooks": {"AfterAgent": [{"hooks": [
            {"name": "stop", "type": "command", "command": "s", "dialect": "claude",
             "claude_event": "Stop"},
            {"name": "subagent", "type": "command", "command": "a", "dialect": "claude",
             "claude_event": "SubagentStop"},
            {"name": "unmarked", "type": "command", "command": "u", "dialect": "claude"},
            {"name": "gemini", "type": "command", "command": "g", "claude_event": "SubagentStop"}
        ]}]}});
        let registry = Registry::build(&input(
            vec![layer(Source::User, &settings.to_string())],
            vec![],
        ));
        // (event input, hooks planned)
        let cases = [
            (json!({}), vec!["stop", "unmarked", "gemini"]),
            (
                json!({"claude_event": "Stop"}),
                vec!["stop", "unmarked", "gemini"],
            ),
            (
                json!({"claude_event": "SubagentStop"}),
                vec!["subagent", "unmarked", "gemini"],
            ),
            // A Claude event that does not belong to AfterAgent is not this firing's.
            (
                json!({"claude_event": "PreToolUse"}),
                vec!["stop", "unmarked", "gemini"],
            ),
        ];
        for (event_input, expected) in cases {
            let map = event_input.as_object().cloned().unwrap();
            let names: Vec<String> = registry
                .plan_for_input(HookEventName::AfterAgent, &map)
                .map(|plan| {
                    plan.hooks
                        .iter()
                        .map(|entry| entry.config.display_name().to_owned())
                        .collect()
                })
                .unwrap_or_default();
            assert_eq!(names, expected, "{event_input}");
        }
    }

    #[test]
    fn registry_is_shareable_across_threads() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Registry>();
    }
}
