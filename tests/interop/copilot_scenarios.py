"""GitHub Copilot CLI scenarios: its answers natively and through hookd (`hookctl install --host copilot`).

Each scenario puts the same recorder hooks in the world's `~/.copilot/hooks/hookd.json`. In the
hookd run `hookctl install` moves them to hookd (where they keep speaking Copilot) and writes
relay entries. A scenario compares what reached the model (tool results, `CTX-...` words),
which commands ran (marker files), what Copilot printed and exited with.
"""

import json
import os
import time

from claude_scenarios import contexts_sent
from harness import read_json, read_lines, write_json, write_script
from scenarios import Session, Verdict, compare, scenario

# Copilot's stdin names no event: the recorder is told which one it was installed for.
RECORDER = r'''#!/usr/bin/env python3
"""Logs each event it is run for; answers as the answers file says for that event."""
import json, os, sys, time
log_path, name, event = sys.argv[1], sys.argv[2], sys.argv[3]
answers = json.load(open(sys.argv[4])) if len(sys.argv) > 4 else {}
payload = json.load(sys.stdin)
with open(log_path, "a") as f:
    f.write(json.dumps({"hook": name, "event": event, "tool": payload.get("toolName"),
                        "keys": sorted(payload)}) + "\n")
with open(log_path + ".payloads", "a") as f:
    f.write(json.dumps({"event": event, "payload": payload}) + "\n")
answer = answers.get(event)
if answer is None:
    sys.exit(0)
if answer.get("sleep"):
    time.sleep(answer["sleep"])
out = answer.get("stdout")
if out is not None:
    sys.stdout.write(out if isinstance(out, str) else json.dumps(out))
if answer.get("stderr"):
    sys.stderr.write(answer["stderr"])
sys.exit(answer.get("exit", 0))
'''


def recorder(s, name, event, answers, timeout=10):
    script = write_script(s.w.hooks_dir / "copilot-recorder.py", RECORDER)
    path = s.w.hooks_dir / ("answers-%s.json" % name)
    write_json(path, answers)
    command = 'python3 "%s" "%s" %s %s "%s"' % (script, s.w.logs / "events.jsonl", name, event, path)
    return {"type": "command", "command": command, "timeoutSec": timeout}


def events_seen(s):
    return [(r["event"], r.get("tool")) for r in read_lines(s.w.logs / "events.jsonl")]


def event_keys(s):
    """Each event's stdin keys, as the recorder saw them (the first firing of each)."""
    keys = {}
    for r in read_lines(s.w.logs / "events.jsonl"):
        keys.setdefault(r["event"], r["keys"])
    return keys


# Copilot's own events: no Claude Code counterpart, so `install` leaves their hooks where Copilot
# runs them; a hook for them in hookd's own file is what hookd runs (through a relay entry).
OWN_EVENTS = ("userPromptTransformed", "preMcpToolCall", "errorOccurred")


def run_both(ctx, host, label, answers, turns, timeout=10, modes=("native", "hookd"), hookd_up=True,
             matchers=None):
    facts = {}
    for mode in modes:
        with Session(ctx, host, mode, label) as s:
            hookd_file = {}
            for event in answers:
                entry = recorder(s, "rec", event, answers, timeout)
                if mode == "hookd" and event in OWN_EVENTS:
                    entry = {"type": "command", "command": entry["command"], "timeout": timeout * 1000,
                             "dialect": "copilot"}
                    hookd_file.setdefault(event, []).append({"hooks": [entry]})
                    continue
                host.add_hooks(s.user_settings(), event, (matchers or {}).get(event), [entry])
            if hookd_file:
                write_json(s.w.config / "hookd" / "hooks.json", {"hooks": hookd_file})
            if mode == "hookd":
                s.install()
                if hookd_up:
                    s.start_daemon()
            started = time.monotonic()
            s.go(turns)
            f = s.facts()
            f["elapsed"] = time.monotonic() - started
            f["contexts"] = contexts_sent(s)
            f["events"] = events_seen(s)
            f["requests"] = len([r for r in s.w.model_requests() if r.get("kind") == "turn"])
            f["keys"] = event_keys(s)
            f["relay_entries"] = relay_commands(s.user_settings())
            facts[mode] = f
    return facts


def relay_commands(path):
    found = []
    for event, groups in ((read_json(path, {}) or {}).get("hooks") or {}).items():
        for group in groups or []:
            for hook in group.get("hooks") or [group]:
                if "hookd-relay" in str(hook.get("command", "")):
                    found.append(event)
    return found


def both_same(v, facts, keys=("exit", "tool_ran", "sent_next")):
    compare(v, facts["native"], facts["hookd"], keys=keys)
    v.same("CTX- words per model request", facts["native"]["contexts"], facts["hookd"]["contexts"])
    v.same("events the hook saw", facts["native"]["events"], facts["hookd"]["events"])


def deny(reason):
    return {"stdout": {"permissionDecision": "deny", "permissionDecisionReason": reason}}


TOUCH = [{"tool": "touch marker-1"}, {"text": ["finished"]}]


@scenario("copilot-deny", ["copilot"], "a preToolUse hook denies a command with a reason: natively and via hookd")
def copilot_deny(ctx, host):
    v = Verdict()
    facts = run_both(ctx, host, "deny", {"preToolUse": deny("CTX-denied")}, TOUCH)
    v.expect("native: the command did not run (reference sane)", facts["native"]["tool_ran"], [])
    v.check("native: the model got the reason", any("CTX-denied" in t for t in facts["native"]["sent_next"]),
            str(facts["native"]["sent_next"]))
    v.expect("hookd: a relay entry on preToolUse", "preToolUse" in facts["hookd"]["relay_entries"], True)
    both_same(v, facts)
    return v


@scenario("copilot-exit-codes", ["copilot"], "a preToolUse hook exiting 1 or 2 denies (fail closed), natively and via hookd")
def copilot_exit_codes(ctx, host):
    v = Verdict()
    for code in (1, 2):
        facts = run_both(ctx, host, "exit%d" % code, {"preToolUse": {"stderr": "CTX-why", "exit": code}}, TOUCH)
        v.expect("exit %d native: the command did not run (reference sane)" % code, facts["native"]["tool_ran"], [])
        v.expect("exit %d hookd: the command did not run" % code, facts["hookd"]["tool_ran"], [])
        v.same("exit %d: exit code" % code, facts["native"]["exit"], facts["hookd"]["exit"])
        v.same("exit %d: events" % code, facts["native"]["events"], facts["hookd"]["events"])
    return v


@scenario("copilot-rewrite", ["copilot"], "a preToolUse hook rewrites the command (modifiedArgs)")
def copilot_rewrite(ctx, host):
    v = Verdict()
    turns = [{"tool": "touch marker-original"}, {"text": ["finished"]}]
    answers = {"preToolUse": {"stdout": {"modifiedArgs": {"command": "touch marker-rewritten",
                                                          "description": "scripted command"}}}}
    facts = run_both(ctx, host, "rewrite", answers, turns)
    v.expect("native: the rewritten command ran (reference sane)", facts["native"]["tool_ran"], ["marker-rewritten"])
    both_same(v, facts)
    return v


@scenario("copilot-context", ["copilot"], "a postToolUse hook adds context the model sees after the tool result")
def copilot_context(ctx, host):
    v = Verdict()
    answers = {"postToolUse": {"stdout": {"additionalContext": "CTX-after-tool"}}}
    facts = run_both(ctx, host, "context", answers, TOUCH)
    v.check("native: the model saw the context (reference sane)",
            any("CTX-after-tool" in c for c in facts["native"]["contexts"]), str(facts["native"]["contexts"]))
    both_same(v, facts)
    return v


@scenario("copilot-stop-loop", ["copilot"], "an agentStop hook that always blocks: Copilot continues 8 times, then ends")
def copilot_stop_loop(ctx, host):
    v = Verdict()
    answers = {"agentStop": {"stdout": {"decision": "block", "reason": "CTX-keep-going"}}}
    facts = run_both(ctx, host, "stoploop", answers, [{"text": ["finished"]}])
    v.expect("native: 9 agentStop runs (reference sane)", len(facts["native"]["events"]), 9)
    v.same("model requests", facts["native"]["requests"], facts["hookd"]["requests"])
    both_same(v, facts)
    return v


@scenario("copilot-timeout", ["copilot"], "a preToolUse hook past its timeoutSec: Copilot runs the call; hookd's policy is never weaker")
def copilot_timeout(ctx, host):
    v = Verdict()
    answers = {"preToolUse": {"sleep": 6, "stdout": deny("CTX-late")["stdout"]}}
    facts = run_both(ctx, host, "timeout", answers, TOUCH, timeout=2)
    v.expect("native: the late deny is not heard, the command ran (reference sane)",
             facts["native"]["tool_ran"], ["marker-1"])
    v.check("hookd: the hook was stopped at its timeout, not waited for",
            facts["hookd"]["elapsed"] < 60, "%.1f s" % facts["hookd"]["elapsed"])
    v.expect("hookd: the hook ran once", facts["hookd"]["events"], [("preToolUse", "bash")])
    return v


@scenario("copilot-hookd-stopped", ["copilot"], "installed, hookd not running: the guard's call is denied, not run unguarded")
def copilot_hookd_stopped(ctx, host):
    v = Verdict()
    facts = run_both(ctx, host, "stopped", {"preToolUse": deny("CTX-denied")}, TOUCH,
                     modes=("hookd",), hookd_up=False)
    v.expect("the command did not run", facts["hookd"]["tool_ran"], [])
    # The other guard point: a permissionRequest guard, run by the one-shot engine.
    facts = run_both(ctx, host, "stopped-perm",
                     {"permissionRequest": {"stdout": {"behavior": "deny", "message": "CTX-denied"}}}, TOUCH,
                     modes=("hookd",), hookd_up=False)
    v.expect("permissionRequest: the command did not run", facts["hookd"]["tool_ran"], [])
    v.check("permissionRequest: the model read the guard's reason",
            any("CTX-denied" in t for t in facts["hookd"]["sent_next"]), str(facts["hookd"]["sent_next"]))
    return v


@scenario("copilot-project-no-path", ["copilot"], "a project install (.github/hooks) guards on a machine without hookd on PATH")
def copilot_project_no_path(ctx, host):
    v = Verdict()
    with Session(ctx, host, "hookd", "project-nopath") as s:
        host.add_hooks(s.project_settings(), "preToolUse", None,
                       [recorder(s, "rec", "preToolUse", {"preToolUse": deny("CTX-denied")})])
        s.install(scope="project")
        s.start_daemon()
        # Only node, python3 and the system directories: no hookd-relay.
        path = ":".join(d for d in s.w.base_env()["PATH"].split(":")
                        if not os.path.exists(os.path.join(d, "hookd-relay")))
        s.go(TOUCH, env_extra={"PATH": path})
        v.expect("the command did not run", s.facts()["tool_ran"], [])
        v.check("relay entries in .github/hooks/hookd.json", bool(relay_commands(s.project_settings())),
                json.dumps(read_json(s.project_settings(), {})))
    return v


@scenario("copilot-claude-shared", ["copilot"],
          "Claude Code and Copilot CLI on one project with `install --host claude --scope project`: each CLI run once, the guard runs exactly once in each and denies in each")
def copilot_claude_shared(ctx, host):
    import harness
    from scenarios import guard_entry, hook_runs, markers, rm_turns

    v = Verdict()
    claude = harness.Claude(harness.install_clis(["claude"])["claude"])
    for mode in ("native", "hookd"):
        with Session(ctx, host, mode, "shared") as s:
            claude.prepare(s.w)
            claude.add_hooks(claude.project_settings_path(s.w), "PreToolUse", "Bash", [guard_entry(claude, s.w)])
            if mode == "hookd":
                out = s.w.hookctl("install", "--host", "claude", "--scope", "project", "--yes", "--cwd", str(s.w.proj))
                said = out.stdout + out.stderr
                v.check("install --host claude says what it changes for Copilot CLI",
                        "Copilot CLI also runs the hooks of" in said, said[-600:])
                s.start_daemon()
                doctor = s.w.hookctl("doctor", "--cwd", str(s.w.proj), check=False)
                v.check("doctor checks the Claude file for Copilot CLI too",
                        "Copilot CLI also runs the hooks of" in doctor.stdout, doctor.stdout[-800:])
            s.go(rm_turns())
            copilot_ran = markers(s.w)
            copilot_runs = len(hook_runs(s.w, "guard"))
            env = {"HOOKD_SOCKET": str(s.w.socket)} if mode == "hookd" else {}
            claude_run = claude.run(s.w, "run the scripted commands", env_extra=env)
            if mode == "hookd":
                s.w.wait_background_done()
            claude_ran = markers(s.w)
            total = len(hook_runs(s.w, "guard"))
            v.expect("%s: Copilot did not run rm -rf" % mode, copilot_ran, [])
            v.expect("%s: the guard ran once in Copilot" % mode, copilot_runs, 1)
            v.expect("%s: Claude Code did not run rm -rf" % mode, claude_ran, [])
            v.expect("%s: the guard ran once in Claude Code" % mode, total - copilot_runs, 1)
            # The two CLIs share the model server: Claude Code's requests offer `Bash`.
            claude_requests = [r for r in s.w.model_requests()
                               if any(t.get("name") == "Bash" for t in (r.get("body") or {}).get("tools") or [])]
            said = claude.tool_results(claude_requests)
            v.check("%s: Claude Code told the model why" % mode,
                    any("rm -rf is not allowed" in r and "preToolUse" not in r for r in said), str(said))
            v.expect("%s: Claude Code exited 0" % mode, claude_run.code, 0)
    return v



ALL_EVENTS = ["sessionStart", "userPromptSubmitted", "userPromptTransformed", "preToolUse",
              "permissionRequest", "postToolUse", "postToolUseFailure", "agentStop", "sessionEnd"]

# A shell call (preToolUse, permissionRequest, postToolUse), a read of a missing file
# (postToolUseFailure), then the final answer.
SHELL_AND_FAILURE = [{"tool": "touch marker-1"},
                     {"call": {"name": "view", "input": {"path": "missing.txt"}}},
                     {"text": ["finished"]}]


@scenario("copilot-every-event", ["copilot"],
          "a hook on every event a headless session fires: the same firings, in the same order, with "
          "the same stdin keys, natively and via hookd")
def copilot_every_event(ctx, host):
    v = Verdict()
    facts = run_both(ctx, host, "every", {event: {} for event in ALL_EVENTS}, SHELL_AND_FAILURE,
                     matchers={"preToolUse": "bash|view"})
    seen = [event for event, _ in facts["native"]["events"]]
    v.check("native: every event fired (reference sane)", all(e in seen for e in ALL_EVENTS), str(seen))
    v.check("hookd: relay entries for the events whose hooks moved",
            all(e in facts["hookd"]["relay_entries"] for e in ALL_EVENTS), str(facts["hookd"]["relay_entries"]))
    both_same(v, facts)
    for event in ALL_EVENTS:
        v.same("stdin keys of %s" % event, facts["native"]["keys"].get(event), facts["hookd"]["keys"].get(event))
    return v


def permission_deny(answer):
    return {"permissionRequest": answer}


@scenario("copilot-permission-request", ["copilot"],
          "a permissionRequest hook denies the shell call (JSON, exit 2, exit 1, unreadable output) and "
          "lets it run when silent: natively and via hookd")
def copilot_permission_request(ctx, host):
    v = Verdict()
    cases = [
        ("json", {"stdout": {"behavior": "deny", "message": "CTX-permission"}}, []),
        ("exit2", {"stderr": "why", "exit": 2}, []),
        ("exit1", {"stderr": "why", "exit": 1}, []),
        ("garbled", {"stdout": "not json"}, []),
        ("silent", {}, ["marker-1"]),
    ]
    for label, answer, ran in cases:
        facts = run_both(ctx, host, "perm-" + label, permission_deny(answer), TOUCH)
        v.expect("%s native: what ran (reference sane)" % label, facts["native"]["tool_ran"], ran)
        compare(v, facts["native"], facts["hookd"], keys=("exit", "tool_ran", "sent_next"))
        v.same("%s: events" % label, facts["native"]["events"], facts["hookd"]["events"])
    return v


@scenario("copilot-rewrites", ["copilot"],
          "modifiedTransformedPrompt (Copilot's own event, from hookd's file), modifiedResult and "
          "postToolUseFailure context reach the model alike, natively and via hookd")
def copilot_rewrites(ctx, host):
    v = Verdict()
    answers = {
        "userPromptTransformed": {"stdout": {"modifiedTransformedPrompt": "CTX-transformed run the scripted commands"}},
        "postToolUse": {"stdout": {"modifiedResult": {"resultType": "success", "textResultForLlm": "CTX-replaced"}}},
        "postToolUseFailure": {"stdout": {"additionalContext": "CTX-after-failure"}},
    }
    facts = run_both(ctx, host, "rewrites", answers, SHELL_AND_FAILURE)
    native = facts["native"]["contexts"]
    v.check("native: the model saw all three (reference sane)",
            all(any(word in c for c in native) for word in ("CTX-transformed", "CTX-replaced", "CTX-after-failure")),
            str(native))
    v.check("hookd: the userPromptTransformed hook ran in hookd, through a relay entry",
            "userPromptTransformed" in facts["hookd"]["relay_entries"], str(facts["hookd"]["relay_entries"]))
    both_same(v, facts)
    return v


@scenario("copilot-error-occurred", ["copilot"],
          "a refused model call fires errorOccurred; a hook for it in hookd's file sees what Copilot's own sees")
def copilot_error_occurred(ctx, host):
    v = Verdict()
    answers = {"errorOccurred": {"stdout": {"userNotification": "CTX-noted"}}}
    facts = run_both(ctx, host, "error", answers, [{"tool": "touch marker-1"}, {"fail": 400}])
    v.expect("native: the hook ran once (reference sane)", facts["native"]["events"], [("errorOccurred", None)])
    both_same(v, facts, keys=("exit", "tool_ran"))
    v.same("stdin keys", facts["native"]["keys"], facts["hookd"]["keys"])
    return v


@scenario("copilot-subagents", ["copilot"],
          "sub-agents (the task tool, nested as deep as Copilot allows): subagentStart, subagentStop and the "
          "sub-agents' own tool and stop events fire alike, with the same stdin keys, natively and via hookd")
def copilot_subagents(ctx, host):
    v = Verdict()
    events = ["preToolUse", "postToolUse", "postToolUseFailure", "agentStop", "subagentStart", "subagentStop"]
    # The fake model answers every agent with the same script: each sub-agent starts another,
    # until Copilot refuses at its depth limit.
    turns = [{"call": {"name": "task", "input": {"description": "run a check", "prompt": "say done",
                                                  "agent_type": "task", "name": "checker"}}},
             {"text": ["finished"]}]
    facts = run_both(ctx, host, "subagents", {event: {} for event in events}, turns)
    seen = [event for event, _ in facts["native"]["events"]]
    v.check("native: sub-agents started and stopped (reference sane)",
            "subagentStart" in seen and "subagentStop" in seen, str(seen))
    both_same(v, facts, keys=("exit",))
    for event in events:
        v.same("stdin keys of %s" % event, facts["native"]["keys"].get(event), facts["hookd"]["keys"].get(event))
    return v


def relay_matchers(path):
    """{event: matcher} of hookd's relay entries in a Copilot hooks file."""
    found = {}
    for event, groups in ((read_json(path, {}) or {}).get("hooks") or {}).items():
        for group in groups or []:
            for hook in group.get("hooks") or [group]:
                if "hookd-relay" in str(hook.get("command", "")):
                    found[event] = group.get("matcher")
    return found


@scenario("copilot-relay-matcher", ["copilot"],
          "a guard for `bash` only: the relay entry is matched on `bash`, so a `view` call starts no relay, "
          "while the `bash` call is guarded")
def copilot_relay_matcher(ctx, host):
    v = Verdict()
    turns = [{"call": {"name": "view", "input": {"path": "missing.txt"}}},
             {"tool": "touch marker-1"}, {"text": ["finished"]}]
    with Session(ctx, host, "hookd", "matcher-wiring") as s:
        host.add_hooks(s.user_settings(), "preToolUse", "bash",
                       [recorder(s, "rec", "preToolUse", {"preToolUse": deny("CTX-denied")})])
        s.install()
        s.start_daemon()
        matchers = relay_matchers(s.user_settings())
        v.expect("the preToolUse relay entry's matcher", matchers.get("preToolUse"), "bash")
        s.go(turns)
        v.expect("the command did not run", s.facts()["tool_ran"], [])
        stats = json.loads(s.w.hookctl("stats", "--json").stdout or "{}")
        relayed = {r.get("host"): r.get("events") for r in stats.get("relays") or []}
        # The bash call only: the view call matched no relay entry, so no relay ran for it.
        v.expect("events Copilot's relay sent hookd", relayed.get("copilot"), 1)
    return v



# A local MCP server (stdio, one `echo` tool) that logs each call it gets, `_meta` included.
MCP_SERVER = r'''#!/usr/bin/env python3
import json, sys
log_path = sys.argv[1]
def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()
for line in sys.stdin:
    if not line.strip():
        continue
    msg = json.loads(line)
    mid, method = msg.get("id"), msg.get("method")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "protocolVersion": msg["params"].get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}}, "serverInfo": {"name": "probe", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": [{"name": "echo", "description": "echo text",
              "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}]}})
    elif method == "tools/call":
        with open(log_path, "a") as f:
            f.write(json.dumps(msg.get("params")) + "\n")
        text = "echoed " + json.dumps(msg["params"].get("arguments"))
        send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": text}]}})
    elif mid is not None:
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
'''


@scenario("copilot-mcp", ["copilot"],
          "an MCP tool call: preToolUse, permissionRequest and Copilot's own preMcpToolCall fire alike, and "
          "metaToUse from a preMcpToolCall hook in hookd's file reaches the MCP server as natively")
def copilot_mcp(ctx, host):
    v = Verdict()
    events = ["preToolUse", "permissionRequest", "preMcpToolCall", "postToolUse"]
    answers = {event: {} for event in events}
    answers["preMcpToolCall"] = {"stdout": {"metaToUse": {"traceTag": "CTX-meta"}}}
    turns = [{"call": {"name": "probe-echo", "input": {"text": "hi"}}}, {"text": ["done"]}]
    facts = {}
    for mode in ("native", "hookd"):
        with Session(ctx, host, mode, "mcp") as s:
            server = write_script(s.w.hooks_dir / "mcp-server.py", MCP_SERVER)
            calls = s.w.logs / "mcp-calls.jsonl"
            config = s.w.hooks_dir / "mcp-config.json"
            write_json(config, {"mcpServers": {"probe": {"type": "local", "command": "python3",
                                                         "args": [str(server), str(calls)], "tools": ["*"]}}})
            hookd_file = {}
            for event in events:
                entry = recorder(s, "rec", event, answers)
                if mode == "hookd" and event in OWN_EVENTS:
                    entry = {"type": "command", "command": entry["command"], "timeout": 10000, "dialect": "copilot"}
                    hookd_file.setdefault(event, []).append({"hooks": [entry]})
                else:
                    host.add_hooks(s.user_settings(), event, None, [entry])
            if hookd_file:
                write_json(s.w.config / "hookd" / "hooks.json", {"hooks": hookd_file})
            if mode == "hookd":
                s.install()
                s.start_daemon()
            host.extra_args = ("--additional-mcp-config", "@%s" % config)
            started = time.monotonic()
            try:
                s.go(turns)
            finally:
                host.extra_args = ()
            f = s.facts()
            f["events"] = events_seen(s)
            f["keys"] = event_keys(s)
            f["meta"] = [(c.get("_meta") or {}).get("traceTag") for c in read_lines(calls)]
            f["contexts"] = contexts_sent(s)
            f["elapsed"] = time.monotonic() - started
            facts[mode] = f
    v.expect("native: the server got the hook's _meta (reference sane)", facts["native"]["meta"], ["CTX-meta"])
    both_same(v, facts, keys=("exit", "sent_next"))
    v.same("the _meta the MCP server got", facts["native"]["meta"], facts["hookd"]["meta"])
    v.check("hookd: no slower than a minute", facts["hookd"]["elapsed"] < 60,
            "native %.1f s, hookd %.1f s" % (facts["native"]["elapsed"], facts["hookd"]["elapsed"]))
    for event in events:
        v.same("stdin keys of %s" % event, facts["native"]["keys"].get(event), facts["hookd"]["keys"].get(event))
    return v
