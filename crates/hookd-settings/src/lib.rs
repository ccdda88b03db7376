//! Reading hookd's hooks and settings from disk, and replacing files atomically.
//!
//! `hookd-core` decides what settings mean and does no I/O; this crate reads them: every
//! configuration file is read as [`configfile`] reads it (bounded in size, never blocking on
//! a FIFO, regular files only); [`sysfile`] checks that a system-wide settings file is safe
//! to load; [`loader`] finds and reads every layer of a host's settings (system, user,
//! project, extensions, a host's own files) and assembles the registry input; [`verify`]
//! reads and hashes what a project hook's trust key covers, and seals the verified bytes of
//! its scripts for the runner to execute. It starts no process: `hookd-runner` does that, and
//! the client `hookctl` links this crate alone. [`atomic`] is how the daemon and `hookctl` write
//! every file people and other programs read (settings and hooks files, install manifests,
//! the one-shot engine's record).

pub mod atomic;
pub mod configfile;
pub mod loader;
pub mod sysfile;
pub mod verify;

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// The modules in their order: a module may import only from the modules before it.
    const LAYERS: [&str; 5] = ["atomic", "configfile", "sysfile", "verify", "loader"];

    /// The module names a `crate::` path starting at `rest` leads to: one name, or each name
    /// of a `crate::{a, b::c}` group.
    fn targets(rest: &str) -> Vec<String> {
        let name = |text: &str| -> String {
            text.trim_start()
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
                .collect()
        };
        match rest.strip_prefix('{') {
            Some(group) => group
                .split('}')
                .next()
                .unwrap_or("")
                .split(',')
                .map(name)
                .filter(|n| !n.is_empty())
                .collect(),
            None => vec![name(rest)],
        }
    }

    /// Every `crate::` path outside tests and comments in each module leads to an earlier
    /// module, so the modules import no circle.
    #[test]
    fn modules_import_only_from_earlier_modules() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut checked = 0;
        for (index, module) in LAYERS.iter().enumerate() {
            let path = src.join(format!("{module}.rs"));
            let text = std::fs::read_to_string(&path).expect("source");
            let code = text.split("#[cfg(test)]").next().unwrap_or("");
            // Comments removed, lines joined, so a `use` group over several lines is one text.
            let code: String = code
                .lines()
                .map(|line| line.split("//").next().unwrap_or(""))
                .collect::<Vec<_>>()
                .join(" ");
            for (at, _) in code.match_indices("crate::") {
                for name in targets(&code[at + "crate::".len()..]) {
                    let Some(target) = LAYERS.iter().position(|m| *m == name) else {
                        panic!("{}: crate::{name} is in no layer", path.display());
                    };
                    assert!(
                        target < index,
                        "{}: {module} imports crate::{name}, which is not an earlier module",
                        path.display()
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked >= 2, "only {checked} imports found");
    }

    /// Every module of the crate has its place in [`LAYERS`].
    #[test]
    fn every_module_has_a_layer() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        for entry in std::fs::read_dir(&src).expect("source dir") {
            let path = entry.expect("entry").path();
            let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
                continue;
            };
            if stem != "lib" {
                assert!(LAYERS.contains(&stem), "{stem} has no layer");
            }
        }
    }
}
