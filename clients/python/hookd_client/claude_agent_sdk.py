"""The Claude Agent SDK adapter: the SDK's ``hooks`` option, wired to hookd.

Each hook callback translates the SDK's input (Claude Code's hook language) into a hookd event,
fires it over one shared connection, and translates the hooks' merged answer back, as
``hookctl relay --dialect claude`` does for Claude Code (docs/dialects.md has the mappings)::

    from claude_agent_sdk import ClaudeAgentOptions, query
    from hookd_client.claude_agent_sdk import hookd_hooks

    options = ClaudeAgentOptions(cwd=project, hooks=await hookd_hooks(project_dir=project))
    async for message in query(prompt="...", options=options):
        ...

The translation needs nothing but the standard library; only :func:`hookd_hooks` imports the
SDK (for its ``HookMatcher``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from ._client import Client, EventResult, Message

CLAUDE_EVENTS: dict[str, str] = {
    "PreToolUse": "BeforeTool",
    "PostToolUse": "AfterTool",
    "UserPromptSubmit": "BeforeAgent",
    "Stop": "AfterAgent",
    "SubagentStop": "AfterAgent",
    "SessionStart": "SessionStart",
    "SessionEnd": "SessionEnd",
    "PreCompact": "PreCompress",
    "Notification": "Notification",
}
"""Claude Code's events the adapter wires, with the hookd event each becomes."""

_TOOLS = {
    "Bash": "run_shell_command",
    "Edit": "replace",
    "MultiEdit": "replace",
    "Read": "read_file",
    "Write": "write_file",
    "Glob": "glob",
    "Grep": "grep_search",
    "LS": "list_directory",
    "WebFetch": "web_fetch",
    "WebSearch": "google_web_search",
    "TodoWrite": "write_todos",
}

_INPUT_KEYS = {
    "Bash": {"run_in_background": "is_background"},
    "Edit": {"replace_all": "allow_multiple"},
    "Glob": {"path": "dir_path"},
    "Grep": {"path": "dir_path", "glob": "include_pattern"},
    "LS": {"path": "dir_path"},
}

_BASE_FIELDS = {
    "session_id", "transcript_path", "cwd", "hook_event_name", "tool_name", "tool_input",
    "tool_response", "last_assistant_message", "notification_type",
}


def claude_tool_to_gemini(tool: str) -> str:
    """Gemini CLI's name of a Claude Code tool."""
    mcp = re.match(r"^mcp__(.+?)__(.+)$", tool)
    if mcp:
        return f"mcp_{mcp.group(1)}_{mcp.group(2)}"
    return _TOOLS.get(tool, tool)


def _rename(values: dict[str, Any], renames: dict[str, str] | None) -> dict[str, Any]:
    if not renames:
        return dict(values)
    out: dict[str, Any] = {}
    for key, value in values.items():
        renamed = renames.get(key)
        out[renamed if renamed and renamed not in values else key] = value
    return out


def _rename_todos(values: dict[str, Any], renames: dict[str, str]) -> dict[str, Any]:
    todos = values.get("todos")
    if isinstance(todos, list):
        values["todos"] = [_rename(t, renames) if isinstance(t, dict) else t for t in todos]
    return values


def claude_tool_input_to_gemini(tool: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    """A Claude tool's input in Gemini CLI's words."""
    out = _rename(tool_input, _INPUT_KEYS.get(tool))
    return _rename_todos(out, {"content": "description"}) if tool == "TodoWrite" else out


def gemini_tool_input_to_claude(claude_tool: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    """A Gemini tool input (as a hook rewrote it) back in Claude Code's words."""
    renames = _INPUT_KEYS.get(claude_tool)
    back = {gemini: claude for claude, gemini in renames.items()} if renames else None
    out = _rename(tool_input, back)
    return _rename_todos(out, {"description": "content"}) if claude_tool == "TodoWrite" else out


def claude_input_to_event(claude_input: dict[str, Any]) -> dict[str, Any] | None:
    """The hookd event (``{"event", "input"}``) for an SDK hook input, in Gemini CLI's words,
    with ``claude_event`` and the original tool name, input and response kept as
    ``claude_*`` fields; ``None`` for an event hookd has no counterpart for."""
    claude_event = str(claude_input.get("hook_event_name", ""))
    event = CLAUDE_EVENTS.get(claude_event)
    if event is None:
        return None
    out: dict[str, Any] = {"claude_event": claude_event}
    out.update({k: v for k, v in claude_input.items() if k not in _BASE_FIELDS})
    tool = claude_input.get("tool_name")
    if isinstance(tool, str):
        out["tool_name"] = claude_tool_to_gemini(tool)
        out["claude_tool_name"] = tool
        tool_input = claude_input.get("tool_input")
        if isinstance(tool_input, dict):
            out["tool_input"] = claude_tool_input_to_gemini(tool, tool_input)
            out["claude_tool_input"] = tool_input
    if "tool_response" in claude_input:
        response = claude_input["tool_response"]
        text = response if isinstance(response, str) else json.dumps(response, separators=(",", ":"))
        out["tool_response"] = {"llmContent": text, "returnDisplay": text}
        out["claude_tool_response"] = response
    if isinstance(claude_input.get("last_assistant_message"), str):
        out["prompt_response"] = claude_input["last_assistant_message"]
    notification = claude_input.get("notification_type")
    if isinstance(notification, str):
        out["notification_type"] = "ToolPermission" if notification == "permission_prompt" else notification
    return {"event": event, "input": out}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def answer_for_claude(
    claude_input: dict[str, Any], final_output: dict[str, Any] | None, errors: list[str] | tuple[str, ...] = ()
) -> dict[str, Any]:
    """What the SDK expects back from a hook callback for the merged output of hookd's hooks."""
    claude_event = str(claude_input.get("hook_event_name", ""))
    merged = final_output or {}
    found = merged.get("hookSpecificOutput")
    specific: dict[str, Any] = found if isinstance(found, dict) else {}
    decision = merged.get("decision")
    blocked = decision in ("deny", "block")
    reason = _text(merged.get("stopReason")) or _text(merged.get("reason")) or "No reason provided"
    out: dict[str, Any] = {}
    if merged.get("continue") is False:
        out["continue"] = False
        stop_reason = _text(merged.get("stopReason")) or _text(merged.get("reason"))
        if stop_reason:
            out["stopReason"] = stop_reason
    if merged.get("suppressOutput") is True:
        out["suppressOutput"] = True
    messages = [m for m in [_text(merged.get("systemMessage"))] if m] + [f"hookd: {e}" for e in errors]
    if messages:
        out["systemMessage"] = "\n".join(messages)
    claude_specific: dict[str, Any] = {}
    if claude_event == "PreToolUse":
        if blocked:
            claude_specific["permissionDecision"] = "deny"
            claude_specific["permissionDecisionReason"] = reason
        elif decision == "ask":
            claude_specific["permissionDecision"] = "ask"
            ask_reason = _text(merged.get("reason")) or _text(merged.get("systemMessage"))
            if ask_reason:
                claude_specific["permissionDecisionReason"] = ask_reason
        elif specific.get("permissionDecision") == "allow":
            claude_specific["permissionDecision"] = "allow"
            if _text(merged.get("reason")):
                claude_specific["permissionDecisionReason"] = merged["reason"]
        if isinstance(specific.get("tool_input"), dict):
            tool_name = claude_input.get("tool_name")
            tool = tool_name if isinstance(tool_name, str) else ""
            claude_specific["updatedInput"] = gemini_tool_input_to_claude(tool, specific["tool_input"])
    elif blocked and claude_event in ("PostToolUse", "UserPromptSubmit", "Stop", "SubagentStop", "PreCompact"):
        out["decision"] = "block"
        out["reason"] = reason
    if claude_event in ("PreToolUse", "PostToolUse", "UserPromptSubmit", "SessionStart") and _text(
        specific.get("additionalContext")
    ):
        claude_specific["additionalContext"] = specific["additionalContext"]
    if claude_specific:
        out["hookSpecificOutput"] = {"hookEventName": claude_event, **claude_specific}
    return out


HookCallback = Callable[[dict[str, Any], "str | None", Any], Awaitable[dict[str, Any]]]
"""A hook callback as the SDK calls it: input, tool use id, context."""


async def hookd_callback(
    *,
    client: Client | None = None,
    socket_path: str | None = None,
    project_dir: str | None = None,
    unreachable: Literal["allow", "deny"] = "allow",
    agent_runs_claude_settings: bool = False,
) -> HookCallback:
    """One hook callback that sends any SDK hook input to hookd (see :func:`hookd_hooks`)."""
    if client is None:
        client = await Client.connect(socket_path, send_env=False)
    if project_dir:
        await client.watch_hooked_events(project_dir)

    async def callback(claude_input: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        translated = claude_input_to_event(claude_input)
        if translated is None:
            return {}
        cwd = claude_input.get("cwd")
        if not (isinstance(cwd, str) and cwd.startswith("/")):
            cwd = project_dir or os.getcwd()
        request: Message = {
            "event": translated["event"],
            "cwd": cwd,
            "input": translated["input"],
            "session_id": str(claude_input.get("session_id") or ""),
            "transcript_path": str(claude_input.get("transcript_path") or ""),
        }
        if project_dir:
            request["project_dir"] = project_dir
        if agent_runs_claude_settings:
            request["relayed_by"] = "claude"
        try:
            result: EventResult = await client.fire(request)
        except Exception as error:  # noqa: BLE001 - any failure ends in the unreachable policy
            if unreachable != "deny":
                return {}
            stop = {"continue": False} if claude_input.get("hook_event_name") == "Stop" else {}
            return answer_for_claude(
                claude_input, {"decision": "deny", "reason": f"hookd could not be reached: {error}", **stop}
            )
        return answer_for_claude(claude_input, result.get("final_output"), result.get("errors") or [])

    return callback


async def hookd_hooks(
    *,
    client: Client | None = None,
    socket_path: str | None = None,
    project_dir: str | None = None,
    events: list[str] | None = None,
    unreachable: Literal["allow", "deny"] = "allow",
    agent_runs_claude_settings: bool = False,
) -> dict[str, list[Any]]:
    """The SDK's ``hooks`` option (``ClaudeAgentOptions(hooks=...)``) wired to hookd: the
    user's hookd hooks (Gemini CLI's, hookd's and Claude-dialect ones) run for the agent's
    events in the daemon, with no process per event; events no hook listens to are answered
    without a round trip (given ``project_dir``).

    ``unreachable`` is what a callback answers when hookd cannot be reached: ``allow``
    (nothing) or ``deny``. Set ``agent_runs_claude_settings`` when the SDK also runs the hooks
    of Claude Code's settings files (``setting_sources``): hookd then skips its copies."""
    from claude_agent_sdk import HookMatcher  # the SDK is only needed here

    callback = await hookd_callback(
        client=client,
        socket_path=socket_path,
        project_dir=project_dir,
        unreachable=unreachable,
        agent_runs_claude_settings=agent_runs_claude_settings,
    )
    # The SDK types each input and answer per event; the callback takes and gives plain dicts,
    # which is what the SDK passes and accepts at run time.
    sdk_callback: Any = callback
    return {event: [HookMatcher(matcher=None, hooks=[sdk_callback])] for event in events or CLAUDE_EVENTS}
