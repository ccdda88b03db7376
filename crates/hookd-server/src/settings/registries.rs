//! Registries per project directory: built on first use, cached, and rebuilt when their files
//! change.
//!
//! The user, system, system-defaults and extension layers are shared by every project and
//! read once ([`SharedLayers`]); the project layer and the folder-trust decision differ per
//! project dir. A registry is an immutable [`Snapshot`] behind an `Arc`, swapped as a whole:
//! an event sees the old or the new one, never a mix, and a run keeps the snapshot it started
//! with. Each swap gets a new generation number, reported in results and `status`.
//!
//! Rebuilding is targeted ([`Registries::reload_shared`] when a shared file changed,
//! [`Registries::rebuild_project`] when one project's did) and skips the swap when the files
//! read are exactly the same as before, so a spurious file event never bumps a generation.
//! Every swap is announced on a broadcast channel ([`Registries::subscribe`]) that never
//! blocks the daemon: a subscriber that falls behind loses the oldest announcements.
//!
//! Building reads files and compiles matchers and filters, so it runs on the blocking pool;
//! the cached path is a hash lookup under a short mutex. Each project has its own build lock,
//! so a project whose files are slow to build (however hostile) delays only its own first
//! event, never another project's. Reading the shared layers takes a lock of its own. Every
//! replacement of the shared layers bumps an epoch under the cache mutex, and a build is only
//! cached when the epoch it started from is still current (else it is built again), so a build
//! started from old shared layers can never be cached after a reload that replaced them. The cache
//! holds at most [`MAX_CACHED_PROJECTS`] projects; the least recently used one is dropped
//! first, so a client naming endless directories cannot grow the daemon without bound.
//!
//! The compiled `redact` filters of the cached registries share one memory budget
//! (`ServerConfig::compiled_budget_bytes`, counted by `Registry::compiled_bytes`): a build or
//! rebuild that takes the total past it drops the least recently used other projects until it
//! fits ([`over_budget`]). Dropping never changes a decision: an evicted project is read and
//! compiled again at its next event, from its files as they are then (what a cached registry
//! would have been rebuilt to when they changed), and the last good version of its files is
//! kept for it ([`EVICTED_REMEMBERED`] of them), so a file broken since is still replaced by
//! the version it had. Runs and streams in flight keep the snapshot they hold. Dropped
//! registries are freed off the daemon's threads and their memory given back to the system
//! ([`crate::memory`]).
//!
//! The project-hook trust store is a shared file like the settings layers, and the digests of
//! each project's hook scripts are part of what its registry is built from, so trusting,
//! untrusting or editing a script rebuilds exactly the registries whose hooks' trust changed.
//!
//! Each file keeps its last good version ([`crate::lastgood`]); settings problems are logged
//! once when they appear and once when they are resolved, not on every rebuild.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use hookd_core::registry::{Registry, RegistryInput};
use hookd_core::settings::{Diagnostic, Severity};
use hookd_core::trust::ProjectHookPolicy;
use hookd_settings::loader::{LayerPaths, LoaderEnv, ProjectLayer, SharedLayers, assemble};
use tokio::sync::{Notify, broadcast};

use crate::config::ServerConfig;
use crate::lastgood::LastGood;

/// How many project registries are kept at most.
pub(crate) const MAX_CACHED_PROJECTS: usize = 256;

/// How many projects dropped to keep within the compiled-filter budget keep the last good
/// version of their files (the oldest is forgotten first, as for a project dropped by count).
pub(crate) const EVICTED_REMEMBERED: usize = MAX_CACHED_PROJECTS;

/// How many change announcements a subscriber may fall behind before it loses the oldest.
const CHANGE_CAPACITY: usize = 64;

/// One built registry and what was learned while building it.
#[derive(Debug)]
pub(crate) struct Snapshot {
    /// The registry.
    pub(crate) registry: Registry,
    /// This build's generation number (unique and increasing across the daemon).
    pub(crate) generation: u64,
    /// The project directory it was built for.
    pub(crate) project_dir: PathBuf,
    /// Gemini CLI's short id of the project, for the default plans directory.
    pub(crate) project_id: String,
    /// What the registry was built from, to tell whether a rebuild changes anything.
    input: RegistryInput,
    /// Problems found reading the files (the registry has the parsing ones).
    loader_diagnostics: Vec<Diagnostic>,
}

impl Snapshot {
    /// Every diagnostic: reading problems first, then parsing and validation ones.
    pub(crate) fn diagnostics(&self) -> impl Iterator<Item = &Diagnostic> {
        self.loader_diagnostics
            .iter()
            .chain(self.registry.diagnostics())
    }

    /// Whether the project's folder is trusted (folder trust, spec §1.3).
    pub(crate) fn folder_trusted(&self) -> bool {
        self.input.folder_trusted
    }

    /// The script files its project hooks run (hookd's project-hook trust), for the watcher: editing one
    /// changes the hooks' trust keys.
    pub(crate) fn script_files(&self) -> impl Iterator<Item = &Path> {
        self.input
            .hook_trust
            .scripts
            .iter()
            .map(|script| script.path.as_path())
    }

    /// The settings files it was built from, as `(layer label, path, text)`.
    pub(crate) fn layer_texts(&self) -> impl Iterator<Item = (&str, &Path, &str)> {
        self.input.layers.iter().map(|layer| {
            (
                layer.source.label(),
                layer.path.as_path(),
                layer.text.as_str(),
            )
        })
    }
}

/// A registry that was swapped in, as announced to subscribers.
#[derive(Debug)]
pub(crate) struct Change {
    /// The new snapshot.
    pub(crate) snapshot: Arc<Snapshot>,
    /// Labels of the layers whose files changed.
    pub(crate) layers: Vec<String>,
    /// The files whose contents changed, appeared or disappeared.
    pub(crate) files: Vec<PathBuf>,
}

/// A built registry that has no generation yet.
struct Built {
    registry: Registry,
    project_dir: PathBuf,
    project_id: String,
    input: RegistryInput,
    loader_diagnostics: Vec<Diagnostic>,
}

impl Built {
    fn into_snapshot(self, generation: u64) -> Snapshot {
        Snapshot {
            registry: self.registry,
            generation,
            project_dir: self.project_dir,
            project_id: self.project_id,
            input: self.input,
            loader_diagnostics: self.loader_diagnostics,
        }
    }

    /// Whether swapping this in for `old` would change nothing.
    fn same_as(&self, old: &Snapshot) -> bool {
        self.input == old.input
            && self.loader_diagnostics == old.loader_diagnostics
            && self.project_id == old.project_id
    }
}

/// A cache entry with its last use and its compiled filters' memory, for eviction.
struct Cached {
    snapshot: Arc<Snapshot>,
    last_used: u64,
    /// `snapshot.registry.compiled_bytes()`, kept so that the total is a cheap sum.
    compiled_bytes: usize,
}

impl Cached {
    fn new(snapshot: Arc<Snapshot>, last_used: u64) -> Cached {
        let compiled_bytes = snapshot.registry.compiled_bytes();
        Cached {
            snapshot,
            last_used,
            compiled_bytes,
        }
    }
}

/// The projects to drop so that the compiled memory of those left is at most `budget`: the
/// least recently used first, never `keep` (the project being built, which is kept even when
/// it alone is over the budget). `entries` are each project's `(dir, last use, bytes)`.
fn over_budget<'a>(
    entries: impl Iterator<Item = (&'a Path, u64, usize)>,
    budget: usize,
    keep: &Path,
) -> Vec<PathBuf> {
    let mut entries: Vec<(&Path, u64, usize)> = entries.collect();
    let mut total: usize = entries.iter().map(|(_, _, bytes)| bytes).sum();
    if total <= budget {
        return Vec::new();
    }
    entries.sort_unstable_by_key(|(_, last_used, _)| *last_used);
    let mut dropped = Vec::new();
    for (dir, _, bytes) in entries {
        if total <= budget {
            break;
        }
        if dir == keep || bytes == 0 {
            continue;
        }
        total -= bytes;
        dropped.push(dir.to_path_buf());
    }
    dropped
}

/// The registry cache.
pub(crate) struct Registries {
    env: LoaderEnv,
    paths: LayerPaths,
    /// The shared layers, read at the first build (or by [`Registries::preload`]).
    shared: Mutex<Option<Arc<SharedLayers>>>,
    by_project: Mutex<HashMap<PathBuf, Cached>>,
    /// One lock per project being built or rebuilt; never taken by a cache hit.
    project_locks: Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>>,
    /// Held while the shared layers are read or replaced (start, reload).
    shared_lock: tokio::sync::Mutex<()>,
    /// Bumped, under the cache mutex, whenever the shared layers are replaced.
    shared_epoch: AtomicU64,
    last_good: Arc<Mutex<LastGood>>,
    /// The problems logged and still present, by text, with their severity.
    logged: Mutex<BTreeMap<String, Severity>>,
    changes: broadcast::Sender<Arc<Change>>,
    /// Signalled when a project enters or leaves the cache, for the watcher.
    projects_changed: Notify,
    generation: AtomicU64,
    clock: AtomicU64,
    /// The budget of compiled filters, from the config.
    compiled_budget: usize,
    /// Projects dropped to keep within the budget, oldest first, whose last good files are
    /// still kept (at most [`EVICTED_REMEMBERED`]).
    budget_evicted: Mutex<VecDeque<PathBuf>>,
    /// How many registries were dropped to keep within the budget.
    budget_evictions: AtomicU64,
    gemini_home: PathBuf,
    /// The daemon's project-hook trust policy, which de-duplication depends on.
    project_hooks: ProjectHookPolicy,
    /// Serializes edits of settings files (enable, disable, trust): each edit reads a file,
    /// changes it and reloads it whole.
    edit_lock: tokio::sync::Mutex<()>,
}

impl Registries {
    /// An empty cache for the daemon's environment.
    pub(crate) fn new(config: &ServerConfig) -> Registries {
        let env = LoaderEnv::new(config.env.clone(), config.home.clone())
            .with_host_layers(config.host_layers.clone())
            .with_system_owner(config.system_owner)
            .with_system_trusted_above(config.system_trusted_above.clone());
        Registries {
            paths: LayerPaths::resolve(&env),
            env,
            shared: Mutex::new(None),
            by_project: Mutex::new(HashMap::new()),
            project_locks: Mutex::new(HashMap::new()),
            shared_lock: tokio::sync::Mutex::new(()),
            shared_epoch: AtomicU64::new(0),
            last_good: Arc::new(Mutex::new(LastGood::default())),
            logged: Mutex::new(BTreeMap::new()),
            changes: broadcast::channel(CHANGE_CAPACITY).0,
            projects_changed: Notify::new(),
            generation: AtomicU64::new(0),
            clock: AtomicU64::new(0),
            compiled_budget: config.compiled_budget_bytes,
            budget_evicted: Mutex::new(VecDeque::new()),
            budget_evictions: AtomicU64::new(0),
            gemini_home: config.gemini_home(),
            edit_lock: tokio::sync::Mutex::new(()),
            project_hooks: config.project_hooks,
        }
    }

    /// The daemon's project-hook trust policy.
    pub(crate) fn project_hooks(&self) -> ProjectHookPolicy {
        self.project_hooks
    }

    /// The lock every edit of a settings file holds from its read to its reload.
    pub(crate) fn edit_lock(&self) -> &tokio::sync::Mutex<()> {
        &self.edit_lock
    }

    /// Where the shared configuration files are.
    pub(crate) fn paths(&self) -> &LayerPaths {
        &self.paths
    }

    /// The environment settings are resolved and expanded with.
    pub(crate) fn env(&self) -> &LoaderEnv {
        &self.env
    }

    /// Reads the shared layers now, so the first event does not pay for it and problems in
    /// them are logged at start.
    pub(crate) async fn preload(&self) {
        self.shared_layers().await;
        self.log_diagnostics();
    }

    /// The registry for `project_dir`, built if it is not cached.
    pub(crate) async fn get(&self, project_dir: &Path) -> Arc<Snapshot> {
        if let Some(snapshot) = self.cached(project_dir) {
            return snapshot;
        }
        let project_lock = self.project_lock(project_dir);
        let guard = project_lock.lock().await;
        // Another request may have built it while this one waited for the lock.
        if let Some(snapshot) = self.cached(project_dir) {
            drop(guard);
            self.release_project_lock(project_dir, project_lock);
            return snapshot;
        }
        let (snapshot, evicted, dropped) = loop {
            let (shared, epoch) = self.shared_layers().await;
            let built = self.build(&shared, project_dir).await;
            let mut cache = self.lock_cache();
            if self.shared_epoch.load(Ordering::Acquire) != epoch {
                // A reload replaced the shared layers while this was built: build again.
                continue;
            }
            let snapshot = Arc::new(built.into_snapshot(self.next_generation()));
            let evicted = if cache.len() >= MAX_CACHED_PROJECTS {
                let oldest = cache
                    .iter()
                    .min_by_key(|(_, cached)| cached.last_used)
                    .map(|(dir, _)| dir.clone());
                oldest.inspect(|dir| {
                    cache.remove(dir);
                })
            } else {
                None
            };
            cache.insert(
                snapshot.project_dir.clone(),
                Cached::new(
                    Arc::clone(&snapshot),
                    self.clock.fetch_add(1, Ordering::Relaxed),
                ),
            );
            let (dropped, freed) = self.keep_within_budget(&mut cache, &snapshot.project_dir);
            break (snapshot, evicted, (dropped, freed));
        };
        if let Some(evicted) = evicted {
            lock(&self.last_good).forget_project(&evicted);
        }
        let (dropped, freed) = dropped;
        self.remember_budget_evicted(dropped);
        crate::memory::release(freed);
        drop(guard);
        self.release_project_lock(project_dir, project_lock);
        self.projects_changed.notify_one();
        self.log_diagnostics();
        snapshot
    }

    /// Takes the least recently used registries other than `keep`'s out of the cache while the
    /// cached compiled filters are over the budget; returns the projects and their registries
    /// (to be freed off the daemon's threads, [`crate::memory::release`]). The caller holds the
    /// cache.
    fn keep_within_budget(
        &self,
        cache: &mut HashMap<PathBuf, Cached>,
        keep: &Path,
    ) -> (Vec<PathBuf>, Vec<Arc<Snapshot>>) {
        let entries = cache
            .iter()
            .map(|(dir, cached)| (dir.as_path(), cached.last_used, cached.compiled_bytes));
        let dropped = over_budget(entries, self.compiled_budget, keep);
        let mut snapshots = Vec::with_capacity(dropped.len());
        for dir in &dropped {
            if let Some(cached) = cache.remove(dir) {
                snapshots.push(cached.snapshot);
            }
            tracing::debug!(
                project = %dir.display(),
                budget = self.compiled_budget,
                "registry dropped to keep compiled filters within their budget"
            );
        }
        self.budget_evictions
            .fetch_add(dropped.len() as u64, Ordering::Relaxed);
        (dropped, snapshots)
    }

    /// Keeps the last good files of projects dropped for the budget, forgetting those of the
    /// oldest beyond [`EVICTED_REMEMBERED`] that are not cached again.
    fn remember_budget_evicted(&self, dropped: Vec<PathBuf>) {
        if dropped.is_empty() {
            return;
        }
        let mut evicted = lock(&self.budget_evicted);
        for dir in dropped {
            evicted.retain(|seen| *seen != dir);
            evicted.push_back(dir);
        }
        let mut forget = Vec::new();
        while evicted.len() > EVICTED_REMEMBERED {
            if let Some(dir) = evicted.pop_front() {
                forget.push(dir);
            }
        }
        drop(evicted);
        let cache = self.lock_cache();
        let forget: Vec<PathBuf> = forget
            .into_iter()
            .filter(|dir| !cache.contains_key(dir))
            .collect();
        drop(cache);
        let mut last_good = lock(&self.last_good);
        for dir in &forget {
            last_good.forget_project(dir);
        }
    }

    /// How many registries were dropped to keep within the compiled-filter budget.
    fn budget_evictions(&self) -> u64 {
        self.budget_evictions.load(Ordering::Relaxed)
    }

    /// The build lock of one project, created on first use.
    fn project_lock(&self, project_dir: &Path) -> Arc<tokio::sync::Mutex<()>> {
        Arc::clone(
            lock(&self.project_locks)
                .entry(project_dir.to_owned())
                .or_default(),
        )
    }

    /// Forgets a project's build lock when nobody else holds or waits for it, so the map
    /// holds only projects being built.
    fn release_project_lock(&self, project_dir: &Path, project_lock: Arc<tokio::sync::Mutex<()>>) {
        let mut locks = lock(&self.project_locks);
        // The map's reference and this one: nobody else has it.
        if Arc::strong_count(&project_lock) == 2 {
            locks.remove(project_dir);
        }
    }

    /// The cached registry of `project_dir`, marked as used; `None` when it is not cached.
    /// Never waits and allocates nothing, for the connection's fast path.
    pub(crate) fn cached(&self, project_dir: &Path) -> Option<Arc<Snapshot>> {
        let now = self.clock.fetch_add(1, Ordering::Relaxed);
        let mut cache = self.lock_cache();
        let cached = cache.get_mut(project_dir)?;
        cached.last_used = now;
        Some(Arc::clone(&cached.snapshot))
    }

    /// Re-reads every settings layer and rebuilds every cached registry (SIGHUP, `reload`):
    /// each gets a new generation and is announced, changed or not.
    ///
    /// Runs in flight keep the snapshots they started with; the next event sees the new ones.
    pub(crate) async fn reload_all(&self) {
        self.reload(true).await;
    }

    /// Re-reads the shared layers (a user, system, system-defaults or extension file
    /// changed) and rebuilds the cached registries whose inputs changed.
    pub(crate) async fn reload_shared(&self) {
        self.reload(false).await;
    }

    async fn reload(&self, force: bool) {
        let guard = self.shared_lock.lock().await;
        let fresh = self.load_shared().await;
        self.replace_shared(&fresh);
        drop(guard);
        for dir in self.project_dirs() {
            self.rebuild_one(&dir, force).await;
        }
        self.log_diagnostics();
    }

    /// Rebuilds the registry of one cached project (its own files changed); does nothing for
    /// a project that is not cached.
    pub(crate) async fn rebuild_project(&self, project_dir: &Path) {
        self.rebuild_one(project_dir, false).await;
        self.log_diagnostics();
    }

    /// Rebuilds one project under its own build lock, from the current shared layers.
    async fn rebuild_one(&self, project_dir: &Path, force: bool) {
        let project_lock = self.project_lock(project_dir);
        let guard = project_lock.lock().await;
        let (shared, _) = self.shared_layers().await;
        self.rebuild_locked(&shared, project_dir, force).await;
        drop(guard);
        self.release_project_lock(project_dir, project_lock);
    }

    /// Rebuilds and swaps in one project's registry. The caller holds its build lock.
    async fn rebuild_locked(&self, shared: &Arc<SharedLayers>, project_dir: &Path, force: bool) {
        let Some(old) = self
            .lock_cache()
            .get(project_dir)
            .map(|cached| Arc::clone(&cached.snapshot))
        else {
            return;
        };
        let built = self.build(shared, project_dir).await;
        if !force && built.same_as(&old) {
            return;
        }
        let snapshot = Arc::new(built.into_snapshot(self.next_generation()));
        let (layers, files) = changed_files(&old.input, &snapshot.input);
        let (dropped, freed) = {
            let mut cache = self.lock_cache();
            match cache.get_mut(project_dir) {
                Some(cached) => {
                    cached.compiled_bytes = snapshot.registry.compiled_bytes();
                    cached.snapshot = Arc::clone(&snapshot);
                    self.keep_within_budget(&mut cache, project_dir)
                }
                None => (Vec::new(), Vec::new()),
            }
        };
        if !dropped.is_empty() {
            self.remember_budget_evicted(dropped);
            crate::memory::release(freed);
            self.projects_changed.notify_one();
        }
        tracing::debug!(
            project = %project_dir.display(),
            generation = snapshot.generation,
            ?layers,
            "registry swapped"
        );
        // Nobody subscribed is not an error.
        let _ = self.changes.send(Arc::new(Change {
            snapshot,
            layers,
            files,
        }));
    }

    /// Announcements of every registry swap from now on.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Arc<Change>> {
        self.changes.subscribe()
    }

    /// Resolves when a project entered or left the cache since the last call.
    pub(crate) async fn projects_changed(&self) {
        self.projects_changed.notified().await;
    }

    /// The cached project directories.
    pub(crate) fn project_dirs(&self) -> Vec<PathBuf> {
        self.lock_cache().keys().cloned().collect()
    }

    /// The script files each cached project's hooks run, as `(project dir, file)`.
    pub(crate) fn script_files(&self) -> Vec<(PathBuf, PathBuf)> {
        self.lock_cache()
            .iter()
            .flat_map(|(dir, cached)| {
                cached
                    .snapshot
                    .script_files()
                    .map(|file| (dir.clone(), file.to_owned()))
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// The current shared layers, if they were read.
    pub(crate) fn shared(&self) -> Option<Arc<SharedLayers>> {
        self.lock_shared().clone()
    }

    /// A one-line summary for a service manager's status.
    pub(crate) fn summary(&self) -> String {
        let cache = self.lock_cache();
        let projects = cache.len();
        let hooks: usize = cache
            .values()
            .map(|cached| cached.snapshot.registry.entries().len())
            .sum();
        let compiled: usize = cache.values().map(|cached| cached.compiled_bytes).sum();
        drop(cache);
        let evictions = self.budget_evictions();
        format!(
            "{projects} project registr{} loaded, {hooks} hooks, compiled filters {:.1} of \
             {:.0} MiB ({evictions} dropped for it)",
            if projects == 1 { "y" } else { "ies" },
            compiled as f64 / (1024.0 * 1024.0),
            self.compiled_budget as f64 / (1024.0 * 1024.0),
        )
    }

    /// Every cached snapshot, for `status`, ordered by project dir.
    pub(crate) async fn snapshots(&self) -> Vec<Arc<Snapshot>> {
        let mut snapshots: Vec<Arc<Snapshot>> = self
            .lock_cache()
            .values()
            .map(|cached| Arc::clone(&cached.snapshot))
            .collect();
        snapshots.sort_by(|a, b| a.project_dir.cmp(&b.project_dir));
        snapshots
    }

    fn next_generation(&self) -> u64 {
        self.generation.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// The shared layers, read on first use, with the epoch they belong to.
    async fn shared_layers(&self) -> (Arc<SharedLayers>, u64) {
        if let Some(current) = self.current_shared() {
            return current;
        }
        let _guard = self.shared_lock.lock().await;
        // Another task may have read them while this one waited.
        if let Some(current) = self.current_shared() {
            return current;
        }
        let loaded = self.load_shared().await;
        self.replace_shared(&loaded);
        let epoch = self.shared_epoch.load(Ordering::Acquire);
        (loaded, epoch)
    }

    /// The shared layers if they were read, with their epoch.
    fn current_shared(&self) -> Option<(Arc<SharedLayers>, u64)> {
        // The epoch is read under the cache mutex, where it is bumped, so it belongs to the
        // layers read with it.
        let _cache = self.lock_cache();
        let shared = self.lock_shared().clone()?;
        Some((shared, self.shared_epoch.load(Ordering::Acquire)))
    }

    /// Installs new shared layers and bumps the epoch, so builds from the old ones are redone.
    fn replace_shared(&self, fresh: &Arc<SharedLayers>) {
        let _cache = self.lock_cache();
        *self.lock_shared() = Some(Arc::clone(fresh));
        self.shared_epoch.fetch_add(1, Ordering::AcqRel);
    }

    /// Reads the shared layers from disk, keeping the last good version of bad files.
    async fn load_shared(&self) -> Arc<SharedLayers> {
        let env = self.env.clone();
        let last_good = Arc::clone(&self.last_good);
        let loaded = tokio::task::spawn_blocking(move || {
            let mut shared = SharedLayers::load(env);
            lock(&last_good).apply_shared(&mut shared);
            shared
        })
        .await;
        match loaded {
            Ok(shared) => Arc::new(shared),
            Err(err) => {
                // Only a panic inside the loader gets here: keep what was there, if anything.
                tracing::error!(%err, "reading the shared settings failed");
                self.shared()
                    .unwrap_or_else(|| Arc::new(SharedLayers::load(LoaderEnv::default())))
            }
        }
    }

    /// Reads one project's files and builds its registry on the blocking pool.
    async fn build(&self, shared: &Arc<SharedLayers>, project_dir: &Path) -> Built {
        let shared = Arc::clone(shared);
        let project_dir = project_dir.to_owned();
        let gemini_home = self.gemini_home.clone();
        let last_good = Arc::clone(&self.last_good);
        let fallback_dir = project_dir.clone();
        let policy = self.project_hooks;
        let built = tokio::task::spawn_blocking(move || {
            build_project(&shared, project_dir, &gemini_home, &last_good, policy)
        })
        .await;
        built.unwrap_or_else(|err| {
            // Only a panic inside the build gets here; serve an empty registry rather than
            // take the connection down, and say why.
            tracing::error!(%err, "building a registry failed");
            Built {
                registry: Registry::build(&RegistryInput::default()),
                project_dir: fallback_dir,
                project_id: String::new(),
                input: RegistryInput::default(),
                loader_diagnostics: vec![Diagnostic::error(format!(
                    "building the registry failed: {err}"
                ))],
            }
        })
    }

    /// Logs each settings problem once when it appears, and once when it is gone.
    fn log_diagnostics(&self) {
        let mut current: BTreeMap<String, Severity> = BTreeMap::new();
        if let Some(shared) = self.shared() {
            for diagnostic in &shared.diagnostics {
                current.insert(diagnostic.to_string(), diagnostic.severity);
            }
        }
        for snapshot in self.lock_cache().values() {
            for diagnostic in snapshot.snapshot.diagnostics() {
                current.insert(diagnostic.to_string(), diagnostic.severity);
            }
        }
        let mut logged = lock(&self.logged);
        for (text, severity) in &current {
            if logged.contains_key(text) {
                continue;
            }
            match severity {
                Severity::Error | Severity::Warning => {
                    tracing::warn!(severity = severity.label(), "settings problem: {text}")
                }
                Severity::Info => tracing::info!("settings note: {text}"),
            }
        }
        for (text, severity) in logged.iter() {
            if !current.contains_key(text) && *severity != Severity::Info {
                tracing::info!("settings problem resolved: {text}");
            }
        }
        *logged = current;
    }

    fn lock_cache(&self) -> MutexGuard<'_, HashMap<PathBuf, Cached>> {
        lock(&self.by_project)
    }

    fn lock_shared(&self) -> MutexGuard<'_, Option<Arc<SharedLayers>>> {
        lock(&self.shared)
    }
}

/// Locks a mutex whose data stays consistent even if a holder panicked (every update is a
/// single assignment or map operation).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Reads the project's files and builds its registry (blocking).
fn build_project(
    shared: &SharedLayers,
    project_dir: PathBuf,
    gemini_home: &Path,
    last_good: &Mutex<LastGood>,
    project_hooks: ProjectHookPolicy,
) -> Built {
    let mut project = ProjectLayer::load(shared, &project_dir);
    lock(last_good).apply_project(&mut project);
    let mut workspace = assemble(shared, &project);
    workspace.input.project_hooks = project_hooks;
    let registry = Registry::build(&workspace.input);
    let project_id = project_id(gemini_home, &project_dir);
    Built {
        registry,
        project_dir,
        project_id,
        input: workspace.input,
        loader_diagnostics: workspace.diagnostics,
    }
}

/// The layers and files that differ between two registry inputs.
fn changed_files(old: &RegistryInput, new: &RegistryInput) -> (Vec<String>, Vec<PathBuf>) {
    let mut layers: BTreeSet<&'static str> = BTreeSet::new();
    let mut files: BTreeSet<PathBuf> = BTreeSet::new();
    let texts = |input: &RegistryInput| -> BTreeMap<PathBuf, (&'static str, String)> {
        input
            .layers
            .iter()
            .map(|layer| {
                (
                    layer.path.clone(),
                    (layer.source.label(), layer.text.clone()),
                )
            })
            .chain(input.extensions.iter().map(|extension| {
                let text = format!(
                    "{:?}{:?}{:?}{:?}",
                    extension.hooks_text,
                    extension.active,
                    extension.setting_values,
                    extension.workspace_setting_values
                );
                (extension.hooks_file.clone(), ("extension", text))
            }))
            .collect()
    };
    let (old_texts, new_texts) = (texts(old), texts(new));
    for (path, (label, text)) in &old_texts {
        if new_texts.get(path).map(|(_, new)| new) != Some(text) {
            layers.insert(label);
            files.insert(path.clone());
        }
    }
    for (path, (label, _)) in &new_texts {
        if !old_texts.contains_key(path) {
            layers.insert(label);
            files.insert(path.clone());
        }
    }
    (
        layers.into_iter().map(str::to_owned).collect(),
        files.into_iter().collect(),
    )
}

/// Gemini CLI's short id for a project: its entry in `~/.gemini/projects.json`, else the
/// slug Gemini CLI would give it first.
fn project_id(gemini_home: &Path, project_dir: &Path) -> String {
    let project = project_dir.display().to_string();
    // Read like every configuration file: never blocking, bounded in size.
    let registered =
        hookd_settings::configfile::read_config_file(&gemini_home.join(".gemini/projects.json"))
            .ok()
            .flatten()
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .and_then(|text| hookd_core::env::project_id_from_registry(&text, &project));
    registered.unwrap_or_else(|| hookd_core::env::project_slug(&project))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hookd_core::Source;
    use hookd_core::registry::LayerText;

    fn input(layers: &[(Source, &str, &str)]) -> RegistryInput {
        RegistryInput {
            layers: layers
                .iter()
                .map(|(source, path, text)| LayerText {
                    source: *source,
                    file: hookd_core::LayerFile::Gemini,
                    path: PathBuf::from(path),
                    text: (*text).to_owned(),
                })
                .collect(),
            ..RegistryInput::default()
        }
    }

    fn check(old: RegistryInput, new: RegistryInput, layers: &[&str], files: &[&str]) {
        let (got_layers, got_files) = changed_files(&old, &new);
        assert_eq!(got_layers, layers);
        let files: Vec<PathBuf> = files.iter().map(PathBuf::from).collect();
        assert_eq!(got_files, files);
    }

    #[test]
    fn over_budget_drops_the_least_recently_used_others_until_it_fits() {
        /// Each project's `(dir, last use, bytes)`.
        type Entries<'a> = &'a [(&'a str, u64, usize)];
        // (entries, budget, keep, expected drops in order)
        let cases: &[(Entries, usize, &str, &[&str])] = &[
            // Within the budget: nothing.
            (&[("/a", 1, 10), ("/b", 2, 10)], 20, "/b", &[]),
            // Over: the oldest goes first, and only as many as needed.
            (
                &[("/a", 1, 10), ("/b", 2, 10), ("/c", 3, 10)],
                20,
                "/c",
                &["/a"],
            ),
            (
                &[("/a", 3, 10), ("/b", 1, 10), ("/c", 2, 10)],
                10,
                "/a",
                &["/b", "/c"],
            ),
            // The kept project stays even when it is the oldest, or alone over the budget.
            (&[("/a", 1, 10), ("/b", 2, 10)], 10, "/a", &["/b"]),
            (&[("/a", 1, 50), ("/b", 2, 10)], 10, "/a", &["/b"]),
            (&[("/a", 1, 50)], 10, "/a", &[]),
            // A project without filters frees nothing and is not dropped for the budget.
            (
                &[("/a", 1, 0), ("/b", 2, 10), ("/c", 3, 10)],
                10,
                "/c",
                &["/b"],
            ),
            // A budget of zero keeps only the project being built.
            (
                &[("/a", 1, 1), ("/b", 2, 1), ("/c", 3, 1)],
                0,
                "/b",
                &["/a", "/c"],
            ),
        ];
        for (entries, budget, keep, expected) in cases {
            let dropped = over_budget(
                entries
                    .iter()
                    .map(|(dir, used, bytes)| (Path::new(*dir), *used, *bytes)),
                *budget,
                Path::new(keep),
            );
            let expected: Vec<PathBuf> = expected.iter().map(PathBuf::from).collect();
            assert_eq!(dropped, expected, "{entries:?} budget {budget} keep {keep}");
        }
    }

    #[test]
    fn changed_files_names_what_differs() {
        use Source::*;
        check(
            input(&[(User, "/u", "{}"), (Project, "/p", "{}")]),
            input(&[(User, "/u", "{}"), (Project, "/p", "{\"a\":1}")]),
            &["project"],
            &["/p"],
        );
        check(
            input(&[(User, "/u", "{}")]),
            input(&[(User, "/u", "{}"), (Project, "/p", "{}")]),
            &["project"],
            &["/p"],
        );
        check(
            input(&[(User, "/u", "{}"), (System, "/s", "{}")]),
            input(&[(User, "/u", "{ }")]),
            &["system", "user"],
            &["/s", "/u"],
        );
        check(
            input(&[(User, "/u", "{}")]),
            input(&[(User, "/u", "{}")]),
            &[],
            &[],
        );
    }
}
