//! Telling systemd how the daemon is doing, over its notify socket (`sd_notify(3)`).
//!
//! [`SystemdNotifier`] implements [`hookd_server::Lifecycle`]: the server calls it when the
//! registry is loaded and the listener accepts (`READY=1`), around reloads (`RELOADING=1`,
//! then `READY=1`), when a graceful stop begins (`STOPPING=1`), and from its accept loop for
//! the watchdog (`WATCHDOG=1`). Each message carries a `STATUS=` line that `systemctl status`
//! shows. Without `NOTIFY_SOCKET` there is no service manager to tell, and no notifier.
//!
//! The variables systemd sets for the daemon itself (`NOTIFY_SOCKET`, `WATCHDOG_*`,
//! `LISTEN_*`) are removed from the environment the daemon hands to hooks by
//! [`remove_service_manager_variables`]: a hook that could reach the notify socket could claim
//! readiness or feed the watchdog for a wedged daemon.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use sd_notify::NotifyState;

/// Sends lifecycle notifications to systemd's notify socket.
#[derive(Debug)]
pub struct SystemdNotifier {
    watchdog_interval: Option<Duration>,
    /// Set after the first failed send, so a broken socket is reported once, not every tick.
    failed_once: AtomicBool,
}

impl SystemdNotifier {
    /// A notifier when `env` (the daemon's environment) names a notify socket, else `None`.
    /// `pid` is the daemon's process id, checked against `WATCHDOG_PID`.
    pub fn from_env(env: &HashMap<String, String>, pid: u32) -> Option<SystemdNotifier> {
        env.get("NOTIFY_SOCKET").filter(|path| !path.is_empty())?;
        Some(SystemdNotifier {
            watchdog_interval: watchdog_interval(env, pid),
            failed_once: AtomicBool::new(false),
        })
    }

    /// Sends one datagram with every state in `states`.
    fn send(&self, states: &[NotifyState<'_>]) {
        if let Err(err) = sd_notify::notify(states) {
            if self.failed_once.swap(true, Ordering::Relaxed) {
                tracing::debug!(%err, "cannot notify systemd");
            } else {
                tracing::warn!(%err, "cannot notify systemd; readiness and watchdog may fail");
            }
        }
    }
}

impl hookd_server::Lifecycle for SystemdNotifier {
    fn ready(&self, status: &str) {
        let status = one_line(status);
        self.send(&[NotifyState::Ready, NotifyState::Status(&status)]);
    }

    fn reloading(&self) {
        let mut states = vec![
            NotifyState::Reloading,
            NotifyState::Status("reloading settings"),
        ];
        // systemd 253 and newer match a reload to its request by this timestamp (and
        // `Type=notify-reload` requires it); older versions ignore the field.
        match NotifyState::monotonic_usec_now() {
            Ok(now) => states.push(now),
            Err(err) => tracing::debug!(%err, "cannot read the monotonic clock"),
        }
        self.send(&states);
    }

    fn stopping(&self) {
        self.send(&[
            NotifyState::Stopping,
            NotifyState::Status("stopping: finishing in-flight runs"),
        ]);
    }

    fn watchdog(&self) {
        self.send(&[NotifyState::Watchdog]);
    }

    fn watchdog_interval(&self) -> Option<Duration> {
        self.watchdog_interval
    }

    fn status(&self, status: &str) {
        let status = one_line(status);
        self.send(&[NotifyState::Status(&status)]);
    }
}

/// How often to ping the watchdog: half of `WATCHDOG_USEC`, as `sd_watchdog_enabled(3)`
/// recommends, when the watchdog is meant for this process (`WATCHDOG_PID` is our pid or
/// unset). `None` when there is no watchdog.
pub fn watchdog_interval(env: &HashMap<String, String>, pid: u32) -> Option<Duration> {
    let usec: u64 = env.get("WATCHDOG_USEC")?.trim().parse().ok()?;
    if usec == 0 {
        return None;
    }
    if let Some(watchdog_pid) = env.get("WATCHDOG_PID").filter(|value| !value.is_empty()) {
        if watchdog_pid.trim().parse::<u32>().ok()? != pid {
            return None;
        }
    }
    Some(Duration::from_micros(usec / 2))
}

/// Removes the variables systemd sets for the daemon itself from `env`, so that no hook ever
/// inherits them (the engine strips them from hook environments too; this keeps them out of
/// the daemon's configuration altogether).
pub fn remove_service_manager_variables(env: &mut HashMap<String, String>) {
    for name in hookd_core::env::SYSTEMD_VARIABLES {
        env.remove(name);
    }
}

/// `STATUS=` is one line of the notification message: a newline would end it early.
fn one_line(status: &str) -> String {
    status
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect()
    }

    #[test]
    fn watchdog_interval_is_half_the_period_for_this_process() {
        fn check(pairs: &[(&str, &str)], expected: Option<u64>) {
            let actual = watchdog_interval(&env(pairs), 42).map(|d| d.as_millis() as u64);
            assert_eq!(actual, expected, "{pairs:?}");
        }
        check(&[], None);
        check(&[("WATCHDOG_USEC", "400000")], Some(200));
        check(&[("WATCHDOG_USEC", "30000000")], Some(15_000));
        check(
            &[("WATCHDOG_USEC", "400000"), ("WATCHDOG_PID", "42")],
            Some(200),
        );
        check(
            &[("WATCHDOG_USEC", "400000"), ("WATCHDOG_PID", "")],
            Some(200),
        );
        check(&[("WATCHDOG_USEC", "400000"), ("WATCHDOG_PID", "43")], None);
        check(&[("WATCHDOG_USEC", "400000"), ("WATCHDOG_PID", "x")], None);
        check(&[("WATCHDOG_USEC", "0")], None);
        check(&[("WATCHDOG_USEC", "-5")], None);
        check(&[("WATCHDOG_USEC", "soon")], None);
        check(&[("WATCHDOG_PID", "42")], None);
    }

    #[test]
    fn notifier_exists_only_with_a_notify_socket() {
        fn check(pairs: &[(&str, &str)], expected: Option<Option<u64>>) {
            let actual = SystemdNotifier::from_env(&env(pairs), 7)
                .map(|n| n.watchdog_interval.map(|d| d.as_millis() as u64));
            assert_eq!(actual, expected, "{pairs:?}");
        }
        check(&[], None);
        check(&[("NOTIFY_SOCKET", "")], None);
        check(&[("WATCHDOG_USEC", "1000000")], None);
        check(
            &[("NOTIFY_SOCKET", "/run/user/1/systemd/notify")],
            Some(None),
        );
        check(
            &[("NOTIFY_SOCKET", "/n"), ("WATCHDOG_USEC", "1000000")],
            Some(Some(500)),
        );
    }

    #[test]
    fn service_manager_variables_are_removed() {
        let mut actual = env(&[
            ("HOME", "/home/ada"),
            ("LISTEN_FDS", "1"),
            ("LISTEN_PID", "7"),
            ("LISTEN_FDNAMES", "hookd.socket"),
            ("NOTIFY_SOCKET", "/n"),
            ("WATCHDOG_USEC", "1"),
            ("WATCHDOG_PID", "7"),
            ("INVOCATION_ID", "abc"),
        ]);
        remove_service_manager_variables(&mut actual);
        assert_eq!(
            actual,
            env(&[("HOME", "/home/ada"), ("INVOCATION_ID", "abc")])
        );
    }

    #[test]
    fn status_is_one_line() {
        fn check(input: &str, expected: &str) {
            assert_eq!(one_line(input), expected, "{input:?}");
        }
        check(
            "1 project registry loaded, 2 hooks",
            "1 project registry loaded, 2 hooks",
        );
        check("a\nREADY=1", "a READY=1");
        check("tab\there\r", "tab here ");
        check("", "");
    }
}
