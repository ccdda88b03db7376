//! Reading what a project hook's trust key covers from disk, and running verified bytes
//! (hookd's project-hook trust).
//!
//! [`collect`] turns `hookd_core::trust::coverage` into file contents: it reads the scripts
//! the command runs (and, for shell scripts, what they source and start, a few levels deep),
//! every file of the directory trees interpreters import from, and the files and
//! directories the command line and the hook's `env` name, and hashes them. Everything is
//! bounded ([`MAX_FILES`], [`MAX_TOTAL_BYTES`], [`MAX_TREE_DEPTH`], [`MAX_SCRIPTS`]); what the
//! bounds leave out, and what cannot be known at all, becomes an *uncovered* item of the key,
//! which only `hookctl trust --anyway` trusts. Files are opened without blocking and only
//! regular files are read, so a FIFO or a device in a hook directory cannot stall the reader.
//!
//! The loader calls [`collect`] when it builds a registry; under `require` the runner calls
//! it again just before starting a trusted hook and compares. The bytes of the scripts the
//! command runs directly are the ones it hashed there, and [`exec_line`] makes the hook run
//! exactly those: each is copied into a sealed memory file, and its word in the command line
//! is replaced so the interpreter reads the memory file, with `$0` (shell) or `__file__`,
//! `sys.argv[0]` and `sys.path[0]` (Python) still the script's own path. A script swapped on
//! disk after the check is therefore never run. Files the script reads or imports later
//! (sourced libraries, sibling modules) are verified in the same pass but read by path when
//! they are used.

use std::collections::BTreeMap;
use std::fs;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use hookd_core::command::{CommandVars, shell_quote};
use hookd_core::trust::{
    self, Coverage, Entry, EntryKind, ScriptDigest, ScriptFile, relative_path, sha256_hex,
};

/// At most this many files are covered per hook; beyond it the rest is uncovered.
pub const MAX_FILES: usize = 1024;
/// At most this many bytes are read per hook; beyond it the rest is uncovered.
pub const MAX_TOTAL_BYTES: u64 = 16 * 1024 * 1024;
/// Directory trees are followed this many levels down.
pub const MAX_TREE_DEPTH: usize = 8;
/// At most this many shell scripts are read for what they source and start.
pub const MAX_SCRIPTS: usize = 64;
/// At most this many directory entries are looked at per hook while walking trees.
pub const MAX_ENTRIES: usize = 16 * 1024;

/// Whether a file in a directory tree can be code an interpreter loads: it has the
/// extension of a script or module (Python's `.py`, `.pyc`, `.so`, `.pth`, Node.js's `.js`,
/// `.mjs`, `.cjs`, `.node`, TypeScript, shell, Ruby, Perl, PHP, Lua), or it is executable.
/// Data (`.json`, `.txt`, logs a hook writes) is left out, so a hook that writes next to its
/// script does not change its own key.
fn is_code_file(path: &Path, metadata: &fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    const EXTENSIONS: [&str; 24] = [
        "py", "pyc", "pyo", "pyd", "pyw", "so", "pth", "js", "mjs", "cjs", "jsx", "node", "ts",
        "mts", "cts", "tsx", "sh", "bash", "zsh", "rb", "pl", "pm", "php", "lua",
    ];
    let by_extension = path
        .extension()
        .and_then(|ext| ext.to_str())
        .is_some_and(|ext| EXTENSIONS.contains(&ext));
    by_extension || metadata.permissions().mode() & 0o111 != 0
}

/// What [`collect`] found for one hook.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Collected {
    /// The command line the spans of `entries` refer to.
    pub expanded: String,
    /// Every covered file that exists, with its digest, ordered by path.
    pub digests: Vec<ScriptDigest>,
    /// What cannot be covered, for the key.
    pub uncovered: Vec<String>,
    /// Every file looked at, missing ones included (for the watcher).
    pub files: Vec<ScriptFile>,
    /// The scripts the command line runs, with the bytes that were hashed.
    pub entries: Vec<VerifiedEntry>,
}

/// A script the command runs, as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedEntry {
    /// Where it is on the command line and how it is started.
    pub entry: Entry,
    /// Its contents, exactly as hashed; `None` when it is not a readable regular file.
    pub bytes: Option<Vec<u8>>,
}

/// Reads and hashes everything the trust key of a hook running `command` with `env` covers.
pub fn collect(command: &str, env: &[(String, String)], vars: &CommandVars<'_>) -> Collected {
    let project = trust::normalize(Path::new(vars.project_dir));
    let mut cov = trust::coverage(command, env, vars);
    let mut reader = Reader::default();
    let mut collected = Collected {
        expanded: std::mem::take(&mut cov.expanded),
        ..Collected::default()
    };

    // The scripts the line runs, then whatever shell scripts among them source and start.
    let top_entries = cov.entries.len();
    let mut index = 0;
    while index < cov.entries.len() {
        let entry = cov.entries[index].clone();
        let bytes = reader.read(&entry.path);
        let is_shell = match entry.kind {
            EntryKind::Shell => true,
            EntryKind::Program => bytes
                .as_deref()
                .and_then(|bytes| trust::shebang_kind(first_line(bytes)))
                .is_some_and(|(kind, _)| kind == EntryKind::Shell),
            EntryKind::Python | EntryKind::Other => false,
        };
        if is_shell && let Some(bytes) = &bytes {
            if index < MAX_SCRIPTS {
                let text = String::from_utf8_lossy(bytes);
                merge(
                    &mut cov,
                    trust::script_coverage(&text, &entry.path, &project),
                );
            } else {
                add_uncovered(
                    &mut collected.uncovered,
                    format!("more than {MAX_SCRIPTS} scripts to read"),
                );
            }
        }
        if index < top_entries {
            collected.entries.push(VerifiedEntry { entry, bytes });
        }
        index += 1;
    }
    for path in cov.paths.clone() {
        match fs::metadata(&path) {
            Ok(metadata) if metadata.is_dir() => {
                if !cov.trees.contains(&path) {
                    cov.trees.push(path);
                }
            }
            _ => {
                reader.read(&path);
            }
        }
    }
    for tree in &cov.trees {
        if let Err(message) = reader.walk(tree, &project) {
            add_uncovered(&mut collected.uncovered, message);
        }
    }
    for dir in &cov.node_dirs {
        let packages = dir.join("node_modules");
        if packages.exists() {
            let shown = relative_path(&packages, &project).unwrap_or_else(|| "node_modules".into());
            add_uncovered(
                &mut collected.uncovered,
                format!("Node.js packages in {shown} are not verified"),
            );
        }
    }
    if let Some(message) = reader.overflow.take() {
        add_uncovered(&mut collected.uncovered, message);
    }
    for gap in &cov.gaps {
        let closed = gap
            .unless_covered
            .as_ref()
            .is_some_and(|path| reader.digests.get(path).is_some_and(Option::is_some));
        if !closed {
            add_uncovered(&mut collected.uncovered, gap.text.clone());
        }
    }
    record_digests(&reader, &project, &mut collected);
    collected
}

/// What a policy hook's fingerprint covers: its `files` (the policy, then its data files,
/// absolute). A file inside `project_dir` is hashed; one outside it is a gap (the project
/// cannot vouch for it), as is a file that cannot be read.
pub fn collect_files(files: &[PathBuf], project_dir: &Path) -> Collected {
    let project = trust::normalize(project_dir);
    let mut reader = Reader::default();
    let mut collected = Collected::default();
    for path in files {
        let path = trust::normalize(path);
        if relative_path(&path, &project).is_none() {
            add_uncovered(
                &mut collected.uncovered,
                format!("{} is outside the project", path.display()),
            );
            continue;
        }
        if reader.read(&path).is_none() && reader.digests.get(&path) == Some(&None) {
            let shown = relative_path(&path, &project).unwrap_or_default();
            add_uncovered(
                &mut collected.uncovered,
                format!("{shown} cannot be read as a regular file"),
            );
        }
    }
    if let Some(message) = reader.overflow.take() {
        add_uncovered(&mut collected.uncovered, message);
    }
    record_digests(&reader, &project, &mut collected);
    collected
}

/// Every file `reader` looked at into `collected`: each in `files`, and those inside `project`
/// with a digest in `digests` too.
fn record_digests(reader: &Reader, project: &Path, collected: &mut Collected) {
    for (path, sha256) in &reader.digests {
        if let (Some(sha256), Some(relative)) = (sha256, relative_path(path, project)) {
            collected.digests.push(ScriptDigest {
                path: relative,
                sha256: sha256.clone(),
            });
        }
        collected.files.push(ScriptFile {
            path: path.clone(),
            sha256: sha256.clone(),
        });
    }
}

fn add_uncovered(uncovered: &mut Vec<String>, text: String) {
    if !uncovered.contains(&text) {
        uncovered.push(text);
    }
}

/// Adds what a script runs to the coverage of the line that runs it.
fn merge(cov: &mut Coverage, more: Coverage) {
    for entry in more.entries {
        if !cov.entries.iter().any(|known| known.path == entry.path) {
            cov.entries.push(entry);
        }
    }
    for path in more.paths {
        if !cov.paths.contains(&path) {
            cov.paths.push(path);
        }
    }
    for tree in more.trees {
        if !cov.trees.contains(&tree) {
            cov.trees.push(tree);
        }
    }
    for dir in more.node_dirs {
        if !cov.node_dirs.contains(&dir) {
            cov.node_dirs.push(dir);
        }
    }
    for gap in more.gaps {
        if !cov.gaps.contains(&gap) {
            cov.gaps.push(gap);
        }
    }
}

/// The first line of a file, without its newline.
fn first_line(bytes: &[u8]) -> &[u8] {
    let end = bytes
        .iter()
        .position(|&b| b == b'\n')
        .unwrap_or(bytes.len());
    &bytes[..end]
}

/// Reads files once each, within the bounds.
#[derive(Default)]
struct Reader {
    /// Every file looked at and its digest (`None`: missing, not a regular file, or left
    /// out by a bound).
    digests: BTreeMap<PathBuf, Option<String>>,
    bytes_read: u64,
    /// Directory entries looked at while walking trees.
    entries_seen: usize,
    /// Why files were left out, once a bound was reached.
    overflow: Option<String>,
}

impl Reader {
    /// Reads and hashes `path` (following symlinks, as running it would); returns its bytes.
    /// A file is read once: a second look (a script found again in its own directory's
    /// tree) keeps the first digest, which is the digest of the bytes the hook will run.
    fn read(&mut self, path: &Path) -> Option<Vec<u8>> {
        if self.digests.contains_key(path) {
            return None;
        }
        if self.digests.len() >= MAX_FILES && !self.digests.contains_key(path) {
            self.overflow
                .get_or_insert_with(|| format!("more than {MAX_FILES} files to verify"));
            return None;
        }
        let budget = MAX_TOTAL_BYTES.saturating_sub(self.bytes_read);
        let bytes = match read_regular(path, budget) {
            Ok(bytes) => Some(bytes),
            Err(ReadError::TooLarge) => {
                self.overflow.get_or_insert_with(|| {
                    format!("more than {} MiB to verify", MAX_TOTAL_BYTES >> 20)
                });
                None
            }
            Err(ReadError::NotRegular) => None,
        };
        if let Some(bytes) = &bytes {
            self.bytes_read += bytes.len() as u64;
        }
        self.digests
            .insert(path.to_owned(), bytes.as_deref().map(sha256_hex));
        bytes
    }

    /// Reads every regular file under `dir`, in name order, skipping `.git`.
    fn walk(&mut self, dir: &Path, project: &Path) -> Result<(), String> {
        let mut stack = vec![(dir.to_owned(), 0usize)];
        while let Some((dir, depth)) = stack.pop() {
            let Ok(entries) = fs::read_dir(&dir) else {
                continue;
            };
            let mut children: Vec<PathBuf> = entries
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .take(MAX_ENTRIES + 1)
                .collect();
            self.entries_seen += children.len();
            if self.entries_seen > MAX_ENTRIES {
                let shown =
                    relative_path(&dir, project).unwrap_or_else(|| dir.display().to_string());
                return Err(format!(
                    "more than {MAX_ENTRIES} directory entries to look at under {shown}"
                ));
            }
            children.sort();
            let mut subdirs = Vec::new();
            for child in children {
                if child.file_name().is_some_and(|name| name == ".git") {
                    continue;
                }
                match fs::metadata(&child) {
                    Ok(metadata) if metadata.is_dir() => {
                        if depth + 1 >= MAX_TREE_DEPTH {
                            let shown = relative_path(&child, project)
                                .unwrap_or_else(|| child.display().to_string());
                            return Err(format!(
                                "{shown} is more than {MAX_TREE_DEPTH} directories deep"
                            ));
                        }
                        subdirs.push(child);
                    }
                    Ok(metadata) if is_code_file(&child, &metadata) => {
                        self.read(&child);
                        if self.overflow.is_some() {
                            return Ok(());
                        }
                    }
                    // Data files, and what cannot be looked at.
                    _ => {}
                }
            }
            for subdir in subdirs.into_iter().rev() {
                stack.push((subdir, depth + 1));
            }
        }
        Ok(())
    }
}

enum ReadError {
    NotRegular,
    TooLarge,
}

/// The contents of a regular file of at most `limit` bytes. Opened without blocking, so a
/// FIFO never stalls the reader; anything but a regular file is not read.
fn read_regular(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|_| ReadError::NotRegular)?;
    let metadata = file.metadata().map_err(|_| ReadError::NotRegular)?;
    if !metadata.is_file() {
        return Err(ReadError::NotRegular);
    }
    if metadata.len() > limit {
        return Err(ReadError::TooLarge);
    }
    let mut bytes = Vec::with_capacity(usize::try_from(metadata.len()).unwrap_or(0));
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|_| ReadError::NotRegular)?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooLarge);
    }
    Ok(bytes)
}

/// A command line that runs the verified bytes of its scripts, and the memory files it
/// reads them from (which must stay open until the hook has exited).
#[derive(Debug)]
pub struct VerifiedLine {
    /// The command line for `bash -c`.
    pub line: String,
    /// The sealed memory files holding the scripts' bytes.
    pub memfds: Vec<OwnedFd>,
}

/// Why the verified bytes could not be prepared; the hook is then not run.
#[derive(Debug)]
pub struct PrepareError {
    /// The script.
    pub script: String,
    /// Why.
    pub source: std::io::Error,
}

impl std::fmt::Display for PrepareError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "cannot prepare the verified copy of {}: {}",
            self.script, self.source
        )
    }
}

impl std::error::Error for PrepareError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// Rewrites `collected.expanded` so that each script it runs directly, when started by a
/// shell or Python (as an interpreter's script or through its `#!` line), is read from a
/// sealed memory file holding exactly the bytes that were verified. Scripts of other
/// interpreters, binaries and scripts inside `bash -c '...'` keep their path.
pub fn exec_line(collected: &Collected) -> Result<VerifiedLine, PrepareError> {
    // The hook reaches the copies through the daemon's `/proc/<pid>/fd`; without a `/proc`
    // the scripts run by their path, checked just before (the window the copies close).
    if !Path::new("/proc/self/fd").is_dir() {
        return Ok(VerifiedLine {
            line: collected.expanded.clone(),
            memfds: Vec::new(),
        });
    }
    let mut replacements: Vec<((usize, usize), String, OwnedFd)> = Vec::new();
    for verified in &collected.entries {
        let (Some(span), Some(bytes)) = (verified.entry.span, verified.bytes.as_deref()) else {
            continue;
        };
        let Some(original) = collected.expanded.get(span.0..span.1) else {
            continue;
        };
        let interpreter_words: Vec<String>;
        let kind = match verified.entry.kind {
            EntryKind::Program => match shebang_words(first_line(bytes)) {
                Some((kind, words)) => {
                    interpreter_words = words;
                    kind
                }
                None => continue,
            },
            kind => {
                interpreter_words = Vec::new();
                kind
            }
        };
        if !matches!(kind, EntryKind::Shell | EntryKind::Python) {
            continue;
        }
        let shown = verified.entry.path.display().to_string();
        let memfd = sealed_copy(bytes).map_err(|source| PrepareError {
            script: shown.clone(),
            source,
        })?;
        let fd_path = format!("/proc/{}/fd/{}", std::process::id(), memfd.as_raw_fd());
        let code = match kind {
            EntryKind::Shell => format!(". {fd_path}"),
            _ => python_bootstrap(&fd_path),
        };
        let mut replacement = String::new();
        for word in &interpreter_words {
            replacement.push_str(&quote_word(word));
            replacement.push(' ');
        }
        replacement.push_str("-c '");
        replacement.push_str(&code);
        replacement.push_str("' ");
        replacement.push_str(original);
        replacements.push((span, replacement, memfd));
    }
    replacements.sort_by_key(|(span, _, _)| std::cmp::Reverse(span.0));
    let mut line = collected.expanded.clone();
    let mut memfds = Vec::with_capacity(replacements.len());
    for ((start, end), replacement, memfd) in replacements {
        line.replace_range(start..end, &replacement);
        memfds.push(memfd);
    }
    Ok(VerifiedLine { line, memfds })
}

/// The interpreter words of a `#!` line as the kernel reads them: the program and at most
/// one argument (the rest of the line); `None` unless it names a shell or Python.
fn shebang_words(line: &[u8]) -> Option<(EntryKind, Vec<String>)> {
    let (kind, _) = trust::shebang_kind(line)?;
    let text = String::from_utf8_lossy(line.strip_prefix(b"#!")?).into_owned();
    let text = text.trim();
    let (program, argument) = match text.split_once([' ', '\t']) {
        Some((program, argument)) => (program, Some(argument.trim())),
        None => (text, None),
    };
    let mut words = vec![program.to_owned()];
    words.extend(argument.filter(|a| !a.is_empty()).map(str::to_owned));
    Some((kind, words))
}

/// A word for the shell: as it is when it needs no quoting, else single-quoted.
fn quote_word(word: &str) -> String {
    if !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'/' | b'.' | b'_' | b'-' | b'+'))
    {
        return word.to_owned();
    }
    if word.contains('\'') {
        return shell_quote(word);
    }
    format!("'{word}'")
}

/// Python code that runs the file at `fd_path` as the script named by its first argument:
/// `sys.argv`, `sys.path[0]` and `__file__` are what running the script by path gives.
fn python_bootstrap(fd_path: &str) -> String {
    format!(
        "import sys as _hs, os as _ho\n\
         _hs.argv.pop(0)\n\
         _hp = _hs.argv[0]\n\
         if _hs.path[:1] == [\"\"]: _hs.path[0] = _ho.path.dirname(_ho.path.abspath(_hp))\n\
         with open(\"{fd_path}\", \"rb\") as _hf: _hc = compile(_hf.read(), _hp, \"exec\")\n\
         __file__ = _hp\n\
         del _hs, _ho, _hp, _hf\n\
         exec(_hc)\n"
    )
}

/// A sealed memory file holding `bytes`: nothing can change it any more.
fn sealed_copy(bytes: &[u8]) -> std::io::Result<OwnedFd> {
    use nix::fcntl::{FcntlArg, SealFlag, fcntl};
    use nix::sys::memfd::{MFdFlags, memfd_create};
    let fd = memfd_create(
        c"hookd-verified-script",
        MFdFlags::MFD_CLOEXEC | MFdFlags::MFD_ALLOW_SEALING,
    )?;
    let mut file = fs::File::from(fd);
    file.write_all(bytes)?;
    let fd = OwnedFd::from(file);
    fcntl(
        &fd,
        FcntlArg::F_ADD_SEALS(
            SealFlag::F_SEAL_SHRINK
                | SealFlag::F_SEAL_GROW
                | SealFlag::F_SEAL_WRITE
                | SealFlag::F_SEAL_SEAL,
        ),
    )?;
    Ok(fd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_covers_its_files_inside_the_project_and_names_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("p");
        std::fs::create_dir_all(project.join(".hookd")).unwrap();
        std::fs::write(project.join(".hookd/g.rego"), b"package g\n").unwrap();
        std::fs::create_dir_all(project.join("dir.json")).unwrap();
        let outside = dir.path().join("outside.json");
        std::fs::write(&outside, b"{}").unwrap();
        let collected = collect_files(
            &[
                project.join(".hookd/g.rego"),
                project.join("dir.json"),
                outside.clone(),
            ],
            &project,
        );
        assert_eq!(collected.digests.len(), 1);
        assert_eq!(collected.digests[0].path, ".hookd/g.rego");
        assert_eq!(collected.digests[0].sha256, sha256_hex(b"package g\n"));
        assert_eq!(
            collected.uncovered,
            [
                "dir.json cannot be read as a regular file".to_owned(),
                format!("{} is outside the project", outside.display()),
            ]
        );
    }

    fn project() -> tempfile::TempDir {
        match tempfile::tempdir() {
            Ok(dir) => dir,
            Err(err) => panic!("tempdir: {err}"),
        }
    }

    fn write(dir: &Path, rel: &str, text: &str) {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).ok();
        }
        fs::write(path, text).ok();
    }

    fn collect_in(dir: &Path, command: &str, env: &[(&str, &str)]) -> Collected {
        let text = dir.to_string_lossy().into_owned();
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        collect(
            command,
            &env,
            &CommandVars {
                project_dir: &text,
                plans_dir: "",
                session_id: "",
            },
        )
    }

    fn paths(collected: &Collected) -> Vec<&str> {
        collected.digests.iter().map(|d| d.path.as_str()).collect()
    }

    /// A command line, the hook's env, the files covered and how many parts are uncovered.
    type CollectCase<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a [&'a str], usize);

    #[test]
    fn collects_what_each_command_loads() {
        let dir = project();
        let dir = dir.path();
        write(dir, "h/g.py", "import json\n");
        write(dir, "h/json.py", "evil = 1\n");
        write(dir, "h/sub/x.py", "");
        write(dir, "h/log.txt", "data a hook writes is not code");
        write(dir, "h/s.sh", "#!/bin/bash\n. ./lib.sh\n");
        write(dir, "lib.sh", "echo lib\n");
        write(dir, "mod.py", "");
        write(dir, "pre.js", "");
        write(dir, "x.sh", "");
        // (command, env, covered files, uncovered count)
        let cases: &[CollectCase<'_>] = &[
            (
                "python3 h/g.py",
                &[],
                &["h/g.py", "h/json.py", "h/s.sh", "h/sub/x.py"],
                0,
            ),
            (
                "timeout 5 bash h/s.sh",
                &[],
                &["h/g.py", "h/json.py", "h/s.sh", "h/sub/x.py", "lib.sh"],
                0,
            ),
            (
                "node -r ./pre.js h/x.js",
                &[],
                &["h/g.py", "h/json.py", "h/s.sh", "h/sub/x.py", "pre.js"],
                0,
            ),
            (
                "echo hi",
                &[("BASH_ENV", "$GEMINI_PROJECT_DIR/x.sh")],
                &["x.sh"],
                0,
            ),
            ("sh -c \"$CODE\"", &[], &[], 1),
        ];
        for (command, env, expected, uncovered) in cases {
            let collected = collect_in(dir, command, env);
            assert_eq!(paths(&collected), *expected, "{command}");
            assert_eq!(
                collected.uncovered.len(),
                *uncovered,
                "{command}: {:?}",
                collected.uncovered
            );
        }
        // python3 -m mod imports from the project directory: every file there.
        let module = collect_in(dir, "python3 -m mod", &[]);
        assert!(paths(&module).contains(&"mod.py"), "{:?}", paths(&module));
        assert!(paths(&module).contains(&"h/json.py"));
    }

    #[test]
    fn node_modules_and_bounds_are_uncovered() {
        let dir = project();
        let dir = dir.path();
        write(dir, "h/x.js", "");
        write(dir, "node_modules/a/index.js", "");
        let node = collect_in(dir, "node h/x.js", &[]);
        assert_eq!(
            node.uncovered,
            ["Node.js packages in node_modules are not verified"]
        );
        for index in 0..=MAX_FILES {
            write(dir, &format!("big/f{index}.sh"), "");
        }
        let big = collect_in(dir, "bash big/f0.sh", &[]);
        assert_eq!(
            big.uncovered,
            [format!("more than {MAX_FILES} files to verify")]
        );
        assert_eq!(big.digests.len(), MAX_FILES);
    }

    #[test]
    fn a_fifo_is_not_read() {
        let dir = project();
        let dir = dir.path();
        write(dir, "h/g.sh", "echo hi\n");
        let fifo = dir.join("h/pipe");
        assert!(nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).is_ok());
        let collected = collect_in(dir, "bash h/g.sh", &[]);
        assert_eq!(paths(&collected), ["h/g.sh"]);
    }

    #[test]
    fn the_line_runs_the_verified_bytes() {
        let dir = project();
        let dir = dir.path();
        write(dir, "s.sh", "#!/bin/sh -e\necho v1\n");
        write(dir, "g.py", "print(1)\n");
        write(dir, "n.js", "");
        let collected = collect_in(
            dir,
            "timeout 5 ./s.sh a && python3 -u g.py && node n.js",
            &[],
        );
        let verified = match exec_line(&collected) {
            Ok(verified) => verified,
            Err(err) => panic!("{err}"),
        };
        assert_eq!(verified.memfds.len(), 2);
        let pid = std::process::id();
        let s = verified.memfds[1].as_raw_fd();
        let g = verified.memfds[0].as_raw_fd();
        assert!(
            verified.line.starts_with(&format!(
                "timeout 5 /bin/sh -e -c '. /proc/{pid}/fd/{s}' ./s.sh a && python3 -u -c 'import sys"
            )),
            "{}",
            verified.line
        );
        assert!(
            verified.line.ends_with("exec(_hc)\n' g.py && node n.js"),
            "{}",
            verified.line
        );
        assert!(verified.line.contains(&format!("/proc/{pid}/fd/{g}")));
        // The copy is sealed: it cannot be written.
        let mut file = fs::File::from(
            verified
                .memfds
                .into_iter()
                .next()
                .unwrap_or_else(|| panic!("no memfd")),
        );
        assert!(file.write_all(b"x").is_err());
    }
}
