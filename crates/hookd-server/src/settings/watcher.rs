//! Watching the configuration files, so the next event after a save sees the new hooks.
//!
//! [`Watcher`] owns a `notify` watcher. Its callback runs on notify's own thread and only
//! `try_send`s into a bounded channel; when the channel is full the event is dropped and a
//! flag is set, and the next batch then reloads everything, so nothing is missed and the
//! callback never blocks.
//!
//! Directories are watched, not files, and never recursively: editors save by writing a new
//! file and renaming it over the old one, which a watch on the old file would not survive. The
//! watched directories are those holding the files that matter: the user settings, the system
//! settings and system defaults, the trusted-folders and extension-enablement files, hookd's
//! trusted-hooks store and user hooks file, Claude Code's user settings (with
//! `--claude-settings`: every host's own files read as layers), the extensions directory, each
//! extension's directory and its `hooks/` directory, each loaded project's `.gemini/` and
//! `.hookd/` directories (and `.claude/` with `--claude-settings`, a host's own project files;
//! with `--copilot-settings` Copilot CLI's user and project hooks folders, every name in them,
//! and its `config.json`, whose trusted folders decide which projects' files are read; plus the project directory itself
//! when extensions may read its `.env`), and the directory of every script a loaded project's
//! hooks run (hookd's project-hook trust: editing a trusted script must make its hook untrusted).
//!
//! A directory that does not exist yet (a project without `.hookd/`, a machine without
//! `/etc/gemini-cli/`) is not watched through an ancestor: inotify reports every file opened
//! in a watched directory, and the ancestors (`/etc`, the home directory, a project's root)
//! are where the rest of the system opens files all day, which would wake the daemon for
//! each. Missing directories are checked every [`MISSING_POLL`] instead; when one appears it
//! is watched and what it belongs to is rebuilt.
//!
//! Events are filtered by file name (so reads of our own, swap files and unrelated files are
//! ignored), collected for [`DEBOUNCE`] after the first one, and then turned into the smallest
//! rebuild: a shared file → re-read the shared layers and rebuild the registries whose inputs
//! changed; a project file → rebuild that project. Before every rebuild the watch set is
//! brought up to date, so a file created in a new directory is either seen by the rebuild's
//! read or by the new watch. A project that enters the cache gets its watches and one rebuild
//! for the same reason; one that leaves it loses them.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use notify::event::{AccessKind, AccessMode};
use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher as _};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use hookd_settings::loader::LayerPaths;

use crate::registries::Registries;

/// How long events are collected after the first one before rebuilding. Short: an editor's
/// save is a burst of a few events within a millisecond or two, and the goal is that the next
/// event after a save sees it (well under 100 ms).
pub(crate) const DEBOUNCE: Duration = Duration::from_millis(20);

/// How many filesystem events may wait for the watcher task.
const EVENT_CAPACITY: usize = 1024;

/// How often directories that do not exist yet are looked for.
pub(crate) const MISSING_POLL: Duration = Duration::from_secs(2);

/// How long to wait before trying again when the watcher cannot be created.
const RETRY_AFTER: Duration = Duration::from_secs(5);

/// What a changed file affects.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Scope {
    /// A file every project reads.
    Shared,
    /// One project's own files.
    Project(PathBuf),
}

/// What a watched directory is watched for: names in it (`None`: any name) and what they
/// affect.
type Interests = Vec<(Option<OsString>, Scope)>;

/// The filesystem watcher of one daemon.
pub(crate) struct Watcher {
    registries: Arc<Registries>,
    inner: RecommendedWatcher,
    events: mpsc::Receiver<notify::Result<Event>>,
    /// Set by the callback when it had to drop an event.
    overflowed: Arc<AtomicBool>,
    /// Events dropped since start, for the logs.
    dropped: Arc<AtomicU64>,
    /// Watched directories and what each is watched for.
    watched: BTreeMap<PathBuf, Interests>,
    /// Directories that would be watched if they existed, and what they belong to.
    missing: BTreeMap<PathBuf, Vec<Scope>>,
    /// The projects that had their watches set up.
    projects: HashSet<PathBuf>,
}

/// The changes collected in one debounce window.
#[derive(Debug, Default)]
struct Batch {
    everything: bool,
    shared: bool,
    projects: BTreeSet<PathBuf>,
}

impl Batch {
    fn is_empty(&self) -> bool {
        !self.everything && !self.shared && self.projects.is_empty()
    }
}

impl Watcher {
    /// Creates the watcher; nothing is watched until [`Watcher::run`].
    pub(crate) fn new(registries: Arc<Registries>) -> notify::Result<Watcher> {
        let (sender, events) = mpsc::channel(EVENT_CAPACITY);
        let overflowed = Arc::new(AtomicBool::new(false));
        let dropped = Arc::new(AtomicU64::new(0));
        let inner = notify::recommended_watcher({
            let overflowed = Arc::clone(&overflowed);
            let dropped = Arc::clone(&dropped);
            move |event: notify::Result<Event>| {
                // Opening and reading (our own reads included) change nothing.
                if let Ok(event) = &event {
                    if is_read_only(&event.kind) {
                        return;
                    }
                }
                if sender.try_send(event).is_err() {
                    overflowed.store(true, Ordering::Release);
                    dropped.fetch_add(1, Ordering::Relaxed);
                }
            }
        })?;
        Ok(Watcher {
            registries,
            inner,
            events,
            overflowed,
            dropped,
            watched: BTreeMap::new(),
            missing: BTreeMap::new(),
            projects: HashSet::new(),
        })
    }

    /// Watches and rebuilds until `cancel` fires.
    pub(crate) async fn run(mut self, cancel: CancellationToken) {
        self.sync_watches().await;
        // The shared files were read before they were watched; read them once more so a
        // write in between is not missed (nothing is swapped if nothing changed).
        self.registries.reload_shared().await;
        let mut missing_poll = tokio::time::interval(MISSING_POLL);
        missing_poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                biased;
                _ = cancel.cancelled() => return,
                _ = self.registries.projects_changed() => self.sync_watches().await,
                _ = missing_poll.tick(), if !self.missing.is_empty() => {
                    if self.missing.keys().any(|dir| dir.is_dir()) {
                        self.sync_watches().await;
                    }
                }
                event = self.events.recv() => {
                    let Some(event) = event else { return };
                    let mut batch = Batch::default();
                    self.classify(event, &mut batch);
                    let deadline = tokio::time::Instant::now() + DEBOUNCE;
                    loop {
                        tokio::select! {
                            _ = tokio::time::sleep_until(deadline) => break,
                            event = self.events.recv() => match event {
                                Some(event) => self.classify(event, &mut batch),
                                None => break,
                            },
                        }
                    }
                    if self.overflowed.swap(false, Ordering::AcqRel) {
                        tracing::warn!(
                            dropped = self.dropped.load(Ordering::Relaxed),
                            "too many file events at once; reloading everything"
                        );
                        batch.everything = true;
                    }
                    // Events about unrelated files in a watched directory cost nothing more.
                    if !batch.is_empty() {
                        self.apply(batch).await;
                    }
                }
            }
        }
    }

    /// Updates the watches, then rebuilds what was not watched before: projects new to the
    /// cache, and what a directory that has just appeared belongs to. A file written before
    /// its watch existed is seen by that rebuild's read, one written after by the watch.
    async fn sync_watches(&mut self) {
        let (added, appeared) = self.update_watches();
        let registries = &self.registries;
        if appeared.shared {
            tracing::debug!("a directory of the shared settings appeared");
            registries.reload_shared().await;
        }
        for project in added.iter().chain(&appeared.projects) {
            registries.rebuild_project(project).await;
        }
    }

    /// Rebuilds what a batch of events affects.
    async fn apply(&mut self, batch: Batch) {
        // Watches first: a file written from now on is seen by a watch, one written before by
        // the rebuild's read.
        self.sync_watches().await;
        let registries = Arc::clone(&self.registries);
        if batch.everything || batch.shared {
            tracing::debug!(everything = batch.everything, "shared settings changed");
            registries.reload_shared().await;
            // Extensions may have come or gone with their linked source directories.
            self.sync_watches().await;
        }
        if !batch.everything && !batch.shared {
            for project in &batch.projects {
                tracing::debug!(project = %project.display(), "project settings changed");
                registries.rebuild_project(project).await;
            }
            // A settings edit may name a hook script that was not watched yet.
            self.sync_watches().await;
        }
    }

    /// Adds what one event affects to the batch.
    fn classify(&self, event: notify::Result<Event>, batch: &mut Batch) {
        let event = match event {
            Ok(event) => event,
            Err(err) => {
                tracing::warn!(%err, "file watching error; reloading everything");
                batch.everything = true;
                return;
            }
        };
        if event.need_rescan() {
            batch.everything = true;
            return;
        }
        for path in &event.paths {
            let mut scopes: Vec<&Scope> = Vec::new();
            // An event about a watched directory itself (removed, moved) affects all it is
            // watched for.
            if let Some(interests) = self.watched.get(path) {
                scopes.extend(interests.iter().map(|(_, scope)| scope));
            }
            if let (Some(parent), Some(name)) = (path.parent(), path.file_name()) {
                if let Some(interests) = self.watched.get(parent) {
                    scopes.extend(
                        interests
                            .iter()
                            .filter(|(wanted, _)| wanted.as_deref().is_none_or(|w| w == name))
                            .map(|(_, scope)| scope),
                    );
                }
            }
            for scope in scopes {
                match scope {
                    Scope::Shared => batch.shared = true,
                    Scope::Project(dir) => {
                        batch.projects.insert(dir.clone());
                    }
                }
            }
        }
    }

    /// Brings the watched directories in line with the current files and projects; returns
    /// the projects that were not watched before and what the directories that were missing
    /// and are watched now belong to.
    fn update_watches(&mut self) -> (Vec<PathBuf>, Batch) {
        let registries = &self.registries;
        let paths = registries.paths().clone();
        let shared_layers = registries.shared();
        let projects = registries.project_dirs();

        let host_layers = registries.env().host_layers.clone();

        let mut targets: Vec<(PathBuf, Target, Scope)> = Vec::new();
        for file in [
            &paths.managed,
            &paths.user,
            &paths.hookd_user,
            &paths.system,
            &paths.system_defaults,
            &paths.trusted_folders,
            &paths.extension_enablement,
            &paths.trusted_hooks,
        ] {
            targets.push((file.clone(), Target::File, Scope::Shared));
        }
        for host in &host_layers {
            for file in paths.host_user_files(*host) {
                targets.push((file.to_owned(), Target::File, Scope::Shared));
            }
            // A folder of hook files (Copilot CLI's): a file added to it is a new layer.
            for folder in paths.host_user_folders(*host) {
                targets.push((folder.to_owned(), Target::Children, Scope::Shared));
            }
            if let Some(file) = paths.host_trust_file(*host) {
                targets.push((file.to_owned(), Target::File, Scope::Shared));
            }
        }
        targets.push((
            paths.extensions_dir.clone(),
            Target::Children,
            Scope::Shared,
        ));
        // Installed extensions as they are on disk now (a new one may not be loaded yet),
        // and the linked sources of the loaded ones.
        let mut extension_dirs: BTreeSet<PathBuf> = std::fs::read_dir(&paths.extensions_dir)
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .map(|entry| entry.path())
                    .filter(|path| path.is_dir())
                    .collect()
            })
            .unwrap_or_default();
        let has_extensions = shared_layers
            .as_ref()
            .is_some_and(|shared| !shared.extensions.is_empty())
            || !extension_dirs.is_empty();
        if let Some(shared) = &shared_layers {
            extension_dirs.extend(shared.extensions.iter().map(|e| e.path.clone()));
        }
        for dir in extension_dirs {
            targets.push((dir.join("hooks"), Target::Children, Scope::Shared));
            targets.push((dir, Target::Children, Scope::Shared));
        }
        for project in &projects {
            let scope = Scope::Project(project.clone());
            let mut files = vec![
                LayerPaths::project_settings(project),
                LayerPaths::hookd_project(project),
            ];
            for host in &host_layers {
                files.extend(LayerPaths::host_project(*host, project));
                for folder in LayerPaths::host_project_folders(*host, project) {
                    targets.push((folder, Target::Children, scope.clone()));
                }
            }
            for file in files {
                targets.push((file, Target::File, scope.clone()));
            }
            if has_extensions {
                targets.push((project.join(".env"), Target::File, scope));
            }
        }

        for (project, script) in registries.script_files() {
            targets.push((script, Target::File, Scope::Project(project)));
        }

        let mut desired: BTreeMap<PathBuf, Interests> = BTreeMap::new();
        let mut missing: BTreeMap<PathBuf, Vec<Scope>> = BTreeMap::new();
        for (path, target, scope) in targets {
            match resolve(&path, target) {
                Resolved::Watch(dir, name) => {
                    let interests = desired.entry(dir).or_default();
                    if !interests.contains(&(name.clone(), scope.clone())) {
                        interests.push((name, scope));
                    }
                }
                Resolved::Missing(dir) => {
                    let scopes = missing.entry(dir).or_default();
                    if !scopes.contains(&scope) {
                        scopes.push(scope);
                    }
                }
                Resolved::Nothing => {}
            }
        }
        let mut appeared = Batch::default();
        for (dir, scopes) in &self.missing {
            if !desired.contains_key(dir) {
                continue;
            }
            for scope in scopes {
                match scope {
                    Scope::Shared => appeared.shared = true,
                    Scope::Project(project) => {
                        appeared.projects.insert(project.clone());
                    }
                }
            }
        }
        self.missing = missing;

        let stale: Vec<PathBuf> = self
            .watched
            .keys()
            .filter(|dir| !desired.contains_key(*dir))
            .cloned()
            .collect();
        for dir in stale {
            // The directory may be gone already, which removed the watch with it.
            let _ = self.inner.unwatch(&dir);
            self.watched.remove(&dir);
        }
        for (dir, interests) in desired {
            if !self.watched.contains_key(&dir) {
                if let Err(err) = self.inner.watch(&dir, RecursiveMode::NonRecursive) {
                    tracing::debug!(dir = %dir.display(), %err, "cannot watch a directory");
                    continue;
                }
            }
            self.watched.insert(dir, interests);
        }

        let current: HashSet<PathBuf> = projects.into_iter().collect();
        let added: Vec<PathBuf> = current.difference(&self.projects).cloned().collect();
        self.projects = current;
        (added, appeared)
    }
}

/// Whether a target is one file or a directory whose every entry matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    File,
    Children,
}

/// Where the events about a target come from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Resolved {
    /// This directory, for this name in it (`None`: any name).
    Watch(PathBuf, Option<OsString>),
    /// This directory, once it exists (it is looked for every [`MISSING_POLL`]).
    Missing(PathBuf),
    /// Nowhere (a path without a parent).
    Nothing,
}

/// The directory to watch for `path` and the name to filter on: the file's own directory and
/// name, or a directory itself with any name; when that directory does not exist, it is
/// missing.
fn resolve(path: &Path, target: Target) -> Resolved {
    let (dir, name) = match target {
        Target::Children => (path, None),
        Target::File => match path.parent() {
            Some(dir) => (dir, path.file_name().map(OsString::from)),
            None => return Resolved::Nothing,
        },
    };
    if dir.is_dir() {
        Resolved::Watch(dir.to_owned(), name)
    } else {
        Resolved::Missing(dir.to_owned())
    }
}

/// Events that cannot change a file's contents: opening, reading, closing without writing.
fn is_read_only(kind: &EventKind) -> bool {
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => false,
        EventKind::Access(_) => true,
        _ => false,
    }
}

/// Runs the watcher for the daemon's lifetime, recreating it if it cannot be created (for
/// example when the user's inotify instances are exhausted) or if it stops by itself.
pub(crate) async fn supervise(registries: Arc<Registries>, cancel: CancellationToken) {
    let mut warned = false;
    loop {
        match Watcher::new(Arc::clone(&registries)) {
            Ok(watcher) => {
                if warned {
                    tracing::info!("watching settings files again");
                }
                warned = false;
                watcher.run(cancel.clone()).await;
                if cancel.is_cancelled() {
                    return;
                }
                tracing::warn!("the settings watcher stopped; restarting it");
                // Whatever changed while it was down is picked up by a full reload.
                registries.reload_shared().await;
            }
            Err(err) => {
                if !warned {
                    tracing::warn!(
                        %err,
                        "cannot watch settings files; edits need `hookctl reload` (or SIGHUP) \
                         until watching works"
                    );
                    warned = true;
                }
            }
        }
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tokio::time::sleep(RETRY_AFTER) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watches_existing_directories_and_looks_for_missing_ones() {
        let temp = tempfile::tempdir().unwrap_or_else(|err| panic!("temp dir: {err}"));
        let root = temp.path();
        std::fs::create_dir_all(root.join("p/.gemini")).unwrap_or_else(|err| panic!("{err}"));
        // (path, target, expected)
        let cases = [
            (
                root.join("p/.gemini/settings.json"),
                Target::File,
                Resolved::Watch(root.join("p/.gemini"), Some("settings.json".into())),
            ),
            (
                root.join("p/.gemini/absent.json"),
                Target::File,
                Resolved::Watch(root.join("p/.gemini"), Some("absent.json".into())),
            ),
            // Not through an ancestor: `p` is where the project's other files are opened.
            (
                root.join("p/.hookd/hooks.json"),
                Target::File,
                Resolved::Missing(root.join("p/.hookd")),
            ),
            (
                root.join("q/.gemini/settings.json"),
                Target::File,
                Resolved::Missing(root.join("q/.gemini")),
            ),
            (
                root.join("p/.gemini"),
                Target::Children,
                Resolved::Watch(root.join("p/.gemini"), None),
            ),
            (
                root.join("p/ext"),
                Target::Children,
                Resolved::Missing(root.join("p/ext")),
            ),
            (PathBuf::from("/"), Target::File, Resolved::Nothing),
        ];
        for (path, target, expected) in cases {
            assert_eq!(resolve(&path, target), expected, "{path:?} {target:?}");
        }
    }

    #[test]
    fn reads_are_not_changes() {
        use notify::event::{CreateKind, ModifyKind};
        let cases = [
            (EventKind::Access(AccessKind::Open(AccessMode::Any)), true),
            (EventKind::Access(AccessKind::Close(AccessMode::Read)), true),
            (
                EventKind::Access(AccessKind::Close(AccessMode::Write)),
                false,
            ),
            (EventKind::Create(CreateKind::File), false),
            (EventKind::Modify(ModifyKind::Any), false),
        ];
        for (kind, read_only) in cases {
            assert_eq!(is_read_only(&kind), read_only, "{kind:?}");
        }
    }
}
