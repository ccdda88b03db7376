//! Gemini CLI's security check of the system settings files, so hookd loads exactly the
//! system files Gemini CLI loads.
//!
//! Gemini CLI (from 0.61) skips, with a warning, a system settings file or system defaults
//! file that someone other than root could have written. hookd applies the same rule to the
//! same two files, whatever their path (`GEMINI_CLI_SYSTEM_SETTINGS_PATH` and
//! `GEMINI_CLI_SYSTEM_DEFAULTS_PATH` included):
//!
//! - the file, and the directory that holds it, must be owned by root (uid 0);
//! - neither may be writable by its group or by others (mode bits `0o020` and `0o002`);
//! - when the path goes through symbolic links, both the path as given (followed, as opening
//!   it does) and its canonical target are checked, each with its own directory.
//!
//! A file that does not exist is nothing to load and nothing to check. Anything that cannot be
//! checked (a directory that cannot be read, say) refuses the file: the check fails closed,
//! as Gemini CLI's does.
//!
//! The owner the rule demands is a parameter ([`crate::loader::LoaderEnv::system_owner`],
//! root by default) only so that tests running as an ordinary user can exercise the rest.

use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The mode bits that let a group or others write.
const GROUP_OR_OTHER_WRITE: u32 = 0o022;

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

/// Whether the system file at `path` may be loaded: `Ok(())` when it passes the rule or does
/// not exist, else the reason it is refused (the first path that fails, and why).
pub fn check_system_file(path: &Path, owner: u32) -> Result<(), String> {
    let canonical = match fs::canonicalize(path) {
        Ok(canonical) => canonical,
        Err(err) if is_missing(&err) => return Ok(()),
        Err(err) => return Err(format!("cannot resolve {}: {err}", path.display())),
    };
    let mut checked: Vec<PathBuf> = Vec::new();
    for file in [path.to_owned(), canonical] {
        let directory = file.parent().map(Path::to_owned);
        for candidate in std::iter::once(file).chain(directory) {
            if candidate.as_os_str().is_empty() || checked.contains(&candidate) {
                continue;
            }
            let metadata = match fs::metadata(&candidate) {
                Ok(metadata) => metadata,
                // Gone since it was resolved: nothing to load.
                Err(err) if is_missing(&err) => return Ok(()),
                Err(err) => return Err(format!("cannot check {}: {err}", candidate.display())),
            };
            if let Some(reason) =
                insecure_reason(&candidate, metadata.uid(), metadata.mode(), owner)
            {
                return Err(reason);
            }
            checked.push(candidate);
        }
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
            let got = check_system_file(&file, ROOT);
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
        assert_eq!(check_system_file(&link, ROOT), Ok(()));

        // The target's directory is someone else's: refused, though the link's is fine.
        set(&elsewhere, OTHER, 0o755);
        let reason = check_system_file(&link, ROOT).expect_err("refused");
        assert!(
            reason.starts_with(&elsewhere.display().to_string()),
            "{reason}"
        );
        set(&elsewhere, ROOT, 0o755);

        // The link's directory is world-writable: refused, though the target's is fine.
        set(&etc, ROOT, 0o777);
        let reason = check_system_file(&link, ROOT).expect_err("refused");
        assert!(reason.starts_with(&etc.display().to_string()), "{reason}");
        set(&etc, ROOT, 0o755);

        assert_eq!(check_system_file(&etc.join("absent.json"), ROOT), Ok(()));
        assert_eq!(
            check_system_file(&temp.path().join("no/dir.json"), ROOT),
            Ok(())
        );
    }
}
