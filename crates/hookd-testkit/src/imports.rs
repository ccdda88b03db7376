//! The import-order guard of crates whose modules are flat files (`src/NAME.rs`): each module
//! may import (`crate::NAME`) only from the modules listed before it, so no import circle can
//! form, and every module must be listed. A crate's unit test calls [`check_module_order`] with
//! its list; a backwards import fails naming the file.

use std::path::Path;

/// The module names a `crate::` path starting at `rest` leads to: one name, or each name of a
/// `crate::{a, b::c}` group.
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

/// Panics unless every `crate::` path outside tests and comments in each module of
/// `manifest_dir/src` leads to a module listed before it in `order`, every module file is in
/// `order`, and at least `min_imports` imports were checked (so a guard that reads nothing
/// fails too).
pub fn check_module_order(manifest_dir: &Path, order: &[&str], min_imports: usize) {
    let src = manifest_dir.join("src");
    let mut checked = 0;
    for (index, module) in order.iter().enumerate() {
        let path = src.join(format!("{module}.rs"));
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|err| panic!("{}: {err}", path.display()));
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        // Comments removed, lines joined, so a `use` group over several lines is one text.
        let code: String = code
            .lines()
            .map(|line| line.split("//").next().unwrap_or(""))
            .collect::<Vec<_>>()
            .join(" ");
        for (at, _) in code.match_indices("crate::") {
            for name in targets(&code[at + "crate::".len()..]) {
                let Some(target) = order.iter().position(|m| *m == name) else {
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
    assert!(checked >= min_imports, "only {checked} imports found");
    let entries = std::fs::read_dir(&src).unwrap_or_else(|err| panic!("{}: {err}", src.display()));
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        if stem != "lib" {
            assert!(order.contains(&stem), "{stem} has no layer");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::targets;

    #[test]
    fn crate_paths_name_their_modules() {
        let cases: [(&str, &[&str]); 4] = [
            ("spawn::Spawn;", &["spawn"]),
            ("{process, direct::run};", &["process", "direct"]),
            ("{ a,   b::c, }", &["a", "b"]),
            ("worker_pool::X", &["worker_pool"]),
        ];
        for (rest, expected) in cases {
            assert_eq!(targets(rest), expected, "{rest:?}");
        }
    }
}
