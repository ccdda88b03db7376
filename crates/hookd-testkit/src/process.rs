//! Children of a test: killed when dropped, awaited by connecting, and the scripts they run;
//! and [`DaemonProcess`], the daemon as a process of its own (the `hookd` binary, or a wrapper
//! that execs it), next to the in-process [`crate::Daemon`].

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::env::Hermetic;

/// How long a daemon process may take to listen.
const LISTEN_PATIENCE: Duration = Duration::from_secs(30);

/// The files of a daemon run as a process of its own: a temp dir with a home (and its
/// `.gemini/`), a project, and the socket's path, `run/hookd.sock` (its private directory is
/// made by the daemon). A test writes what it needs, builds the command with
/// [`DaemonProcess::hookd`] (or [`DaemonProcess::command`] for a wrapper), adds its
/// arguments, and starts it with [`DaemonProcess::spawn`].
pub struct DaemonProcess {
    /// Holds the temp dir alive; everything below lives inside it.
    pub dir: tempfile::TempDir,
    /// `HOME` of the daemon.
    pub home: PathBuf,
    /// A project dir (empty).
    pub project: PathBuf,
    /// The socket the daemon listens on.
    pub socket: PathBuf,
}

impl DaemonProcess {
    /// The temp dir, home and project, with `user_settings` (when given) as the home's Gemini
    /// CLI settings.
    pub fn prepare(user_settings: Option<&serde_json::Value>) -> DaemonProcess {
        let dir = tempfile::tempdir().expect("temp dir");
        let home = dir.path().join("home");
        let project = dir.path().join("project");
        std::fs::create_dir_all(home.join(".gemini")).expect("home");
        std::fs::create_dir_all(&project).expect("project");
        if let Some(settings) = user_settings {
            crate::write(&home.join(".gemini/settings.json"), &settings.to_string());
        }
        let socket = dir.path().join("run/hookd.sock");
        DaemonProcess {
            dir,
            home,
            project,
            socket,
        }
    }

    /// A command running `program` with nothing of the caller's environment but `PATH`
    /// ([`Hermetic::isolated`] in this home and temp dir) and no stdin, stdout or stderr; the
    /// test adds the arguments (the socket's included) and any output it reads.
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut command = Command::new(program);
        command
            .isolated(&self.home, self.dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        command
    }

    /// [`DaemonProcess::command`] for the daemon binary `hookd` (a test passes its
    /// `env!("CARGO_BIN_EXE_hookd")`), listening on this socket.
    pub fn hookd(&self, hookd: impl AsRef<OsStr>) -> Command {
        let mut command = self.command(hookd);
        command.arg("--socket").arg(&self.socket);
        command
    }

    /// Starts `command` and returns once something accepts connections on the socket (by
    /// connecting, never by sleeping); the child is killed when the test drops it. Panics
    /// when it exits before it listens, or does not listen within 30 s.
    pub fn spawn(&self, command: &mut Command) -> KillOnDrop {
        let mut child = KillOnDrop(command.spawn().expect("start the daemon"));
        let deadline = Instant::now() + LISTEN_PATIENCE;
        while std::os::unix::net::UnixStream::connect(&self.socket).is_err() {
            if let Some(status) = child.0.try_wait().expect("status") {
                panic!("the daemon exited with {status} before it listened");
            }
            assert!(
                Instant::now() < deadline,
                "nothing listens on {} after {LISTEN_PATIENCE:?}",
                self.socket.display()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        child
    }
}

/// A child process killed (and reaped) when the test drops it, so a failing test leaves no
/// daemon behind.
pub struct KillOnDrop(pub Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if self.0.try_wait().ok().flatten().is_none() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// Waits until something accepts connections on `socket`, for at most `timeout`: readiness
/// by connecting, never by sleeping a guessed time. Panics when it never does.
pub fn wait_for_socket(socket: &Path, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    while std::os::unix::net::UnixStream::connect(socket).is_err() {
        assert!(
            Instant::now() < deadline,
            "nothing listens on {} after {timeout:?}",
            socket.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Writes an executable script (mode 755), creating its parent directories.
pub fn write_script(path: &Path, contents: &str) {
    crate::write(path, contents);
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}
