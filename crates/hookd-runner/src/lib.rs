//! The I/O side of hookd's engine.
//!
//! `hookd-core` decides what happens when a hook event fires, `hookd-settings` reads the
//! settings it decides from; this crate runs the hook processes.
//! [`process`] runs one command in its own process group with bounded output and a timeout
//! that always bounds latency (hookd's hard timeouts and output caps), started by [`spawn`]; [`worker`] keeps persistent workers that
//! answer one JSON line per event; [`prewarm`] keeps one-shot hooks' next process started
//! ahead of their event; [`fire`] runs a whole plan for one firing, in parallel or
//! sequentially with chaining, under a daemon-wide cap on concurrently running hook processes
//! (which idle workers and spares count against, and give back under pressure: `slots`),
//! running the verified bytes of project hooks' scripts (`hookd_settings::verify`).

pub mod breakers;
mod direct;
pub mod fire;
pub mod prewarm;
pub mod process;
pub mod shares;
mod slots;
pub mod spawn;
pub mod worker;

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// The modules in their order: a module may import only from the modules before it.
    const LAYERS: [&str; 9] = [
        "spawn", "process", "direct", "breakers", "shares", "slots", "worker", "prewarm", "fire",
    ];

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
        assert!(checked >= 10, "only {checked} imports found");
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
