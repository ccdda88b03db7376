//! The per-user secret of hookd's loopback HTTP listener.
//!
//! Any local user can connect to a loopback TCP port, and a web page can make a browser post
//! to one, so the listener answers only requests that carry this secret
//! (`Authorization: Bearer <secret>`). It is 32 bytes from the operating system's random
//! source, written as 64 lowercase hex digits into `<config home>/hookd/http.secret`, a file
//! only its owner can read. The daemon reads it at start and `hookctl install --transport
//! http` copies it into the user's own host settings (never into a project's files).
//!
//! [`load`] trusts the file only when it is a regular file of the effective user with no
//! group or other permission bits; [`load_or_create`] makes a new one when none exists. Two
//! processes creating it at once agree on one secret: the new file is linked into place with
//! `link(2)`, which fails when the name exists, and the loser reads the winner's file.

use std::fmt;
use std::fs::{DirBuilder, File, OpenOptions};
use std::io::{self, Read as _, Write as _};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The number of random bytes in a secret (256 bits).
pub const SECRET_BYTES: usize = 32;

/// The length of a secret's text: two hex digits per byte.
pub const SECRET_HEX_LEN: usize = SECRET_BYTES * 2;

/// The secret file's name under hookd's configuration directory.
pub const SECRET_FILE_NAME: &str = "http.secret";

/// Why the secret could not be read or made.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    /// The file could not be opened, read, created or linked.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
    /// The path is not a regular file (a directory, FIFO, device, or a symbolic link, which
    /// is not followed).
    #[error("{path}: not a regular file")]
    NotRegular {
        /// The file.
        path: PathBuf,
    },
    /// The file belongs to another user, who could have chosen the secret.
    #[error("{path}: owned by uid {owner}, not by this user (uid {euid})")]
    WrongOwner {
        /// The file.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// The effective uid of this process.
        euid: u32,
    },
    /// Group or others may read or write the file (fix: `chmod 600 <path>`).
    #[error("{path}: mode {mode:o} lets other users read or change it; it must be 600")]
    Mode {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The contents are not 64 lowercase hex digits with an optional newline.
    #[error("{path}: not a hookd HTTP secret (64 lowercase hex digits expected)")]
    Malformed {
        /// The file.
        path: PathBuf,
    },
    /// The operating system's random source failed.
    #[error("no random bytes from the operating system: {0}")]
    Random(String),
}

/// A loaded secret. Its `Debug` does not print it, so it cannot leak into a log by accident.
#[derive(Clone, PartialEq, Eq)]
pub struct HttpSecret {
    hex: String,
}

impl fmt::Debug for HttpSecret {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("HttpSecret(..)")
    }
}

impl HttpSecret {
    /// The secret's text, 64 lowercase hex digits, for a header the user's host sends.
    pub fn as_str(&self) -> &str {
        &self.hex
    }

    /// Whether `candidate` is this secret, in time that depends only on the candidate's
    /// length, not on where it first differs (so a caller cannot guess it byte by byte).
    pub fn matches(&self, candidate: &[u8]) -> bool {
        let expected = self.hex.as_bytes();
        if candidate.len() != expected.len() {
            return false;
        }
        let difference = expected
            .iter()
            .zip(candidate)
            .fold(0u8, |acc, (left, right)| acc | (left ^ right));
        // `black_box` keeps the optimiser from turning the fold into an early exit.
        std::hint::black_box(difference) == 0
    }

    /// A secret from its text, when it is exactly 64 lowercase hex digits.
    fn parse(text: &str) -> Option<HttpSecret> {
        let text = text.strip_suffix('\n').unwrap_or(text);
        (text.len() == SECRET_HEX_LEN
            && text
                .bytes()
                .all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte)))
        .then(|| HttpSecret {
            hex: text.to_owned(),
        })
    }

    /// A new secret of [`SECRET_BYTES`] random bytes from the operating system.
    fn generate() -> Result<HttpSecret, SecretError> {
        let mut bytes = [0u8; SECRET_BYTES];
        getrandom::fill(&mut bytes).map_err(|err| SecretError::Random(err.to_string()))?;
        let hex = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
        Ok(HttpSecret { hex })
    }
}

/// Where the secret lives: `<config_home>/hookd/http.secret`, where `config_home` is
/// `$XDG_CONFIG_HOME` or `~/.config`, resolved as for hookd's other configuration files.
pub fn secret_path(config_home: &Path) -> PathBuf {
    config_home.join("hookd").join(SECRET_FILE_NAME)
}

/// Reads the secret at `path`, which must be a regular file (not followed through a
/// symbolic link) of the effective user, with no group or other permission bits, holding
/// 64 lowercase hex digits and at most a newline after them.
pub fn load(path: &Path) -> Result<HttpSecret, SecretError> {
    let io_error = |source| SecretError::Io {
        path: path.to_owned(),
        source,
    };
    let file = OpenOptions::new()
        .read(true)
        // Not through a link another user planted, and never blocking on a FIFO.
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|err| {
            if err.raw_os_error() == Some(libc::ELOOP) {
                SecretError::NotRegular {
                    path: path.to_owned(),
                }
            } else {
                io_error(err)
            }
        })?;
    let metadata = file.metadata().map_err(io_error)?;
    if !metadata.file_type().is_file() {
        return Err(SecretError::NotRegular {
            path: path.to_owned(),
        });
    }
    let euid = nix::unistd::geteuid().as_raw();
    if metadata.uid() != euid {
        return Err(SecretError::WrongOwner {
            path: path.to_owned(),
            owner: metadata.uid(),
            euid,
        });
    }
    let mode = metadata.mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(SecretError::Mode {
            path: path.to_owned(),
            mode,
        });
    }
    // One byte more than the longest valid text tells a too-long file from a valid one.
    let mut text = String::new();
    file.take(SECRET_HEX_LEN as u64 + 2)
        .read_to_string(&mut text)
        .map_err(|_| SecretError::Malformed {
            path: path.to_owned(),
        })?;
    HttpSecret::parse(&text).ok_or_else(|| SecretError::Malformed {
        path: path.to_owned(),
    })
}

/// Reads the secret at `path`, first creating it with a new random secret (mode 0600; a
/// missing parent directory is made 0700) when no file is there. An existing file that
/// fails [`load`]'s checks is an error, never replaced: it may be the user's, and a secret
/// that changed silently would break the host settings that carry it.
pub fn load_or_create(path: &Path) -> Result<HttpSecret, SecretError> {
    match load(path) {
        Err(SecretError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {}
        other => return other,
    }
    let io_error = |source| SecretError::Io {
        path: path.to_owned(),
        source,
    };
    let dir = path
        .parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(io_error)?;
    let secret = HttpSecret::generate()?;
    let temp = dir.join(format!(
        ".{SECRET_FILE_NAME}.hookd-{}.tmp",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&temp);
    let written = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)?;
        file.write_all(secret.as_str().as_bytes())?;
        file.write_all(b"\n")?;
        file.sync_all()?;
        drop(file);
        // `link` fails when the name exists: a secret another process made meanwhile wins.
        let linked = std::fs::hard_link(&temp, path);
        let _ = std::fs::remove_file(&temp);
        linked?;
        File::open(dir)?.sync_all()
    })();
    match written {
        Ok(()) => Ok(secret),
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => load(path),
        Err(err) => {
            let _ = std::fs::remove_file(&temp);
            Err(io_error(err))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode_of(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn secret_path_is_under_hookd_config_dir() {
        assert_eq!(
            secret_path(Path::new("/home/u/.config")),
            Path::new("/home/u/.config/hookd/http.secret")
        );
    }

    #[test]
    fn load_or_create_makes_a_private_random_secret_and_keeps_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = secret_path(&dir.path().join("config"));
        let first = load_or_create(&path).unwrap();
        assert_eq!(first.as_str().len(), SECRET_HEX_LEN);
        assert_eq!(mode_of(&path), 0o600);
        assert_eq!(mode_of(path.parent().unwrap()), 0o700);
        assert_eq!(load_or_create(&path).unwrap(), first);
        assert_eq!(load(&path).unwrap(), first);
        let other = tempfile::tempdir().unwrap();
        let second = load_or_create(&other.path().join(SECRET_FILE_NAME)).unwrap();
        assert_ne!(first, second, "two secrets drawn alike");
        let leftovers: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(leftovers, [SECRET_FILE_NAME]);
    }

    #[test]
    fn matches_only_the_exact_secret() {
        let secret = HttpSecret::parse(&"ab".repeat(32)).unwrap();
        assert!(secret.matches("ab".repeat(32).as_bytes()));
        assert!(!secret.matches("ab".repeat(31).as_bytes()));
        assert!(!secret.matches(format!("{}ac", "ab".repeat(31)).as_bytes()));
        assert!(!secret.matches(b""));
        assert!(!secret.matches("AB".repeat(32).as_bytes()));
        assert_eq!(format!("{secret:?}"), "HttpSecret(..)");
    }

    #[test]
    fn load_refuses_unsafe_or_malformed_files() {
        let dir = tempfile::tempdir().unwrap();
        let good = "0123456789abcdef".repeat(4);
        let write = |name: &str, text: &str, mode: u32| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            path
        };
        assert!(load(&write("ok", &good, 0o600)).is_ok());
        assert!(load(&write("nl", &format!("{good}\n"), 0o400)).is_ok());
        for (name, text, mode) in [
            ("group", good.as_str(), 0o640),
            ("other", good.as_str(), 0o604),
        ] {
            assert!(
                matches!(
                    load(&write(name, text, mode)),
                    Err(SecretError::Mode { .. })
                ),
                "{name}"
            );
        }
        let upper = good.to_uppercase();
        let short = &good[..63];
        let long = format!("{good}0");
        let two_newlines = format!("{good}\n\n");
        for (name, text) in [
            ("upper", upper.as_str()),
            ("short", short),
            ("long", long.as_str()),
            ("twonl", two_newlines.as_str()),
            ("empty", ""),
        ] {
            assert!(
                matches!(
                    load(&write(name, text, 0o600)),
                    Err(SecretError::Malformed { .. })
                ),
                "{name}"
            );
        }
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(dir.path().join("ok"), &link).unwrap();
        assert!(matches!(load(&link), Err(SecretError::NotRegular { .. })));
        assert!(matches!(
            load(dir.path()),
            Err(SecretError::NotRegular { .. }) | Err(SecretError::Mode { .. })
        ));
        // A bad existing file is reported, not replaced.
        let bad = write("bad", "nope", 0o600);
        assert!(load_or_create(&bad).is_err());
        assert_eq!(std::fs::read_to_string(&bad).unwrap(), "nope");
    }
}
