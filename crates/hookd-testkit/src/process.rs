//! Children of a test: killed when dropped, awaited by connecting, and the scripts they run.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

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
