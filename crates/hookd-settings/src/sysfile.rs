//! Gemini CLI's security check of the system settings files, so hookd loads exactly the
//! system files Gemini CLI loads.
//!
//! Gemini CLI (from 0.61) skips, with a warning, a system settings file or system defaults
//! file that someone other than root could have written, or replaced by writing to any
//! directory on its path. hookd applies the same rule to the same two files, whatever their
//! path (`GEMINI_CLI_SYSTEM_SETTINGS_PATH` and `GEMINI_CLI_SYSTEM_DEFAULTS_PATH` included):
//!
//! - the file must be a regular file, and every directory from the one that holds it up to
//!   `/` must be a directory;
//! - each of them must be owned by root (uid 0) and writable by neither its group nor others
//!   (mode bits `0o020` and `0o002`; a sticky bit does not help: a file under `/tmp` is
//!   refused);
//! - a symbolic link among them must itself be owned by root, and what it points to passes the
//!   same rule;
//! - when the path goes through symbolic links, its canonical target and every directory above
//!   the target are checked too.
//!
//! A file that does not exist is nothing to load and nothing to check; neither is a directory
//! that vanished between two checks. Anything that cannot be checked (a directory that cannot
//! be read, say) refuses the file: the check fails closed, as Gemini CLI's does.
//!
//! The owner the rule demands ([`SystemFileRule::owner`], root by default) and a directory
//! above which nothing is checked ([`SystemFileRule::trusted_above`], none by default) are
//! parameters only so that tests, which run as an ordinary user in a temp dir under a
//! world-writable `/tmp`, can exercise the rest.

use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

/// The mode bits that let a group or others write.
const GROUP_OR_OTHER_WRITE: u32 = 0o022;

/// Whom the system files and their directories must belong to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SystemFileRule {
    /// The uid they must belong to: root (0), as Gemini CLI demands. Directories owned by
    /// root pass whatever this is.
    pub owner: u32,
    /// A directory whose ancestors are not checked (it and everything below it still are);
    /// `None`, the default, checks up to `/`.
    pub trusted_above: Option<PathBuf>,
}

impl SystemFileRule {
    /// Gemini CLI's rule: root, every directory up to `/`.
    pub fn root() -> SystemFileRule {
        SystemFileRule::default()
    }

    /// The trusted directory as given and as its canonical path (a path to a system file may
    /// come through either).
    fn trusted_dirs(&self) -> Vec<PathBuf> {
        let Some(trusted) = &self.trusted_above else {
            return Vec::new();
        };
        let mut dirs = vec![trusted.clone()];
        dirs.extend(fs::canonicalize(trusted).ok().filter(|dir| dir != trusted));
        dirs
    }

    /// Whether `uid` may own a checked path.
    fn trusts(&self, uid: u32) -> bool {
        uid == self.owner || uid == 0
    }
}

/// Why one path (the file or a directory of it) fails the rule, given its owner and mode;
/// `None` when it passes.
pub fn insecure_reason(path: &Path, uid: u32, mode: u32, owner: u32) -> Option<String> {
    if uid != owner {
        let whom = if owner == 0 {
            "root (uid 0)".to_owned()
        } else {
            format!("uid {owner}")
        };
        return Some(format!(
            "{} is owned by uid {uid}, not {whom} (fix: sudo chown root:root {:?})",
            path.display(),
            path.display().to_string()
        ));
    }
    if mode & GROUP_OR_OTHER_WRITE != 0 {
        return Some(format!(
            "{} is writable by its group or others (mode {:o}; fix: sudo chmod g-w,o-w {:?})",
            path.display(),
            mode & 0o7777,
            path.display().to_string()
        ));
    }
    None
}

/// `path` made absolute against the working directory, with `.` and `..` taken lexically
/// (as Gemini CLI's `path.resolve` does, without following links).
fn absolute(path: &Path) -> Result<PathBuf, String> {
    let joined = if path.is_absolute() {
        path.to_owned()
    } else {
        std::env::current_dir()
            .map_err(|err| format!("cannot resolve {}: {err}", path.display()))?
            .join(path)
    };
    let mut out = PathBuf::from("/");
    for component in joined.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(part) => out.push(part),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    Ok(out)
}

/// What a path must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    File,
    Directory,
}

/// Checks one path: a symbolic link must be owned by a trusted uid; what the path resolves
/// to must be of `kind`, owned by a trusted uid and not group- or other-writable. A path that
/// does not exist passes.
fn check_one(path: &Path, kind: Kind, rule: &SystemFileRule) -> Result<(), String> {
    let metadata = match fs::metadata(path) {
        Ok(metadata) => metadata,
        Err(err) if is_missing(&err) => return Ok(()),
        Err(err) => return Err(format!("cannot check {}: {err}", path.display())),
    };
    match kind {
        Kind::File if !metadata.is_file() => {
            return Err(format!("{} is not a regular file", path.display()));
        }
        Kind::Directory if !metadata.is_dir() => {
            return Err(format!("{} is not a directory", path.display()));
        }
        _ => {}
    }
    if let Ok(link) = fs::symlink_metadata(path)
        && link.file_type().is_symlink()
        && !rule.trusts(link.uid())
    {
        return Err(format!(
            "the symbolic link {} is owned by uid {}, not root (uid 0) (fix: sudo chown -h \
             root:root {:?})",
            path.display(),
            link.uid(),
            path.display().to_string()
        ));
    }
    let owner = if metadata.uid() == 0 { 0 } else { rule.owner };
    match insecure_reason(path, metadata.uid(), metadata.mode(), owner) {
        Some(reason) => Err(reason),
        None => Ok(()),
    }
}

/// The directories from `dir` up to `/`, nearest first, without those above a trusted one.
fn ancestors<'a>(dir: &'a Path, trusted: &'a [PathBuf]) -> impl Iterator<Item = &'a Path> {
    dir.ancestors().filter(|ancestor| {
        !ancestor.as_os_str().is_empty()
            && !trusted
                .iter()
                .any(|trusted| trusted != ancestor && trusted.starts_with(ancestor))
    })
}

/// Whether the system file at `path` may be loaded: `Ok(())` when it passes the rule or does
/// not exist, else the reason it is refused (the first path that fails, and why).
pub fn check_system_file(path: &Path, rule: &SystemFileRule) -> Result<(), String> {
    let given = absolute(path)?;
    let canonical = match fs::canonicalize(&given) {
        Ok(canonical) => canonical,
        Err(err) if is_missing(&err) => return Ok(()),
        Err(err) => return Err(format!("cannot resolve {}: {err}", path.display())),
    };
    let trusted = rule.trusted_dirs();
    let mut checked: Vec<PathBuf> = Vec::new();
    for file in [given, canonical] {
        if checked.contains(&file) {
            continue;
        }
        if let Some(parent) = file.parent() {
            for dir in ancestors(parent, &trusted) {
                if !checked.iter().any(|done| done == dir) {
                    check_one(dir, Kind::Directory, rule)?;
                    checked.push(dir.to_owned());
                }
            }
        }
        check_one(&file, Kind::File, rule)?;
        checked.push(file);
    }
    Ok(())
}

fn is_missing(err: &io::Error) -> bool {
    matches!(
        err.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{PermissionsExt, symlink};

    const ROOT: u32 = 0;
    const OTHER: u32 = 4242;

    fn is_root() -> bool {
        nix::unistd::geteuid().is_root()
    }

    /// Root's rule, with nothing above `temp` checked (the temp dir sits under `/tmp`).
    fn rule(temp: &Path) -> SystemFileRule {
        SystemFileRule {
            owner: ROOT,
            trusted_above: Some(temp.to_owned()),
        }
    }

    fn set(path: &Path, uid: u32, mode: u32) {
        nix::unistd::chown(path, Some(nix::unistd::Uid::from_raw(uid)), None).expect("chown");
        fs::set_permissions(path, fs::Permissions::from_mode(mode)).expect("chmod");
    }

    #[test]
    fn the_rule_wants_the_owner_and_no_group_or_other_write() {
        // (uid, mode, refused because)
        let cases = [
            (ROOT, 0o644, None),
            (ROOT, 0o600, None),
            (ROOT, 0o755, None),
            (ROOT, 0o4755, None),
            (ROOT, 0o664, Some("writable")),
            (ROOT, 0o646, Some("writable")),
            (ROOT, 0o777, Some("writable")),
            (ROOT, 0o1777, Some("writable")),
            (OTHER, 0o644, Some("owned by uid 4242, not root")),
            (OTHER, 0o666, Some("owned by uid 4242")),
        ];
        for (uid, mode, expected) in cases {
            let reason = insecure_reason(Path::new("/etc/x/settings.json"), uid, mode, ROOT);
            match (expected, &reason) {
                (None, None) => {}
                (Some(part), Some(reason)) => {
                    assert!(reason.contains(part), "{uid} {mode:o}: {reason}");
                    assert!(reason.contains("/etc/x/settings.json"), "{reason}");
                }
                _ => panic!("{uid} {mode:o}: expected {expected:?}, got {reason:?}"),
            }
        }
    }

    /// A file and its directory with the given owners and modes, the result of the check and
    /// which path it names. Needs root to give files away.
    #[test]
    fn files_and_their_directories_are_checked_on_disk() {
        if !is_root() {
            eprintln!("skipped: giving files to another uid needs root");
            return;
        }
        // ((dir uid, dir mode), (file uid, file mode), refused naming the dir? the file?)
        let cases = [
            ((ROOT, 0o755), (ROOT, 0o644), None),
            ((ROOT, 0o755), (ROOT, 0o600), None),
            ((ROOT, 0o755), (OTHER, 0o644), Some("file")),
            ((ROOT, 0o755), (ROOT, 0o664), Some("file")),
            ((ROOT, 0o755), (ROOT, 0o666), Some("file")),
            ((OTHER, 0o755), (ROOT, 0o644), Some("dir")),
            ((ROOT, 0o775), (ROOT, 0o644), Some("dir")),
            ((ROOT, 0o777), (ROOT, 0o644), Some("dir")),
            ((ROOT, 0o1777), (ROOT, 0o644), Some("dir")),
        ];
        for ((dir_uid, dir_mode), (file_uid, file_mode), expected) in cases {
            let temp = tempfile::tempdir().expect("temp dir");
            let dir = temp.path().join("gemini-cli");
            fs::create_dir(&dir).expect("dir");
            let file = dir.join("settings.json");
            fs::write(&file, "{}").expect("file");
            set(&file, file_uid, file_mode);
            set(&dir, dir_uid, dir_mode);
            set(temp.path(), ROOT, 0o755);
            let got = check_system_file(&file, &rule(temp.path()));
            let what = format!("dir {dir_uid} {dir_mode:o}, file {file_uid} {file_mode:o}");
            match (expected, got) {
                (None, Ok(())) => {}
                (Some(named), Err(reason)) => {
                    let path = if named == "dir" { &dir } else { &file };
                    assert!(
                        reason.starts_with(&format!("{} is", path.display())),
                        "{what}: {reason}"
                    );
                }
                (expected, got) => panic!("{what}: expected {expected:?}, got {got:?}"),
            }
        }
    }

    #[test]
    fn symlinks_are_checked_at_both_ends_and_missing_files_pass() {
        if !is_root() {
            eprintln!("skipped: giving files to another uid needs root");
            return;
        }
        let temp = tempfile::tempdir().expect("temp dir");
        let etc = temp.path().join("etc");
        let elsewhere = temp.path().join("elsewhere");
        fs::create_dir(&etc).expect("etc");
        fs::create_dir(&elsewhere).expect("elsewhere");
        let target = elsewhere.join("settings.json");
        fs::write(&target, "{}").expect("target");
        let link = etc.join("settings.json");
        symlink(&target, &link).expect("symlink");
        set(&etc, ROOT, 0o755);
        set(&target, ROOT, 0o644);
        set(&elsewhere, ROOT, 0o755);
        assert_eq!(check_system_file(&link, &rule(temp.path())), Ok(()));

        // The target's directory is someone else's: refused, though the link's is fine.
        set(&elsewhere, OTHER, 0o755);
        let reason = check_system_file(&link, &rule(temp.path())).expect_err("refused");
        assert!(
            reason.starts_with(&elsewhere.display().to_string()),
            "{reason}"
        );
        set(&elsewhere, ROOT, 0o755);

        // The link's directory is world-writable: refused, though the target's is fine.
        set(&etc, ROOT, 0o777);
        let reason = check_system_file(&link, &rule(temp.path())).expect_err("refused");
        assert!(reason.starts_with(&etc.display().to_string()), "{reason}");
        set(&etc, ROOT, 0o755);

        assert_eq!(
            check_system_file(&etc.join("absent.json"), &rule(temp.path())),
            Ok(())
        );
        assert_eq!(
            check_system_file(&temp.path().join("no/dir.json"), &rule(temp.path())),
            Ok(())
        );
    }

    /// Every directory up to the top is checked, not only the file's own: a world-writable
    /// or foreign directory anywhere above refuses the file, a root-owned link is followed.
    #[test]
    fn every_directory_above_the_file_is_checked() {
        if !is_root() {
            eprintln!("skipped: giving files to another uid needs root");
            return;
        }
        let temp = tempfile::tempdir().expect("temp dir");
        set(temp.path(), ROOT, 0o755);
        let top = temp.path().join("top");
        let etc = top.join("a/b/etc");
        fs::create_dir_all(&etc).expect("dirs");
        let file = etc.join("settings.json");
        fs::write(&file, "{}").expect("file");
        for dir in [&top, &top.join("a"), &top.join("a/b"), &etc] {
            set(dir, ROOT, 0o755);
        }
        set(&file, ROOT, 0o644);
        let rule = rule(temp.path());
        assert_eq!(check_system_file(&file, &rule), Ok(()));
        // (directory, owner, mode): each refuses the file, naming that directory.
        let cases = [
            (top.clone(), ROOT, 0o1777),
            (top.join("a"), OTHER, 0o755),
            (top.join("a/b"), ROOT, 0o775),
        ];
        for (dir, uid, mode) in cases {
            set(&dir, uid, mode);
            let reason = check_system_file(&file, &rule).expect_err("refused");
            assert!(
                reason.starts_with(&format!("{} is", dir.display())),
                "{}: {reason}",
                dir.display()
            );
            set(&dir, ROOT, 0o755);
        }
        // `..` is taken as written, before anything is followed.
        let roundabout = etc.join("../etc/settings.json");
        assert_eq!(check_system_file(&roundabout, &rule), Ok(()));
        set(&top.join("a/b"), ROOT, 0o777);
        assert!(check_system_file(&roundabout, &rule).is_err());
        set(&top.join("a/b"), ROOT, 0o755);
        // Not a regular file: refused.
        let dir_as_file = etc.join("dir.json");
        fs::create_dir(&dir_as_file).expect("dir");
        set(&dir_as_file, ROOT, 0o755);
        let reason = check_system_file(&dir_as_file, &rule).expect_err("refused");
        assert!(reason.contains("not a regular file"), "{reason}");
        // A symbolic directory link owned by someone else: refused, though its target passes.
        let link = top.join("link");
        symlink(&etc, &link).expect("symlink");
        nix::unistd::fchownat(
            nix::fcntl::AT_FDCWD,
            &link,
            Some(nix::unistd::Uid::from_raw(OTHER)),
            None,
            nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
        )
        .expect("lchown");
        let reason = check_system_file(&link.join("settings.json"), &rule).expect_err("refused");
        assert!(reason.contains("symbolic link"), "{reason}");
    }

    /// With nothing trusted, the check goes up to `/`: under a world-writable temp root (as
    /// `/tmp` is) every file is refused, naming that root, as Gemini CLI refuses it.
    #[test]
    fn nothing_trusted_checks_up_to_the_root() {
        let temp = tempfile::tempdir().expect("temp dir");
        let file = temp.path().join("settings.json");
        fs::write(&file, "{}").expect("file");
        let own = SystemFileRule {
            owner: nix::unistd::geteuid().as_raw(),
            trusted_above: None,
        };
        let result = check_system_file(&file, &own);
        let insecure_above = temp.path().ancestors().skip(1).find(|dir| {
            fs::metadata(dir).is_ok_and(|m| {
                m.mode() & GROUP_OR_OTHER_WRITE != 0 || !(m.uid() == 0 || m.uid() == own.owner)
            })
        });
        match insecure_above {
            Some(dir) => {
                let reason = result.expect_err("refused");
                assert!(
                    reason.starts_with(&format!("{} is", dir.display())),
                    "{reason}"
                );
            }
            None => assert_eq!(result, Ok(())),
        }
    }
}
