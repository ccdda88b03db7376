//! Registries per project directory, built on first use and cached.
//!
//! The user, system, system-defaults and extension layers are shared by every project and
//! read once ([`SharedLayers`]); the project layer and the folder-trust decision differ per
//! project dir. A registry is an immutable [`Snapshot`] behind an `Arc`: a run keeps the
//! snapshot it started with. Each build gets a new generation number, reported in results.
//!
//! Building reads files, so it runs on the blocking pool; the cached path is a hash lookup
//! under a short mutex. The cache holds at most [`MAX_CACHED_PROJECTS`] projects; the
//! least recently used one is dropped first, so a client naming endless directories cannot
//! grow the daemon without bound.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use hookd_core::registry::Registry;
use hookd_core::settings::Diagnostic;
use hookd_runner::loader::{LoaderEnv, ProjectLayer, SharedLayers, assemble};

use crate::config::ServerConfig;

/// How many project registries are kept at most.
pub(crate) const MAX_CACHED_PROJECTS: usize = 256;

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
}

/// A cache entry with its last use, for eviction.
struct Cached {
    snapshot: Arc<Snapshot>,
    last_used: u64,
}

/// The registry cache.
pub(crate) struct Registries {
    env: LoaderEnv,
    /// The shared layers, read at the first build (or by [`Registries::preload`]).
    shared: Mutex<Option<Arc<SharedLayers>>>,
    by_project: Mutex<HashMap<PathBuf, Cached>>,
    generation: AtomicU64,
    clock: AtomicU64,
    gemini_home: PathBuf,
}

impl Registries {
    /// An empty cache for the daemon's environment.
    pub(crate) fn new(config: &ServerConfig) -> Registries {
        Registries {
            env: LoaderEnv::new(config.env.clone(), config.home.clone()),
            shared: Mutex::new(None),
            by_project: Mutex::new(HashMap::new()),
            generation: AtomicU64::new(0),
            clock: AtomicU64::new(0),
            gemini_home: crate::shared::gemini_home(config),
        }
    }

    /// The directory Gemini CLI's `~/.gemini` lives in.
    pub(crate) fn gemini_home(&self) -> &Path {
        &self.gemini_home
    }

    /// Reads the shared layers now, so the first event does not pay for it and problems in
    /// them are logged at start.
    pub(crate) async fn preload(&self) {
        let shared = self.shared_layers().await;
        for diagnostic in &shared.diagnostics {
            tracing::warn!(%diagnostic, "settings problem");
        }
    }

    /// The registry for `project_dir`, built if it is not cached.
    pub(crate) async fn get(&self, project_dir: &Path) -> Arc<Snapshot> {
        let now = self.clock.fetch_add(1, Ordering::Relaxed);
        if let Some(cached) = self.lock_cache().get_mut(project_dir) {
            cached.last_used = now;
            return Arc::clone(&cached.snapshot);
        }
        let shared = self.shared_layers().await;
        let generation = self.generation.fetch_add(1, Ordering::Relaxed) + 1;
        let project_dir = project_dir.to_owned();
        let gemini_home = self.gemini_home.clone();
        let built = tokio::task::spawn_blocking(move || {
            build_snapshot(&shared, project_dir, generation, &gemini_home)
        })
        .await;
        let snapshot = match built {
            Ok(snapshot) => Arc::new(snapshot),
            Err(err) => {
                // Only a panic inside the build gets here; serve an empty registry rather
                // than take the connection down, and say why.
                tracing::error!(%err, "building a registry failed");
                Arc::new(Snapshot {
                    registry: Registry::build(&hookd_core::registry::RegistryInput::default()),
                    generation,
                    project_dir: PathBuf::new(),
                    project_id: String::new(),
                    loader_diagnostics: vec![Diagnostic::error(format!(
                        "building the registry failed: {err}"
                    ))],
                })
            }
        };
        for diagnostic in snapshot.diagnostics() {
            tracing::warn!(project = %snapshot.project_dir.display(), %diagnostic, "settings problem");
        }
        let mut cache = self.lock_cache();
        // Two requests may have built the same project at once; keep the first one cached so
        // that everyone converges on one generation.
        if let Some(existing) = cache.get_mut(&snapshot.project_dir) {
            existing.last_used = now;
            return Arc::clone(&existing.snapshot);
        }
        if cache.len() >= MAX_CACHED_PROJECTS {
            let oldest = cache
                .iter()
                .min_by_key(|(_, cached)| cached.last_used)
                .map(|(dir, _)| dir.clone());
            if let Some(oldest) = oldest {
                cache.remove(&oldest);
            }
        }
        cache.insert(
            snapshot.project_dir.clone(),
            Cached {
                snapshot: Arc::clone(&snapshot),
                last_used: now,
            },
        );
        snapshot
    }

    /// Re-reads every settings layer and rebuilds every cached registry (SIGHUP, `reload`).
    ///
    /// Runs in flight keep the snapshots they started with; the next event sees the new ones.
    pub(crate) async fn reload_all(&self) {
        let env = self.env.clone();
        let fresh = match tokio::task::spawn_blocking(move || SharedLayers::load(env)).await {
            Ok(shared) => Arc::new(shared),
            Err(err) => {
                tracing::error!(%err, "re-reading the shared settings failed; keeping the old ones");
                return;
            }
        };
        *self.lock_shared() = Some(Arc::clone(&fresh));
        let dirs: Vec<PathBuf> = self.lock_cache().keys().cloned().collect();
        for dir in dirs {
            let generation = self.generation.fetch_add(1, Ordering::Relaxed) + 1;
            let shared = Arc::clone(&fresh);
            let gemini_home = self.gemini_home.clone();
            let built = tokio::task::spawn_blocking(move || {
                build_snapshot(&shared, dir, generation, &gemini_home)
            })
            .await;
            match built {
                Ok(snapshot) => {
                    for diagnostic in snapshot.diagnostics() {
                        tracing::warn!(project = %snapshot.project_dir.display(), %diagnostic, "settings problem");
                    }
                    let now = self.clock.fetch_add(1, Ordering::Relaxed);
                    self.lock_cache().insert(
                        snapshot.project_dir.clone(),
                        Cached {
                            snapshot: Arc::new(snapshot),
                            last_used: now,
                        },
                    );
                }
                Err(err) => {
                    tracing::error!(%err, "rebuilding a registry failed; keeping the old one")
                }
            }
        }
    }

    /// A one-line summary for a service manager's status.
    pub(crate) fn summary(&self) -> String {
        let cache = self.lock_cache();
        let hooks: usize = cache
            .values()
            .map(|cached| cached.snapshot.registry.entries().len())
            .sum();
        format!(
            "{} project registr{} loaded, {hooks} hooks",
            cache.len(),
            if cache.len() == 1 { "y" } else { "ies" }
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

    /// The shared layers, read on first use.
    async fn shared_layers(&self) -> Arc<SharedLayers> {
        if let Some(shared) = self.lock_shared().as_ref() {
            return Arc::clone(shared);
        }
        let env = self.env.clone();
        let loaded = tokio::task::spawn_blocking(move || SharedLayers::load(env))
            .await
            .map(Arc::new)
            .unwrap_or_else(|err| {
                tracing::error!(%err, "reading the shared settings failed");
                Arc::new(SharedLayers::load(LoaderEnv::default()))
            });
        let mut slot = self.lock_shared();
        Arc::clone(slot.get_or_insert(loaded))
    }

    fn lock_cache(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Cached>> {
        self.by_project
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn lock_shared(&self) -> std::sync::MutexGuard<'_, Option<Arc<SharedLayers>>> {
        self.shared.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Reads the project's files and builds its registry (blocking).
fn build_snapshot(
    shared: &SharedLayers,
    project_dir: PathBuf,
    generation: u64,
    gemini_home: &Path,
) -> Snapshot {
    let project = ProjectLayer::load(shared, &project_dir);
    let workspace = assemble(shared, &project);
    let registry = Registry::build(&workspace.input);
    let project_id = project_id(gemini_home, &project_dir);
    Snapshot {
        registry,
        generation,
        project_dir,
        project_id,
        loader_diagnostics: workspace.diagnostics,
    }
}

/// Gemini CLI's short id for a project: its entry in `~/.gemini/projects.json`, else the
/// slug Gemini CLI would give it first.
fn project_id(gemini_home: &Path, project_dir: &Path) -> String {
    let project = project_dir.display().to_string();
    let registered = std::fs::read_to_string(gemini_home.join(".gemini/projects.json"))
        .ok()
        .and_then(|text| hookd_core::env::project_id_from_registry(&text, &project));
    registered.unwrap_or_else(|| hookd_core::env::project_slug(&project))
}
