//! Recognising the relay's own wiring (`hookctl relay ...`) in a hook's command line.
//!
//! An agent CLI is wired to hookd by hook entries that run `hookctl relay EVENT`. Those entries
//! live in the same settings files hookd reads its hooks from, so hookd must never run them as
//! hooks: the relay would call the daemon, which would run the relay again. A command line is
//! relay wiring when any of its simple commands runs a program named `hookctl` (any directory,
//! quoted or not) whose subcommand is `relay`, after hookctl's global options, or the relay's
//! own binary, `hookd-relay`. Assignments
//! (`FOO=1 hookctl ...`), `env`, `exec`, `command`, `nohup` and `time` in front are looked
//! through, and so is a shell's `-c` script (`bash -c 'hookctl relay X'`).
//!
//! A project install writes two more forms into the project's shared settings file, so that
//! the file does the right thing on a machine without hookd ([`shared_relay_command`],
//! [`fallback_command`]): the relay entry says nothing there, and each moved hook keeps a
//! guarded copy that runs only where `hookd-relay` is not on `PATH`. hookd wrote both and
//! recognises them exactly ([`is_hookd_wiring`]); the copies are never run by hookd, whose
//! own copy of the hook is in the project's `.hookd/hooks.json`.

use crate::command::simple_commands;

/// The relay's program name, which project installs run from `PATH`.
pub const RELAY_PROGRAM: &str = "hookd-relay";

/// What a guarded copy starts with: its command runs only when `hookd-relay` is not on `PATH`
/// (`command -v` is a shell builtin: the check starts no process).
pub const FALLBACK_GUARD: &str = "command -v hookd-relay >/dev/null 2>&1 || { ";

/// What a guarded copy ends with. The new line ends a comment the original may end with.
pub const FALLBACK_END: &str = "\n}";

/// The script of a guarded copy of an exec-form hook (`command` and `args`, no shell):
/// `sh -c SCRIPT PROGRAM ARGS...` runs the program with its arguments as given, only when
/// `hookd-relay` is not on `PATH`.
pub const FALLBACK_EXEC_SCRIPT: &str =
    "command -v hookd-relay >/dev/null 2>&1 || exec \"$0\" \"$@\"";

/// The command line of a guarded copy of a hook whose command line is `original`.
pub fn fallback_command(original: &str) -> String {
    format!("{FALLBACK_GUARD}{original}{FALLBACK_END}")
}

/// The original command line of a guarded copy written by [`fallback_command`]; `None` for
/// any other line.
pub fn fallback_original(command: &str) -> Option<&str> {
    command
        .strip_prefix(FALLBACK_GUARD)?
        .strip_suffix(FALLBACK_END)
}

/// A relay entry's command line for a shared project file: `relay` (which runs
/// `hookd-relay ...`) when `hookd-relay` is on `PATH`, with no process more than `relay`
/// itself (`exec`), and an answer of nothing (exit 0, no output) where it is not, so a
/// machine without hookd sees no failed hook.
pub fn shared_relay_command(relay: &str) -> String {
    format!("{SHARED_RELAY_PREFIX}{relay}")
}

/// What a relay entry of a shared project file starts with ([`shared_relay_command`]).
pub const SHARED_RELAY_PREFIX: &str = "! command -v hookd-relay >/dev/null 2>&1 || exec ";

/// Whether `command` is a relay entry in the shared form, which says nothing where
/// `hookd-relay` is not on `PATH`.
pub fn is_shared_relay_command(command: &str) -> bool {
    command.starts_with(SHARED_RELAY_PREFIX) && is_relay_command(command)
}

/// Whether `command` is hookd's own wiring: a relay entry ([`is_relay_command`]) or a
/// guarded copy ([`fallback_original`]). Neither is ever run by hookd as a hook.
pub fn is_hookd_wiring(command: &str) -> bool {
    is_relay_command(command) || fallback_original(command).is_some()
}

/// Whether `command` invokes `hookctl relay` (see the module documentation).
pub fn is_relay_command(command: &str) -> bool {
    is_relay_line(command, 0)
}

/// How deep `sh -c '... sh -c ...'` is followed.
const MAX_DEPTH: usize = 3;

fn is_relay_line(line: &str, depth: usize) -> bool {
    simple_commands(line)
        .iter()
        .any(|words| is_relay_words(words, depth))
}

/// Words that may start a simple command without being its program.
const PREFIX_WORDS: [&str; 5] = ["exec", "command", "nohup", "time", "!"];

/// `env`'s options that take a separate value.
const ENV_VALUE_OPTIONS: [&str; 4] = ["-u", "--unset", "-C", "--chdir"];

fn is_relay_words(words: &[String], depth: usize) -> bool {
    let mut rest = words;
    loop {
        let Some((first, tail)) = rest.split_first() else {
            return false;
        };
        if is_assignment(first) || PREFIX_WORDS.contains(&first.as_str()) {
            rest = tail;
        } else if base_name(first) == "env" {
            rest = tail;
            while let Some((option, tail)) = rest.split_first() {
                if ENV_VALUE_OPTIONS.contains(&option.as_str()) {
                    rest = tail.get(1..).unwrap_or(&[]);
                } else if option.starts_with('-') || is_assignment(option) {
                    rest = tail;
                } else {
                    break;
                }
            }
        } else {
            break;
        }
    }
    let Some((program, args)) = rest.split_first() else {
        return false;
    };
    match base_name(program) {
        "hookctl" => hookctl_subcommand(args) == Some("relay"),
        "hookd-relay" => true,
        "bash" | "sh" | "dash" | "zsh" | "ksh" if depth < MAX_DEPTH => {
            shell_script(args).is_some_and(|script| is_relay_line(script, depth + 1))
        }
        _ => false,
    }
}

/// The subcommand of a hookctl invocation: the first word after its global options
/// (`--socket PATH`, `--socket=PATH`, flags).
fn hookctl_subcommand(args: &[String]) -> Option<&str> {
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        if arg == "--socket" {
            args.next();
        } else if !arg.starts_with('-') {
            return Some(arg);
        }
    }
    None
}

/// The script of `sh [options] -c SCRIPT`, where `-c` may be bundled (`-ec`).
fn shell_script(args: &[String]) -> Option<&str> {
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let is_option = arg.starts_with('-') && arg != "-" && arg != "--";
        if !is_option {
            return None;
        }
        if !arg.starts_with("--") && arg.contains('c') {
            return args.next().map(String::as_str);
        }
    }
    None
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        let mut chars = name.chars();
        chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

fn base_name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relay_commands_are_recognised() {
        let cases = [
            ("hookctl relay BeforeTool", true),
            ("/usr/local/bin/hookctl relay X --dialect claude", true),
            ("FOO=1 hookctl relay X", true),
            ("exec hookctl relay X", true),
            ("\"hookctl\" relay X", true),
            ("'/opt/hookd bin/hookctl' relay AfterTool", true),
            (
                "$HOME/.cargo/bin/hookctl relay PreToolUse --dialect claude",
                true,
            ),
            ("\"$HOME/.cargo/bin/hookctl\" relay PreToolUse", true),
            ("hookctl --socket /run/h.sock relay BeforeTool", true),
            ("hookctl --socket=/run/h.sock relay BeforeTool", true),
            ("env -u X A=1 hookctl relay Y", true),
            ("/usr/bin/env hookctl relay Y", true),
            ("nohup command hookctl relay Y", true),
            ("true && hookctl relay BeforeTool", true),
            ("cd /srv/p; hookctl relay BeforeTool 2>/dev/null", true),
            ("bash -c 'hookctl relay BeforeTool'", true),
            ("hookd-relay BeforeTool", true),
            (
                "/home/ada/.cargo/bin/hookd-relay PreToolUse --dialect claude",
                true,
            ),
            ("hookd-relay-wrapper.sh BeforeTool", false),
            ("sh -ec \"exec hookctl relay X\"", true),
            ("hookctl\\ relay X", false),
            ("hookctl list", false),
            ("hookctl", false),
            ("hookctl --socket relay list", false),
            ("echo hookctl relay", false),
            ("myhookctl relay X", false),
            ("hookctl-relay X", false),
            ("./hooks/relay.sh", false),
            ("# hookctl relay X", false),
            ("echo 'hookctl relay X'", false),
            ("bash ./hookctl-relay.sh", false),
            ("bash -x script.sh", false),
            ("", false),
        ];
        for (command, expected) in cases {
            assert_eq!(is_relay_command(command), expected, "{command:?}");
        }
    }

    #[test]
    fn shared_project_wiring_is_recognised_exactly() {
        let relay = shared_relay_command("hookd-relay PreToolUse --dialect claude");
        assert_eq!(
            relay,
            "! command -v hookd-relay >/dev/null 2>&1 || exec hookd-relay PreToolUse --dialect claude"
        );
        assert!(is_relay_command(&relay));
        assert!(is_shared_relay_command(&relay));
        assert!(!is_shared_relay_command("hookd-relay PreToolUse"));
        assert!(!is_shared_relay_command(
            "! command -v hookd-relay >/dev/null 2>&1 || exec ./x"
        ));
        for original in ["./guard.sh", "python3 g.py # why\n", "a && { b; }", ""] {
            let copy = fallback_command(original);
            assert_eq!(fallback_original(&copy), Some(original), "{original:?}");
            assert!(is_hookd_wiring(&copy), "{copy:?}");
            // A copy is not a relay entry: it names hookd-relay only as `command -v`'s operand.
            assert_eq!(
                is_relay_command(&copy),
                is_relay_command(original),
                "{copy:?}"
            );
        }
        // Only hookd's exact text is a copy: a hook of the user's that looks alike is a hook.
        for lookalike in [
            "command -v hookd-relay >/dev/null 2>&1 || { ./guard.sh; }",
            "command -v hookd-relay >/dev/null || { ./guard.sh\n}",
            " command -v hookd-relay >/dev/null 2>&1 || { ./guard.sh\n}",
            "./guard.sh",
        ] {
            assert_eq!(fallback_original(lookalike), None, "{lookalike:?}");
            assert!(!is_hookd_wiring(lookalike), "{lookalike:?}");
        }
    }
}
