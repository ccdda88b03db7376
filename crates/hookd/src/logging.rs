//! Logging to stderr in the shape that suits where stderr goes.
//!
//! - A terminal: colours and timestamps, for a person watching.
//! - The systemd journal (`JOURNAL_STREAM` names stderr's device and inode, as
//!   `systemd.exec(5)` describes): no timestamps and no colours, since the journal stamps every
//!   line itself, and each line starts with its syslog priority (`<3>` error … `<7>` debug),
//!   which journald turns into the entry's priority, so `journalctl -p warning` works.
//! - Another destination chosen by the service manager (`INVOCATION_ID` set, stderr not the
//!   journal): no timestamps and no colours, with the level as a word.
//! - Anything else (a file, a pipe): timestamps, no colours.
//!
//! The journal format is a small [`FormatEvent`] rather than the `tracing-journald` crate:
//! it needs no extra dependency or journald socket, works for whatever captures stderr under
//! systemd, and keeps the lines the same as in every other mode apart from their prefix.

use std::fmt;

use tracing::{Event, Level, Subscriber};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, FormattedFields};
use tracing_subscriber::registry::LookupSpan;

/// How log lines are shaped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogStyle {
    /// A terminal: colours and timestamps.
    Terminal,
    /// stderr is the journal: priority prefixes, no timestamps, no colours.
    Journal,
    /// Under a service manager that is not writing to the journal: no timestamps, no colours.
    Service,
    /// A file or pipe: timestamps, no colours.
    Plain,
}

/// What [`detect_style`] looks at, gathered by [`StyleInputs::from_process`].
#[derive(Clone, Debug, Default)]
pub struct StyleInputs {
    /// `JOURNAL_STREAM`: `<device>:<inode>` of the journal stream systemd connected.
    pub journal_stream: Option<String>,
    /// stderr's device and inode numbers, when they could be read.
    pub stderr_id: Option<(u64, u64)>,
    /// Whether `INVOCATION_ID` is set (systemd sets it for every service it starts).
    pub invocation_id: bool,
    /// Whether stderr is a terminal.
    pub terminal: bool,
}

impl StyleInputs {
    /// Reads the inputs from this process.
    pub fn from_process() -> StyleInputs {
        // `dev_t` and `ino_t` are not u64 on every Unix; the casts are no-ops on Linux.
        #[allow(clippy::unnecessary_cast)]
        let stderr_id = nix::sys::stat::fstat(std::io::stderr())
            .ok()
            .map(|stat| (stat.st_dev as u64, stat.st_ino as u64));
        StyleInputs {
            journal_stream: std::env::var("JOURNAL_STREAM").ok(),
            stderr_id,
            invocation_id: std::env::var_os("INVOCATION_ID").is_some_and(|id| !id.is_empty()),
            terminal: std::io::IsTerminal::is_terminal(&std::io::stderr()),
        }
    }
}

/// Chooses the log style. `JOURNAL_STREAM` alone is not enough: it is inherited by children
/// whose stderr was redirected, so it counts only when it names stderr itself.
pub fn detect_style(inputs: &StyleInputs) -> LogStyle {
    let journal = inputs
        .journal_stream
        .as_deref()
        .and_then(parse_journal_stream)
        .is_some_and(|id| Some(id) == inputs.stderr_id);
    if journal {
        LogStyle::Journal
    } else if inputs.terminal {
        LogStyle::Terminal
    } else if inputs.invocation_id {
        LogStyle::Service
    } else {
        LogStyle::Plain
    }
}

/// Parses `JOURNAL_STREAM`'s `<device>:<inode>` (both decimal).
fn parse_journal_stream(value: &str) -> Option<(u64, u64)> {
    let (device, inode) = value.split_once(':')?;
    Some((device.trim().parse().ok()?, inode.trim().parse().ok()?))
}

/// Installs the global subscriber writing to stderr; `level` (an `EnvFilter` directive) wins
/// over `RUST_LOG`, default `info`.
pub fn init(level: Option<&str>) {
    let filter = match level {
        Some(level) => EnvFilter::new(level),
        None => EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match detect_style(&StyleInputs::from_process()) {
        LogStyle::Terminal => builder.with_ansi(true).init(),
        LogStyle::Journal => builder.with_ansi(false).event_format(JournalFormat).init(),
        LogStyle::Service => builder.with_ansi(false).without_time().init(),
        LogStyle::Plain => builder.with_ansi(false).init(),
    }
}

/// The syslog priority journald reads from a `<N>` line prefix (`sd-daemon(3)`).
fn priority(level: &Level) -> u8 {
    match *level {
        Level::ERROR => 3,
        Level::WARN => 4,
        Level::INFO => 6,
        Level::DEBUG | Level::TRACE => 7,
    }
}

/// One line per event: `<priority>spans: target: message fields`, without time or colours.
#[derive(Clone, Copy, Debug, Default)]
pub struct JournalFormat;

impl<S, N> FormatEvent<S, N> for JournalFormat
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let metadata = event.metadata();
        write!(writer, "<{}>", priority(metadata.level()))?;
        if let Some(scope) = ctx.event_scope() {
            for span in scope.from_root() {
                write!(writer, "{}", span.name())?;
                let extensions = span.extensions();
                if let Some(fields) = extensions.get::<FormattedFields<N>>() {
                    if !fields.is_empty() {
                        write!(writer, "{{{fields}}}")?;
                    }
                }
                write!(writer, ": ")?;
            }
        }
        write!(writer, "{}: ", metadata.target())?;
        ctx.field_format().format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[test]
    fn style_follows_where_stderr_goes() {
        fn check(inputs: StyleInputs, expected: LogStyle) {
            assert_eq!(detect_style(&inputs), expected, "{inputs:?}");
        }
        let journal = |stream: &str, stderr_id| StyleInputs {
            journal_stream: Some(stream.to_owned()),
            stderr_id,
            ..StyleInputs::default()
        };
        check(journal("8:1234", Some((8, 1234))), LogStyle::Journal);
        check(journal(" 8 : 1234 ", Some((8, 1234))), LogStyle::Journal);
        // Inherited from a parent whose journal stream is not our stderr.
        check(journal("8:1234", Some((8, 999))), LogStyle::Plain);
        check(journal("8:1234", None), LogStyle::Plain);
        check(journal("garbage", Some((8, 1234))), LogStyle::Plain);
        check(journal("8:", Some((8, 0))), LogStyle::Plain);
        check(
            StyleInputs {
                invocation_id: true,
                ..journal("8:1234", Some((8, 1234)))
            },
            LogStyle::Journal,
        );
        check(
            StyleInputs {
                invocation_id: true,
                ..StyleInputs::default()
            },
            LogStyle::Service,
        );
        check(
            StyleInputs {
                terminal: true,
                invocation_id: true,
                ..StyleInputs::default()
            },
            LogStyle::Terminal,
        );
        check(StyleInputs::default(), LogStyle::Plain);
    }

    /// Collects everything the subscriber writes.
    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Buffer {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Logs with the journal format and returns the text written.
    fn journal_output(log: impl FnOnce()) -> String {
        let buffer = Buffer::default();
        let writer = buffer.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(Level::TRACE)
            .with_ansi(false)
            .event_format(JournalFormat)
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::with_default(subscriber, log);
        let bytes = buffer.0.lock().unwrap().clone();
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn journal_lines_carry_the_priority_and_no_time() {
        fn check(log: fn(), expected: &str) {
            assert_eq!(journal_output(log), expected);
        }
        check(
            || tracing::error!(target: "hookd", "cannot bind"),
            "<3>hookd: cannot bind\n",
        );
        check(
            || tracing::warn!(target: "hookd", code = 7, "slow"),
            "<4>hookd: slow code=7\n",
        );
        check(
            || tracing::info!(target: "hookd", socket = "/run/h.sock", "listening"),
            "<6>hookd: listening socket=\"/run/h.sock\"\n",
        );
        check(|| tracing::debug!(target: "x", "d"), "<7>x: d\n");
        check(|| tracing::trace!(target: "x", "t"), "<7>x: t\n");
        check(
            || {
                let span = tracing::info_span!("conn", id = 3);
                let _entered = span.enter();
                tracing::info!(target: "hookd", "hello");
            },
            "<6>conn{id=3}: hookd: hello\n",
        );
    }
}
