//! Where the daemon's socket lives, resolved the same way by the daemon and its clients.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The environment variable that names the socket explicitly.
pub const SOCKET_ENV_VAR: &str = "HOOKD_SOCKET";

/// The directory holding the socket, under the runtime directory (or `/tmp` as `hookd-<uid>`).
pub const SOCKET_DIR_NAME: &str = "hookd";

/// The socket's file name.
pub const SOCKET_FILE_NAME: &str = "hookd.sock";

/// Resolves the socket path from an environment lookup and the user's id.
///
/// In order: `$HOOKD_SOCKET` if set and non-empty (used as given); else
/// `$XDG_RUNTIME_DIR/hookd/hookd.sock` if that variable is an absolute path (the XDG spec
/// says to ignore a relative one); else `/tmp/hookd-<uid>/hookd.sock`. The lookup is a
/// parameter so that callers with their own environment (and tests) need not touch the
/// process's.
pub fn resolve_socket_path(env: impl Fn(&str) -> Option<OsString>, uid: u32) -> PathBuf {
    if let Some(explicit) = env(SOCKET_ENV_VAR).filter(|value| !value.is_empty()) {
        return PathBuf::from(explicit);
    }
    let runtime_dir = env("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute());
    match runtime_dir {
        Some(dir) => dir.join(SOCKET_DIR_NAME).join(SOCKET_FILE_NAME),
        None => Path::new("/tmp")
            .join(format!("{SOCKET_DIR_NAME}-{uid}"))
            .join(SOCKET_FILE_NAME),
    }
}

/// The socket path for this process: [`resolve_socket_path`] with the process environment
/// and real user id.
pub fn default_socket_path() -> PathBuf {
    resolve_socket_path(
        |name| std::env::var_os(name),
        nix::unistd::getuid().as_raw(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(env: &[(&str, &str)], uid: u32, expected: &str) {
        let lookup = |name: &str| {
            env.iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| OsString::from(value))
        };
        assert_eq!(
            resolve_socket_path(lookup, uid),
            PathBuf::from(expected),
            "env: {env:?}"
        );
    }

    #[test]
    fn resolution_order() {
        check(&[], 1000, "/tmp/hookd-1000/hookd.sock");
        check(
            &[("XDG_RUNTIME_DIR", "/run/user/1000")],
            1000,
            "/run/user/1000/hookd/hookd.sock",
        );
        check(
            &[
                ("HOOKD_SOCKET", "/srv/h.sock"),
                ("XDG_RUNTIME_DIR", "/run/user/1000"),
            ],
            1000,
            "/srv/h.sock",
        );
        check(&[("HOOKD_SOCKET", "relative.sock")], 0, "relative.sock");
        check(
            &[("HOOKD_SOCKET", ""), ("XDG_RUNTIME_DIR", "/run/user/7")],
            7,
            "/run/user/7/hookd/hookd.sock",
        );
        check(&[("XDG_RUNTIME_DIR", "")], 7, "/tmp/hookd-7/hookd.sock");
        check(
            &[("XDG_RUNTIME_DIR", "run/user/7")],
            7,
            "/tmp/hookd-7/hookd.sock",
        );
    }
}
