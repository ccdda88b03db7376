"""Claude Code scenarios: its events, its answers and its merge rules, natively and via hookd.

Each scenario puts the same recorder hooks in Claude Code's settings; in the hookd run
`hookctl install` moves them to hookd and Claude Code relays its events. The recorder logs
every event it sees (the event, the tool, the payload's keys) and answers what the scenario
tells it to, per event, so a scenario compares which events fired, what the hooks were
given, and what reached the model afterwards (every `CTX-...` word a hook put in an answer).
"""

import json
import re
import time

from harness import Claude, read_lines, write_json, write_script
from scenarios import Session, Verdict, compare, scenario

RECORDER = r'''#!/usr/bin/env python3
"""Logs each event it is run for; answers as the answers file says for that event."""
import json, os, sys
log_path, name = sys.argv[1], sys.argv[2]
answers = json.load(open(sys.argv[3])) if len(sys.argv) > 3 else {}
payload = json.load(sys.stdin)
event = payload.get("hook_event_name")
with open(log_path, "a") as f:
    f.write(json.dumps({
        "hook": name, "event": event, "tool": payload.get("tool_name"),
        "keys": sorted(payload), "CLAUDE_PROJECT_DIR": os.environ.get("CLAUDE_PROJECT_DIR"),
    }) + "\n")
answer = answers.get(event)
if answer is None:
    sys.exit(0)
# "times": answer only the first N runs of this hook for this event.
count_path = "%s.%s.%s.count" % (log_path, name, event)
count = int(open(count_path).read()) if os.path.exists(count_path) else 0
open(count_path, "w").write(str(count + 1))
if count >= answer.get("times", 1 << 30):
    sys.exit(0)
if answer.get("env_line") and os.environ.get("CLAUDE_ENV_FILE"):
    with open(os.environ["CLAUDE_ENV_FILE"], "a") as f:
        f.write(answer["env_line"] + "\n")
out = answer.get("stdout")
if out is not None:
    sys.stdout.write(out if isinstance(out, str) else json.dumps(out))
if answer.get("stderr"):
    sys.stderr.write(answer["stderr"])
sys.exit(answer.get("exit", 0))
'''

# Claude Code 2.1.328's events (its settings schema), the ones with a Gemini counterpart first.
CLAUDE_EVENTS = [
    "PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop", "SubagentStop", "SessionStart",
    "SessionEnd", "PreCompact", "Notification",
    "PostToolUseFailure", "PostToolBatch", "PermissionRequest", "PermissionDenied",
    "UserPromptExpansion", "StopFailure", "SubagentStart", "Setup", "PostCompact",
    "PreModelSwitch", "PostModelSwitch", "Elicitation", "ElicitationResult", "ConfigChange",
    "InstructionsLoaded", "DirectoryAdded", "CwdChanged", "FileChanged", "WorktreeRemove",
    "TeammateIdle", "TaskCreated", "TaskCompleted", "MessageDisplay",
]
# WorktreeCreate is left out: a hook on it replaces Claude Code's own worktree creation.

CTX = re.compile(r"CTX-[A-Za-z0-9-]+")
HOOK_COMMAND = re.compile(r"\[[^\]]*\]:")


def recorder(s, name, answers=None, timeout=10):
    script = write_script(s.w.hooks_dir / "recorder.py", RECORDER)
    command = 'python3 "%s" "%s" %s' % (script, s.w.logs / "events.jsonl", name)
    if answers is not None:
        path = s.w.hooks_dir / ("answers-%s.json" % name)
        write_json(path, answers)
        command += ' "%s"' % path
    return {"type": "command", "command": command, "timeout": timeout}


def events_seen(s, name=None):
    return [r for r in read_lines(s.w.logs / "events.jsonl") if name is None or r.get("hook") == name]


def contexts_sent(s):
    """Per main-loop request, the CTX- words anywhere in what the CLI sent the model."""
    seen = {}
    for r in s.w.model_requests():
        if r.get("kind") == "turn" and r.get("turn") not in seen:
            seen[r["turn"]] = sorted(set(CTX.findall(json.dumps(r.get("body")))))
    return [seen[k] for k in sorted(seen)]


def run_both(ctx, host, label, setup, turns, extra_facts=None, prompt=None):
    facts = {}
    for mode in ("native", "hookd"):
        with Session(ctx, host, mode, label) as s:
            setup(s)
            if mode == "hookd":
                s.install()
                s.start_daemon()
            if prompt is None:
                s.go(turns)
            else:
                s.go(turns, prompt=prompt)
            f = s.facts()
            f["contexts"] = contexts_sent(s)
            f["events"] = [(r["event"], r.get("tool")) for r in events_seen(s)]
            if extra_facts:
                f.update(extra_facts(s))
            facts[mode] = f
    return facts


@scenario("claude-events", ["claude"], "every Claude Code event that fires headless reaches the same hooks with the same payload keys")
def claude_events(ctx, host):
    v = Verdict()
    turns = [
        {"tool": "mkdir -p sub && cd sub && touch ../marker-1"},
        {"tool": "cd .. && touch marker-2; exit 3"},
        {"text": ["finished"]},
    ]

    def setup(s):
        for event in CLAUDE_EVENTS:
            host.add_hooks(s.user_settings(), event, None, [recorder(s, "rec")])

    def keys(s):
        by_event = {}
        for r in events_seen(s):
            by_event.setdefault(r["event"], set()).update(r["keys"])
        return {"keys": {e: sorted(k) for e, k in by_event.items()}}

    facts = run_both(ctx, host, "events", setup, turns, keys)
    native_events = sorted({e for e, _ in facts["native"]["events"]})
    v.check(
        "native fires Claude-only events (reference sane)",
        "PostToolUseFailure" in native_events,
        "native fired %s" % native_events,
    )
    # Some events fire concurrently (CwdChanged and PostToolBatch after a `cd`): compared as
    # a multiset.
    v.same(
        "events fired (event, tool)",
        sorted(facts["native"]["events"], key=json.dumps),
        sorted(facts["hookd"]["events"], key=json.dumps),
    )
    v.same("payload keys per event", facts["native"]["keys"], facts["hookd"]["keys"])
    compare(v, facts["native"], facts["hookd"])
    return v


@scenario("claude-answers", ["claude"], "answers to Claude-only and Claude-specific fields reach the model as natively")
def claude_answers(ctx, host):
    v = Verdict()
    turns = [
        {"tool": "touch marker-1; exit 3"},
        {"tool": "echo fine; touch marker-2"},
        {"text": ["finished"]},
        {"text": ["finished again"]},
    ]
    answers = {
        "SessionStart": {"stdout": {"hookSpecificOutput": {"hookEventName": "SessionStart",
                                                           "additionalContext": "CTX-session"}}},
        "UserPromptSubmit": {"stdout": "CTX-prompt-plain"},
        "PostToolUseFailure": {"stdout": {"hookSpecificOutput": {"hookEventName": "PostToolUseFailure",
                                                                 "additionalContext": "CTX-failure"}}},
        "PostToolUse": {"stdout": {"hookSpecificOutput": {"hookEventName": "PostToolUse",
                                                          "additionalContext": "CTX-post"}}},
        "PostToolBatch": {"stdout": {"hookSpecificOutput": {"hookEventName": "PostToolBatch",
                                                            "additionalContext": "CTX-batch"}}},
        # Block the first stop: the model gets another turn with the reason.
        "Stop": {"stdout": {"decision": "block", "reason": "CTX-keep-going"}, "times": 1},
    }

    def setup(s):
        for event in answers:
            host.add_hooks(s.user_settings(), event, None, [recorder(s, "ans", answers)])

    facts = run_both(ctx, host, "answers", setup, turns)
    v.check(
        "native passes the contexts on (reference sane)",
        any("CTX-failure" in c for c in facts["native"]["contexts"]),
        "native contexts %s" % facts["native"]["contexts"],
    )
    v.same("CTX- words per model request", facts["native"]["contexts"], facts["hookd"]["contexts"])
    compare(v, facts["native"], facts["hookd"])
    return v


@scenario("claude-exit-2", ["claude"], "exit code 2 on Claude-only events (PostToolUseFailure, PostToolBatch) acts as natively: the batch's ends the turn")
def claude_exit_2(ctx, host):
    v = Verdict()
    turns = [{"tool": "touch marker-1; exit 3"}, {"tool": "touch marker-2"}, {"text": ["finished"]}]
    answers = {
        "PostToolUseFailure": {"stderr": "CTX-failure-stderr", "exit": 2},
        "PostToolBatch": {"stderr": "CTX-batch-stderr", "exit": 2},
    }

    def setup(s):
        for event in answers:
            host.add_hooks(s.user_settings(), event, None, [recorder(s, "two", answers)])

    facts = run_both(ctx, host, "exit2", setup, turns)
    # PostToolBatch's exit 2 ends the turn: the second command never runs.
    v.expect("native stops after the first batch (reference sane)", facts["native"]["tool_ran"], ["marker-1"])
    compare(v, facts["native"], facts["hookd"])
    v.same("CTX- words per model request", facts["native"]["contexts"], facts["hookd"]["contexts"])
    return v


@scenario("claude-winning-reason", ["claude"], "an allow with a reason next to a deny: only the deny reason reaches the model")
def claude_winning_reason(ctx, host):
    v = Verdict()
    turns = [{"tool": "rm -rf victim; touch marker-1"}, {"text": ["finished"]}]
    allow = {"PreToolUse": {"stdout": {"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "permissionDecision": "allow",
        "permissionDecisionReason": "REASON-allowed"}}}}
    deny = {"PreToolUse": {"stdout": {"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "permissionDecision": "deny",
        "permissionDecisionReason": "REASON-deny"}}}}

    def setup(s):
        host.add_hooks(s.user_settings(), "PreToolUse", "Bash", [recorder(s, "allow", allow)])
        host.add_hooks(s.user_settings(), "PreToolUse", "Bash", [recorder(s, "deny", deny)])

    facts = run_both(ctx, host, "winning", setup, turns)
    v.expect("native denies (reference sane)", facts["native"]["tool_ran"], [])
    compare(v, facts["native"], facts["hookd"])
    return v


@scenario("claude-dedup", ["claude"], "the same command in two matching groups runs once, as Claude Code de-duplicates it")
def claude_dedup(ctx, host):
    v = Verdict()
    turns = [{"tool": "echo hi; touch marker-1"}, {"text": ["finished"]}]

    def setup(s):
        entry = recorder(s, "same")
        host.add_hooks(s.user_settings(), "PreToolUse", "Bash", [entry])
        host.add_hooks(s.user_settings(), "PreToolUse", "*", [dict(entry, timeout=20)])

    def runs(s):
        return {"runs": len([r for r in events_seen(s, "same") if r["event"] == "PreToolUse"])}

    facts = run_both(ctx, host, "dedup", setup, turns, runs)
    v.expect("native runs it once (reference sane)", facts["native"]["runs"], 1)
    v.same("runs", facts["native"]["runs"], facts["hookd"]["runs"])
    compare(v, facts["native"], facts["hookd"])
    return v



@scenario("claude-if", ["claude"], "a hook's `if` (permission-rule syntax) is checked before it runs: natively and by hookd")
def claude_if(ctx, host):
    v = Verdict()
    turns = [
        {"tool": "echo hi; touch marker-1"},
        {"tool": "rm -rf victim; touch marker-2"},
        {"tool": "git status; touch marker-3"},
        {"text": ["finished"]},
    ]
    deny = {"PreToolUse": {"stdout": {"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "permissionDecision": "deny",
        "permissionDecisionReason": "REASON-no-rm"}}}}

    def setup(s):
        host.add_hooks(s.user_settings(), "PreToolUse", "Bash", [dict(recorder(s, "rm", deny), **{"if": "Bash(rm *)"})])
        host.add_hooks(s.user_settings(), "PreToolUse", "Bash", [dict(recorder(s, "git"), **{"if": "Bash(git *)"})])

    def runs(s):
        return {"runs": sorted(r["hook"] for r in events_seen(s))}

    facts = run_both(ctx, host, "if", setup, turns, runs)
    v.check(
        "native runs each hook only for its commands (reference sane)",
        facts["native"]["runs"] == ["git", "rm"],
        "native runs %s" % facts["native"]["runs"],
    )
    v.same("hook runs", facts["native"]["runs"], facts["hookd"]["runs"])
    compare(v, facts["native"], facts["hookd"])
    return v


@scenario("claude-on-failure-block", ["claude"], "`onFailure: block`: a hook that fails (exit 1) blocks the call, natively and via hookd")
def claude_on_failure_block(ctx, host):
    v = Verdict()
    turns = [{"tool": "echo hi; touch marker-1"}, {"text": ["finished"]}]
    fail = {"PreToolUse": {"stderr": "CTX-crashed", "exit": 1}}

    def setup(s):
        host.add_hooks(s.user_settings(), "PreToolUse", "Bash", [dict(recorder(s, "fails", fail), onFailure="block")])

    facts = run_both(ctx, host, "onfailure", setup, turns)
    v.expect("native blocks (reference sane)", facts["native"]["tool_ran"], [])
    compare(v, facts["native"], facts["hookd"], keys=("exit", "tool_ran", "printed"))
    v.same("sent_next", facts["native"]["sent_next"], facts["hookd"]["sent_next"])
    return v


@scenario("claude-once", ["claude"], "a settings-file hook with `once: true` runs as often natively as via hookd")
def claude_once(ctx, host):
    v = Verdict()
    turns = [{"tool": "echo a; touch marker-1"}, {"tool": "echo b; touch marker-2"}, {"text": ["finished"]}]

    def setup(s):
        host.add_hooks(s.user_settings(), "PreToolUse", "Bash", [dict(recorder(s, "once"), once=True)])

    def runs(s):
        return {"runs": len(events_seen(s, "once"))}

    facts = run_both(ctx, host, "once", setup, turns, runs)
    v.same("hook runs (native %s)" % facts["native"]["runs"], facts["native"]["runs"], facts["hookd"]["runs"])
    compare(v, facts["native"], facts["hookd"])
    return v


@scenario("claude-env-file", ["claude"], "a SessionStart hook's lines in $CLAUDE_ENV_FILE reach later Bash commands, natively and via hookd")
def claude_env_file(ctx, host):
    v = Verdict()
    turns = [{"tool": "touch marker-$INTEROP_FROM_HOOK"}, {"text": ["finished"]}]
    answers = {"SessionStart": {"env_line": "export INTEROP_FROM_HOOK=set-by-hook"}}

    def setup(s):
        host.add_hooks(s.user_settings(), "SessionStart", None, [recorder(s, "env", answers)])

    facts = run_both(ctx, host, "envfile", setup, turns)
    v.expect("native applies the file (reference sane)", facts["native"]["tool_ran"], ["marker-set-by-hook"])
    compare(v, facts["native"], facts["hookd"])
    return v


@scenario("claude-nonblocking-error", ["claude"], "a hook that exits 1 (a non-blocking error): the call goes on, the same is shown and sent")
def claude_nonblocking_error(ctx, host):
    v = Verdict()
    turns = [{"tool": "echo hi; touch marker-1"}, {"text": ["finished"]}]
    fail = {"PreToolUse": {"stderr": "CTX-oops", "exit": 1}, "PostToolUse": {"stderr": "CTX-post-oops", "exit": 1}}

    def setup(s):
        for event in fail:
            host.add_hooks(s.user_settings(), event, "Bash", [recorder(s, "fails", fail)])

    facts = run_both(ctx, host, "nonblocking", setup, turns)
    v.expect("native runs the tool (reference sane)", facts["native"]["tool_ran"], ["marker-1"])
    compare(v, facts["native"], facts["hookd"])
    v.same("CTX- words per model request", facts["native"]["contexts"], facts["hookd"]["contexts"])
    return v


@scenario("claude-compact", ["claude"], "`/compact` in a headless session: the compaction events reach the same hooks, natively and via hookd")
def claude_compact(ctx, host):
    v = Verdict()
    turns = [{"text": ["summary"]}]
    events = ["PreCompact", "PostCompact", "SessionStart", "UserPromptSubmit", "Stop", "SessionEnd"]

    def setup(s):
        for event in events:
            host.add_hooks(s.user_settings(), event, None, [recorder(s, "rec")])

    facts = run_both(ctx, host, "compact", setup, turns, prompt="/compact")
    native_events = sorted({e for e, _ in facts["native"]["events"]})
    v.check("native fires PreCompact (reference sane)", "PreCompact" in native_events, "native fired %s" % native_events)
    v.same(
        "events fired (event, tool)",
        sorted(facts["native"]["events"], key=json.dumps),
        sorted(facts["hookd"]["events"], key=json.dumps),
    )
    compare(v, facts["native"], facts["hookd"], keys=("exit", "printed", "hook_stderr"))
    return v


@scenario("claude-compact-block", ["claude"], "a PreCompact hook that exits 2 on `/compact`: the same outcome natively and via hookd (the relay answers with exit 2)")
def claude_compact_block(ctx, host):
    v = Verdict()
    answers = {"PreCompact": {"stderr": "CTX-no-compacting-now", "exit": 2}}

    def setup(s):
        # Claude Code compacts (and fires PreCompact) only with something in the session: a
        # SessionStart hook's run is enough.
        host.add_hooks(s.user_settings(), "SessionStart", None, [recorder(s, "start")])
        host.add_hooks(s.user_settings(), "PreCompact", None, [recorder(s, "block", answers)])

    facts = run_both(ctx, host, "compactblock", setup, [{"text": ["summary"]}], prompt="/compact")
    v.check(
        "native runs the hook (reference sane)",
        ("PreCompact", None) in facts["native"]["events"],
        "native events %s" % facts["native"]["events"],
    )
    v.same("events fired", facts["native"]["events"], facts["hookd"]["events"])
    compare(v, facts["native"], facts["hookd"], keys=("exit", "hook_stderr"))
    # Claude Code names the command that blocked: natively the hook's, through hookd the relay
    # entry's (a difference docs/dialects.md lists); the rest of the message must be the same.
    v.same(
        "printed, the command named in brackets left out",
        HOOK_COMMAND.sub("[<command>]:", str(facts["native"]["printed"])),
        HOOK_COMMAND.sub("[<command>]:", str(facts["hookd"]["printed"])),
    )
    return v


class ClaudeAsking(Claude):
    """Claude Code with no tool allowed up front: a Bash call needs a permission decision."""

    def args(self, prompt):
        return ["-p", prompt, "--output-format", "json"]


@scenario("claude-permission-request", ["claude"], "with Bash not allowed up front, a PermissionRequest hook's allow and deny decide as natively")
def claude_permission_request(ctx, host):
    v = Verdict()
    asking = ClaudeAsking(host.argv)
    turns = [{"tool": "echo hi; touch marker-1"}, {"tool": "rm -rf victim; touch marker-2"}, {"text": ["finished"]}]
    script = r"""import json, sys
payload = json.load(sys.stdin)
command = (payload.get("tool_input") or {}).get("command", "")
with open(sys.argv[1], "a") as f:
    f.write(json.dumps({"hook": "perm", "event": payload.get("hook_event_name"), "tool": payload.get("tool_name"), "keys": sorted(payload)}) + "\n")
if "rm -rf" in command:
    decision = {"behavior": "deny", "message": "CTX-permission-denied"}
else:
    decision = {"behavior": "allow"}
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}}))
"""

    def setup(s):
        path = write_script(s.w.hooks_dir / "perm.py", script)
        entry = {"type": "command", "command": 'python3 "%s" "%s"' % (path, s.w.logs / "events.jsonl"), "timeout": 10}
        asking.add_hooks(s.user_settings(), "PermissionRequest", "Bash", [entry])

    facts = run_both(ctx, asking, "permission", setup, turns)
    v.check(
        "native asks the hook and follows it (reference sane)",
        facts["native"]["tool_ran"] == ["marker-1"] and ("PermissionRequest", "Bash") in facts["native"]["events"],
        "native ran %s, events %s" % (facts["native"]["tool_ran"], facts["native"]["events"]),
    )
    v.same("events fired", facts["native"]["events"], facts["hookd"]["events"])
    compare(v, facts["native"], facts["hookd"])
    return v


@scenario("claude-defer", ["claude"], "one hook allows, another defers: defer wins over allow, natively and via hookd")
def claude_defer(ctx, host):
    v = Verdict()
    turns = [{"tool": "echo hi; touch marker-1"}, {"text": ["finished"]}]
    allow = {"PreToolUse": {"stdout": {"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "permissionDecision": "allow",
        "permissionDecisionReason": "REASON-allowed"}}}}
    defer = {"PreToolUse": {"stdout": {"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "permissionDecision": "defer"}}}}

    def setup(s):
        host.add_hooks(s.user_settings(), "PreToolUse", "Bash", [recorder(s, "allow", allow)])
        host.add_hooks(s.user_settings(), "PreToolUse", "Bash", [recorder(s, "defer", defer)])

    facts = run_both(ctx, host, "defer", setup, turns)
    v.expect("native defers: the tool does not run (reference sane)", facts["native"]["tool_ran"], [])
    compare(v, facts["native"], facts["hookd"])
    return v


@scenario("claude-session-end", ["claude"], "a SessionEnd hook that takes 4 s: natively Claude Code kills it when it exits; via hookd the CLI exits as fast and the hook finishes afterwards")
def claude_session_end(ctx, host):
    v = Verdict()
    seen = {}
    for mode in ("native", "hookd"):
        with Session(ctx, host, mode, "sessionend") as s:
            done = s.w.root / "session-end.done"
            script = write_script(
                s.w.hooks_dir / "slow-end.sh",
                "#!/bin/sh\ncat > /dev/null\nsleep 4\ntouch '%s'\n" % done,
            )
            # No `timeout`: Claude Code 2.1.328 gives SessionEnd hooks 1.5 s, or the largest
            # SessionEnd hook timeout up to 60 s, and kills them when it runs out.
            host.add_hooks(
                s.user_settings(), "SessionEnd", None,
                [{"type": "command", "command": str(script)}],
            )
            if mode == "hookd":
                s.install()
                s.start_daemon()
            started = time.monotonic()
            # Not `s.go`, which waits for the daemon's background work: here the point is
            # what exists when the CLI has exited.
            s.w.start_model(host.api, [{"text": ["bye"]}])
            env = {"HOOKD_SOCKET": str(s.w.socket)} if mode == "hookd" else {}
            run = host.run(s.w, "say bye", env_extra=env)
            cli_s = time.monotonic() - started
            at_exit = done.exists()
            # The hook sleeps 4 s from when the CLI started it, before the CLI exited.
            deadline = time.monotonic() + 6
            while not done.exists() and time.monotonic() < deadline:
                time.sleep(0.1)
            seen[mode] = {"exit": run.code, "at_exit": at_exit, "later": done.exists(), "cli_s": cli_s}
    v.expect("native: the CLI exits 0 (reference sane)", seen["native"]["exit"], 0)
    v.check(
        "native: the hook is killed with the CLI (reference sane)",
        not seen["native"]["later"],
        "the native CLI run took %.1f s" % seen["native"]["cli_s"],
    )
    v.expect("hookd: the CLI exits 0", seen["hookd"]["exit"], 0)
    v.expect("hookd: the hook has not finished when the CLI exits", seen["hookd"]["at_exit"], False)
    v.expect("hookd: the hook finishes after the CLI has exited", seen["hookd"]["later"], True)
    v.check(
        "hookd: the CLI exits about as fast as natively",
        seen["hookd"]["cli_s"] < seen["native"]["cli_s"] + 2.0,
        "CLI run: native %.1f s, hookd %.1f s" % (seen["native"]["cli_s"], seen["hookd"]["cli_s"]),
    )
    return v


@scenario(
    "http-hook-added-mid-session",
    ["claude"],
    "over HTTP, a guard added to hookd's hooks file mid-session for an event that had no hook at "
    "install (PreToolUse) denies the next `rm -rf` without restarting Claude Code",
    transports=["http"],
)
def http_hook_added_mid_session(ctx, host):
    from harness import GUARD
    from scenarios import DENY_REASON, hook_runs, markers

    v = Verdict()
    with Session(ctx, host, "hookd", "added-mid-session") as s:
        # No hook anywhere at install: the HTTP entries are there for every common event.
        s.install()
        s.start_daemon()
        installed = json.dumps((json.load(open(s.user_settings())) or {}).get("hooks", {}))
        v.check("PreToolUse has an HTTP entry with no hook", '"type": "http"' in installed, installed[:300])
        guard = write_script(s.w.hooks_dir / "guard.py", GUARD)
        hooks = {
            "hooks": {
                "BeforeTool": [
                    {
                        "matcher": "run_shell_command",
                        "hooks": [
                            {
                                "type": "command",
                                "name": "guard",
                                "command": 'python3 "%s" "%s" guard' % (guard, s.w.logs / "hook-runs.jsonl"),
                                "timeout": 10000,
                            }
                        ],
                    }
                ]
            }
        }
        staged = s.w.root / "added-hooks.json"
        write_json(staged, hooks)
        target = s.w.config / "hookd" / "hooks.json"
        # The first call adds the hook to hookd's file (hookd sees the change by itself); the
        # second is the one it must deny, in the same Claude Code session.
        turns = [
            {"tool": 'cp "%s" "%s" && sleep 2 && touch marker-1' % (staged, target)},
            {"tool": "rm -rf victim; touch marker-2"},
            {"text": ["finished ", "the task"]},
        ]
        s.go(turns)
        v.expect("tool ran (first call only)", markers(s.w), ["marker-1"])
        v.expect("guard ran once (for the second call)", len(hook_runs(s.w, "guard")), 1)
        sent = s.run.tool_results()
        v.check(
            "the model got the guard's reason",
            len(sent) >= 2 and DENY_REASON in json.dumps(sent[1]),
            json.dumps(sent)[:600],
        )
        v.expect("exit", s.run.code, 0)
    return v


@scenario(
    "http-events-hooked",
    ["claude"],
    "over HTTP with `--events hooked`: only the guard's event is wired (with its Bash matcher), "
    "and the guard denies `rm -rf` as natively",
    transports=["http"],
)
def http_events_hooked(ctx, host):
    from scenarios import deny_both

    def check_install(v, s):
        wired = (json.load(open(s.user_settings())) or {}).get("hooks", {})
        pre = wired.get("PreToolUse", [{}])[0]
        v.expect("PreToolUse: one HTTP entry", [h.get("type") for h in pre.get("hooks", [])], ["http"])
        v.expect("PreToolUse: the guard's matcher", pre.get("matcher"), "Bash")
        v.check(
            "no entry for events without hooks",
            "PostToolUse" not in wired and "UserPromptSubmit" not in wired,
            ", ".join(sorted(wired)),
        )

    return deny_both(ctx, host, "events-hooked", ("--events", "hooked"), check_install)
