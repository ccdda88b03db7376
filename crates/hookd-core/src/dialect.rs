//! Claude Code's hook language (its "dialect"), translated to and from Gemini CLI's.
//!
//! hookd's model is Gemini CLI's: its events (`BeforeTool`, `AfterAgent`, ...), its tool
//! names (`run_shell_command`, `replace`, ...) and its output fields (`decision`,
//! `hookSpecificOutput.tool_input`, ...). Claude Code speaks of the same things in other
//! words: `PreToolUse`, `Bash`, `hookSpecificOutput.permissionDecision`. Everything here is a
//! pure translation between the two, used in four places:
//!
//! - **Claude Code hosting hookd** (`hookctl relay EVENT --dialect claude`): Claude Code's
//!   stdin object becomes a Gemini event ([`claude_input_to_gemini`]); the daemon's aggregate
//!   becomes Claude Code's stdout and exit code ([`answer_for_claude_input`]).
//! - **Gemini CLI hosting hookd** (`hookctl relay EVENT`): the aggregate becomes what one
//!   Gemini command hook prints ([`answer_for_gemini`]).
//! - **Claude-dialect hooks** (`"dialect": "claude"` on a hook entry): the hook reads a Claude
//!   payload ([`gemini_payload_to_claude`]), and what it prints or exits with is interpreted
//!   by Claude Code's rules ([`claude_hook_result`]) into Gemini output fields, so Gemini's
//!   aggregation applies unchanged. [`claude_hook_applies`] tells which firings such a hook
//!   takes part in where Gemini events are coarser than Claude's (Stop and SubagentStop are
//!   both AfterAgent).
//! - **Settings**: Claude Code's `hooks` object becomes a Gemini one
//!   ([`convert_claude_settings`]), either as a layer whose hooks keep speaking Claude at run
//!   time, or for `hookctl migrate --from-claude`, which writes plain Gemini hooks.
//!
//! - **Claude Code's merge** ([`aggregate_claude`]): the hooks hookd runs for an event
//!   Claude Code relayed are merged by Claude Code's precedence, with only the winning
//!   decision's reason, not by Gemini CLI's OR-merge.
//!
//! [`is_relay_command`] recognises the relay's own wiring in a settings file, so that the
//! registry never runs it as a hook (no recursion).
//!
//! Every mapping is listed in `docs/dialects.md`. The translation of a Claude stdin object
//! keeps what it renamed in `claude_*` fields (`claude_event`, and `claude_tool_name`,
//! `claude_tool_input`, `claude_tool_response` when the Gemini form cannot be turned back into
//! the original), so a Claude hook reading the translated payload back sees the object Claude
//! Code sent, apart from the base fields hookd always sends (`session_id`,
//! `transcript_path`, `cwd`) and `timestamp`.

mod aggregate;
mod answer;
mod convert;
mod events;
mod matchers;
mod names;
mod payload;
mod relay;
mod result;

pub use aggregate::aggregate_claude;
pub use answer::{HostAnswer, answer_for_claude, answer_for_claude_input, answer_for_gemini};
pub use convert::{
    Conversion, ConversionProblem, ConvertOptions, ProblemKind, Purpose, convert_claude_hooks,
    convert_claude_settings,
};
pub use events::{
    BlockStyle, claude_block_style, claude_plain_stdout_field, claude_specific_fields,
};
pub use matchers::{
    claude_matcher_matches, claude_matcher_to_gemini, claude_matcher_verbatim,
    is_valid_claude_matcher,
};
pub use names::{
    CLAUDE_EVENTS, claude_event_to_gemini, claude_notification_type_to_gemini,
    claude_tool_input_to_gemini, claude_tool_to_gemini, claude_tools_for_gemini,
    gemini_event_to_claude, gemini_notification_type_to_claude, gemini_tool_input_to_claude,
    gemini_tool_to_claude,
};
pub use payload::{
    DialectError, claude_hook_applies, claude_input_to_gemini, effective_claude_event,
    gemini_payload_to_claude,
};
pub use relay::is_relay_command;
pub use result::claude_hook_result;
