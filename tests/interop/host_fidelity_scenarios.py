"""Host fidelity: what each CLI gives its hooks, and project installs on a machine without hookd.

- `project-without-hookd`: a project's guard installed with `hookctl install --scope project`
  (the project's shared settings file then holds the relay entry and a guarded copy of the
  guard), the CLI run with no hookd binary on `PATH` and no daemon, as on a teammate's
  clone: the guard blocks with its reason, as natively.
- `hook-env`: the variables a hook sees, names and values, natively and through hookd (less
  hookd's own `HOOKD_*`), and a command printing `'$HOME'` in single quotes.
- Codex CLI: `SessionEnd` and `PermissionRequest` hooks through hookd as natively, and the
  reason Codex shows when two hooks deny.
"""

import hashlib
import json
import os
import re
import shlex

import harness

from claude_scenarios import RECORDER, events_seen
from harness import CODEX_NO_MATCHER, Codex, read_json, read_lines, write_script
from scenarios import Session, Verdict, compare, scenario


def path_without_hookd(s):
    """The world's PATH without the directory of hookd's binaries: a machine without hookd."""
    hookd_dir = os.path.dirname(str(s.ctx.tools.hookctl))
    return ":".join(d for d in s.w.base_env()["PATH"].split(":") if d != hookd_dir)


def recorder_entry(s, host, name, answers):
    """A recorder hook (logs each event, answers per event) in the host's settings language."""
    script = write_script(s.w.hooks_dir / "recorder.py", RECORDER)
    answers_path = s.w.hooks_dir / ("answers-%s.json" % name)
    answers_path.write_text(json.dumps(answers))
    entry = {
        "type": "command",
        "command": 'python3 "%s" "%s" %s "%s"' % (script, s.w.logs / "events.jsonl", name, answers_path),
    }
    if host.name == "gemini":
        entry["name"] = name
        entry["timeout"] = 10000
    else:
        entry["timeout"] = 10
    return entry


def deny_answers(host, reason):
    if host.name == "gemini":
        return {"BeforeTool": {"stdout": {"decision": "deny", "reason": reason}}}
    return {"PreToolUse": {"stdout": {"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "permissionDecision": "deny",
        "permissionDecisionReason": reason}}}}


def codex_trust(host, w, path, project=None):
    """Trusts every command hook of the hooks.json at `path` (and the project, when given), as
    a user does in Codex: `hooks.state."<key>".trusted_hash` in the user's config.toml."""
    hooks = (read_json(path, {}) or {}).get("hooks") or {}
    lines = []
    if project is not None:
        lines.append('\n[projects.%s]\ntrust_level = "trusted"\n' % json.dumps(str(project)))
    for event, groups in hooks.items():
        label = re.sub(r"(?<!^)([A-Z])", r"_\1", event).lower()
        for gi, group in enumerate(groups or []):
            for hi, handler in enumerate(group.get("hooks") or []):
                if handler.get("type") != "command":
                    continue
                timeout = int(handler.get("timeout", 1 if event == "SessionEnd" else 600))
                timeout = min(max(1, timeout), 3) if event in ("SessionEnd", "Interrupt") else max(1, timeout)
                normalized = {"async": bool(handler.get("async", False)), "command": handler["command"],
                              "timeout": timeout, "type": "command"}
                identity = {"event_name": label, "hooks": [normalized]}
                if group.get("matcher") is not None and event not in CODEX_NO_MATCHER:
                    identity["matcher"] = group["matcher"]
                canonical = json.dumps(identity, separators=(",", ":"), sort_keys=True)
                digest = hashlib.sha256(canonical.encode()).hexdigest()
                key = "%s:%s:%d:%d" % (path, label, gi, hi)
                lines.append('\n[hooks.state.%s]\ntrusted_hash = "sha256:%s"\n' % (json.dumps(key), digest))
    with open(host.config_path(w), "a") as f:
        f.write("".join(lines))


def guard_turns(host):
    # Codex refuses `rm -rf` itself before any hook: its guard denies every command instead.
    return [{"tool": "touch marker-1"}, {"text": ["finished"]}]


@scenario("project-without-hookd", ["gemini", "claude", "codex"],
          "a project install on a clone with no hookd binary on PATH and no daemon: the guard still blocks with its reason")
def project_without_hookd(ctx, host):
    v = Verdict()
    facts = {}
    for mode in ("native", "hookd"):
        with Session(ctx, host, mode, "nohookd") as s:
            settings = s.project_settings()
            host.add_hooks(settings, host.tool_event, host.shell_tool,
                           [recorder_entry(s, host, "guard", deny_answers(host, "CTX-project-guard"))])
            if mode == "hookd":
                s.install(scope="project")
                v.check("the shared file holds a guarded copy",
                        "command -v hookd-relay" in settings.read_text(), settings.read_text())
            if host.name == "codex":
                # Natively the user trusts the project and its hooks; via hookd the install
                # wrote the hooks' records, and the user trusts the project.
                if mode == "native":
                    codex_trust(host, s.w, settings, project=s.w.proj)
                else:
                    with open(host.config_path(s.w), "a") as f:
                        f.write('\n[projects.%s]\ntrust_level = "trusted"\n' % json.dumps(str(s.w.proj)))
            # No daemon, and no hookd binary on the CLI's PATH: a teammate's machine.
            s.go(guard_turns(host), env_extra={"PATH": path_without_hookd(s)}, daemon_env=False)
            f = s.facts()
            f["guard_runs"] = len(events_seen(s, "guard"))
            facts[mode] = f
    v.expect("native: the guard blocked (reference sane)", facts["native"]["tool_ran"], [])
    v.check("native: the model got the reason",
            any("CTX-project-guard" in t for t in facts["native"]["sent_next"]), str(facts["native"]["sent_next"]))
    # Codex prints a line per hook it starts ("hook: PreToolUse"), and the shared file has
    # one more (the relay entry, which says nothing here); its log lines carry timestamps.
    keys = ("exit", "tool_ran", "sent_next", "printed") + (() if host.name == "codex" else ("hook_stderr",))
    compare(v, facts["native"], facts["hookd"], keys=keys)
    v.same("guard_runs", facts["native"]["guard_runs"], facts["hookd"]["guard_runs"])
    return v


ENV_DUMP = r'''#!/usr/bin/env python3
"""Logs the environment it was started with (and its event) as one JSON line."""
import json, os, sys
payload = json.load(sys.stdin)
with open(sys.argv[1], "a") as f:
    f.write(json.dumps({"event": payload.get("hook_event_name"), "env": dict(os.environ)}) + "\n")
'''

# Variables of hookd's own, which a hook run by hookd gets on top of its host's.
HOOKD_OWN = re.compile(r"^HOOKD_")
# Values that differ between any two runs of a CLI (a new session, process, port or secret
# each time): compared by presence.
PER_RUN = re.compile(r"(_TOKEN|_PID|SESSION_ID)$")


def env_value(s, name, value):
    if PER_RUN.search(name):
        return "<per run>"
    text = s.run.normalize(value)
    # The world's directory as Claude Code spells it in names (every character but a letter
    # or a digit as `-`: a temp directory's `_` too).
    text = text.replace(re.sub(r"[^A-Za-z0-9]", "-", str(s.w.root)), "<world>")
    text = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:<port>", text)
    return re.sub(r"/\d+\.sock$", "/<n>.sock", text)


def env_entries(s, host, log):
    dump = write_script(s.w.hooks_dir / "envdump.py", ENV_DUMP)
    literal = s.w.logs / "literal.txt"
    commands = [
        'python3 "%s" "%s"' % (dump, log),
        # Single quotes: the shell prints it as written; Gemini CLI expands settings strings
        # when it loads them, so for it the home directory is printed.
        "printf '%%s\\n' '$HOME' >> %s" % shlex.quote(str(literal)),
    ]
    entries = []
    for i, command in enumerate(commands):
        entry = {"type": "command", "command": command}
        if host.name == "gemini":
            entry["name"] = "env-%d" % i
            entry["timeout"] = 10000
        else:
            entry["timeout"] = 10
        entries.append(entry)
    return entries, literal


@scenario("hook-env", ["gemini", "claude", "codex"],
          "a hook's environment (names and values, less hookd's HOOKD_*) and a '$HOME' in single quotes, as natively")
def hook_env(ctx, host):
    v = Verdict()
    facts = {}
    for mode in ("native", "hookd"):
        with Session(ctx, host, mode, "env") as s:
            log = s.w.logs / "env.jsonl"
            entries, literal = env_entries(s, host, log)
            host.add_hooks(s.user_settings(), host.tool_event, host.shell_tool, entries)
            if mode == "native":
                if host.name == "codex":
                    host.trust_hooks(s.w)
            else:
                s.install()
                s.start_daemon()
            s.go([{"tool": "touch marker-1"}, {"text": ["finished"]}])
            runs = read_lines(log)
            env = runs[0]["env"] if runs else {}
            facts[mode] = {
                "env": {k: env_value(s, k, val) for k, val in env.items() if not HOOKD_OWN.match(k)},
                "hookd_vars": sorted(k for k in env if HOOKD_OWN.match(k)),
                "literal": [s.run.normalize(l) for l in (literal.read_text().splitlines() if literal.exists() else [])],
                "tool_ran": s.facts()["tool_ran"],
            }
    v.check("native: the hook ran (reference sane)", facts["native"]["env"], str(facts["native"]))
    native, hookd = facts["native"]["env"], facts["hookd"]["env"]
    # Over HTTP a hook gets the environment the session's SessionStart relay carried, and
    # Claude Code gives `CLAUDE_EFFORT` to its later command hooks only, so HTTP events lack
    # it (docs/hosts.md, "Claude Code over HTTP").
    only_native = ["CLAUDE_EFFORT"] if host.name == "claude" and harness.TRANSPORT == "http" else []
    v.expect("variables only natively", sorted(set(native) - set(hookd)), only_native)
    v.expect("variables only through hookd", sorted(set(hookd) - set(native)), [])
    differing = {k: (native.get(k), hookd.get(k)) for k in (set(native) | set(hookd)) - set(only_native)
                 if native.get(k) != hookd.get(k)}
    v.expect("variables whose values differ", differing, {})
    v.same("'$HOME' in single quotes", facts["native"]["literal"], facts["hookd"]["literal"])
    # The socket, and the session-state token a hook's `hookctl state set` needs.
    v.expect("hookd's own variables, through hookd", facts["hookd"]["hookd_vars"], ["HOOKD_SOCKET", "HOOKD_STATE_TOKEN"])
    v.same("tool_ran", facts["native"]["tool_ran"], facts["hookd"]["tool_ran"])
    return v


def codex_run_both(ctx, host, label, hooks, turns, host_for_run=None):
    """hooks: [(event, matcher, name, answers)] as Codex user hooks; native and via hookd."""
    facts = {}
    for mode in ("native", "hookd"):
        runner = host_for_run or host
        with Session(ctx, runner, mode, label) as s:
            for event, matcher, name, answers in hooks:
                runner.add_hooks(s.user_settings(), event, matcher, [recorder_entry(s, runner, name, answers)])
            if mode == "native":
                codex_trust(runner, s.w, s.user_settings())
            else:
                s.install()
                s.start_daemon()
            s.go(turns)
            f = s.facts()
            f["events"] = [(r["hook"], r["event"], r.get("tool")) for r in events_seen(s)]
            facts[mode] = f
    return facts


@scenario("codex-session-end", ["codex"], "a SessionEnd hook runs through hookd as natively (its relay entry's trust record matches Codex's clamp)")
def codex_session_end(ctx, host):
    v = Verdict()
    facts = codex_run_both(ctx, host, "sessionend", [("SessionEnd", None, "end", {})],
                           [{"text": ["finished"]}])
    v.check("native: the SessionEnd hook ran (reference sane)",
            ("end", "SessionEnd", None) in facts["native"]["events"], str(facts["native"]["events"]))
    v.same("events the hook saw", facts["native"]["events"], facts["hookd"]["events"])
    compare(v, facts["native"], facts["hookd"], keys=("exit", "printed"))
    return v


class CodexAsking(Codex):
    """Codex CLI run so that a command needs approval (a read-only sandbox, approval on
    request), which is when it fires PermissionRequest."""

    def prepare(self, w):
        super().prepare(w)
        text = self.config_path(w).read_text()
        self.config_path(w).write_text(
            'approval_policy = "on-request"\nsandbox_mode = "read-only"\napprovals_reviewer = "auto_review"\n' + text)

    def args(self, prompt):
        return [
            "exec", "--skip-git-repo-check",
            "-c", 'model_providers.interop.base_url="%s/v1"' % self.model_url,
            "-C", str(self.world.proj), prompt,
        ]


@scenario("codex-permission-request", ["codex"], "a PermissionRequest hook that denies runs through hookd as natively")
def codex_permission_request(ctx, host):
    v = Verdict()
    answers = {"PermissionRequest": {"stdout": {"hookSpecificOutput": {
        "hookEventName": "PermissionRequest",
        "decision": {"behavior": "deny", "message": "CTX-no-permission"}}}}}
    turns = [{"tool": "touch marker-1", "tool_args": {
        "sandbox_permissions": "require_escalated", "justification": "write a marker"}},
        {"text": ["finished"]}]
    facts = codex_run_both(ctx, host, "permreq", [("PermissionRequest", "Bash", "perm", answers)], turns,
                           host_for_run=CodexAsking(host.argv))
    v.check("native: the PermissionRequest hook ran (reference sane)",
            any(e[1] == "PermissionRequest" for e in facts["native"]["events"]), str(facts["native"]["events"]))
    v.same("events the hook saw", facts["native"]["events"], facts["hookd"]["events"])
    compare(v, facts["native"], facts["hookd"], keys=("exit", "tool_ran", "sent_next", "printed"))
    return v


@scenario("codex-two-denies", ["codex"], "two PreToolUse hooks deny: Codex shows the first declared hook's reason, via hookd too")
def codex_two_denies(ctx, host):
    v = Verdict()
    deny = lambda reason: {"PreToolUse": {"stdout": {"hookSpecificOutput": {  # noqa: E731
        "hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": reason}}}}
    hooks = [("PreToolUse", "Bash", "first", deny("CTX-first-reason")),
             ("PreToolUse", "Bash", "second", deny("CTX-second-reason"))]
    facts = codex_run_both(ctx, host, "twodenies", hooks, [{"tool": "touch marker-1"}, {"text": ["finished"]}])
    v.expect("native: the command did not run (reference sane)", facts["native"]["tool_ran"], [])
    v.check("native: the first declared reason is shown",
            any("CTX-first-reason" in t and "CTX-second-reason" not in t for t in facts["native"]["sent_next"]),
            str(facts["native"]["sent_next"]))
    compare(v, facts["native"], facts["hookd"], keys=("exit", "tool_ran", "sent_next", "printed"))
    return v


@scenario("codex-unselected-tool", ["codex"], "a hook on apply_patch only: a shell command is answered as with no hook, natively and via hookd")
def codex_unselected_tool(ctx, host):
    v = Verdict()
    hooks = [("PreToolUse", "apply_patch", "patches", {"PreToolUse": {"stdout": {"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "CTX-no-patch"}}}})]
    facts = codex_run_both(ctx, host, "unselected", hooks, [{"tool": "touch marker-1"}, {"text": ["finished"]}])
    v.expect("native: the shell command ran (reference sane)", facts["native"]["tool_ran"], ["marker-1"])
    compare(v, facts["native"], facts["hookd"], keys=("exit", "tool_ran", "sent_next", "printed", "hook_stderr"))
    v.same("events the hook saw", facts["native"]["events"], facts["hookd"]["events"])
    return v
