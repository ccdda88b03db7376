//! Which hooks hookd runs for an event a host CLI relayed to it (`hookctl relay`).
//!
//! A host CLI that relays an event to hookd has already run, itself, the hooks of every file
//! it reads. If hookd ran them too, each would run twice. So for a relayed event hookd runs
//! only the hooks of files that host does not read:
//!
//! | file | relayed by Gemini CLI | relayed by Claude Code | not relayed |
//! |---|---|---|---|
//! | Gemini CLI's settings (system defaults, system, user, project) | skipped | run | run |
//! | Gemini CLI's extensions | skipped | run | run |
//! | hookd's own hooks files (user, project) | run | run | run |
//! | a host's own settings files read as layers (Claude Code's with `hookd --claude-settings`, Copilot CLI's with `--copilot-settings`) | run | skipped by that host | run |
//!
//! A skipped hook still takes part in de-duplication: it runs, only in the host, so a copy
//! of the same `name:command` in one of hookd's files is not run a second time.

use crate::dialect::Dialect;
use crate::model::{LayerFile, Source};

/// Whether hookd runs a hook of layer `source`, defined in a file of kind `file`, for an
/// event relayed by `relayed_by` (`None`: a client that is no host's relay, which gets every
/// hook). See the module documentation for the table.
pub fn runs_in_hookd(source: Source, file: LayerFile, relayed_by: Option<Dialect>) -> bool {
    relayed_by.is_none_or(|host| !host.run().runs_layer(source, file))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_host_skips_the_files_it_runs_itself() {
        use LayerFile::{Gemini, Hookd};
        let claude_file = Dialect::CLAUDE.layer_file();
        use Source::{Extension, Project, System, SystemDefaults, User};
        let gemini = Some(Dialect::GEMINI);
        let claude = Some(Dialect::CLAUDE);
        let codex = Some(Dialect::CODEX);
        let copilot = Some(Dialect::COPILOT);
        let copilot_file = Dialect::COPILOT.layer_file();
        // (source, file, relayed by, runs in hookd)
        let cases = [
            (SystemDefaults, Gemini, gemini, false),
            (System, Gemini, gemini, false),
            (User, Gemini, gemini, false),
            (Project, Gemini, gemini, false),
            (Extension, Gemini, gemini, false),
            (User, Hookd, gemini, true),
            (Project, Hookd, gemini, true),
            (User, claude_file, gemini, true),
            (Project, claude_file, gemini, true),
            (SystemDefaults, Gemini, claude, true),
            (System, Gemini, claude, true),
            (User, Gemini, claude, true),
            (Project, Gemini, claude, true),
            (Extension, Gemini, claude, true),
            (User, Hookd, claude, true),
            (Project, Hookd, claude, true),
            (User, claude_file, claude, false),
            (Project, claude_file, claude, false),
            (System, Gemini, None, true),
            (Project, Gemini, None, true),
            (Extension, Gemini, None, true),
            (Project, Hookd, None, true),
            (User, claude_file, None, true),
            (User, copilot_file, copilot, false),
            (Project, copilot_file, copilot, false),
            (User, copilot_file, gemini, true),
            (Project, copilot_file, claude, true),
            (Project, copilot_file, codex, true),
            (User, copilot_file, None, true),
            // Copilot runs a repository's Claude Code settings itself, not the user's.
            (User, claude_file, copilot, true),
            (Project, claude_file, copilot, false),
            (User, Hookd, copilot, true),
            (Project, Gemini, copilot, true),
        ];
        for (source, file, host, expected) in cases {
            assert_eq!(
                runs_in_hookd(source, file, host),
                expected,
                "{source:?} {file:?} {host:?}"
            );
        }
    }

    #[test]
    fn hosts_parse_their_wire_spelling_only() {
        let cases = [
            ("gemini", Some(Dialect::GEMINI)),
            ("claude", Some(Dialect::CLAUDE)),
            ("Gemini", None),
            ("cursor", None),
            ("", None),
        ];
        for (text, expected) in cases {
            assert_eq!(Dialect::parse(text), expected, "{text:?}");
            if let Some(host) = expected {
                assert_eq!(host.as_str(), text);
            }
        }
    }
}
