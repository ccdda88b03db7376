"""GitHub Copilot CLI over HTTP: `hookctl install --host copilot --transport http`, natively and
through hookd.

Copilot CLI runs an HTTP hook on a loopback address only when it is started with
`COPILOT_HOOK_ALLOW_LOCALHOST=1`, and skips it without a word otherwise; a `preToolUse` entry
that times out lets the call run. So the install keeps every event whose hooks can block
behind a command relay (with the relay's engine fallback) and sends the rest over HTTP. Each
scenario puts the same recorder hooks in `~/.copilot/hooks/hookd.json`; in the hookd run the
HTTP install moves them and hookd listens on the world's loopback port. The scenarios compare
what reached the model, which commands ran, what the hooks saw, and check that hookd's
listener was used (or, without the variable, never reached).
"""

import json
import os
import signal

from copilot_scenarios import TOUCH, deny, events_seen, recorder
from claude_scenarios import contexts_sent
from harness import read_json
from scenarios import CueWatcher, Session, Verdict, compare, scenario

ALLOW = {"COPILOT_HOOK_ALLOW_LOCALHOST": "1"}


def install_http(s):
    """`hookctl install --host copilot --transport http --events all` on the world's port: the
    events without hooks get HTTP entries too, so that the listener is exercised."""
    return s.w.hookctl(
        "install", "--host", "copilot", "--scope", "user", "--yes",
        "--transport", "http", "--port", str(s.w.http_port), "--events", "all",
    )


def entry_kinds(path):
    """{event: "http" or "relay"} of hookd's entries in a Copilot hooks file."""
    kinds = {}
    for event, groups in ((read_json(path, {}) or {}).get("hooks") or {}).items():
        for group in groups or []:
            for hook in group.get("hooks") or [group]:
                if hook.get("type") == "http" and "/v1/hooks/copilot/" in str(hook.get("url")):
                    kinds[event] = "http"
                elif "hookd-relay" in str(hook.get("command", "")):
                    kinds[event] = "relay"
    return kinds


def http_status(s):
    """hookd's HTTP counters (`hookctl status --json`), or {} when no daemon answers."""
    out = s.w.hookctl("status", "--json", check=False)
    try:
        return (json.loads(out.stdout) or {}).get("http") or {}
    except ValueError:
        return {}


def run_both(ctx, host, label, answers, turns, env=ALLOW, daemon="up"):
    """Runs the recorder hooks natively and through hookd over HTTP. `daemon`: "up", "absent"
    (installed, never started) or "killed" (SIGKILL when the first preToolUse hook runs)."""
    facts = {}
    for mode in ("native", "hookd"):
        with Session(ctx, host, mode, label) as s:
            for event in answers:
                host.add_hooks(s.user_settings(), event, None, [recorder(s, "rec", event, answers)])
            watcher = None
            killed = {"done": False}
            if mode == "hookd":
                out = install_http(s)
                facts["report"] = out.stdout + out.stderr
                facts["kinds"] = entry_kinds(s.user_settings())
                if daemon != "absent":
                    s.start_daemon()
                if daemon == "killed":
                    def kill():
                        os.kill(s.w.daemon.pid, signal.SIGKILL)
                        killed["done"] = True

                    watcher = CueWatcher([(s.w.logs / "events.jsonl", kill)])
            try:
                s.go(turns, env_extra=dict(env))
            finally:
                if watcher is not None:
                    watcher.stop()
            f = s.facts()
            f["contexts"] = contexts_sent(s)
            f["events"] = events_seen(s)
            if mode == "hookd":
                f["http"] = http_status(s) if daemon == "up" else {}
                f["killed"] = killed["done"]
            facts[mode] = f
    return facts


def same(v, facts, keys=("exit", "tool_ran", "sent_next")):
    compare(v, facts["native"], facts["hookd"], keys=keys)
    v.same("CTX- words per model request", facts["native"]["contexts"], facts["hookd"]["contexts"])
    v.same("events the hooks saw", facts["native"]["events"], facts["hookd"]["events"])


def served_over_http(v, facts):
    http = facts["hookd"].get("http") or {}
    v.check("hookd's listener answered Copilot CLI's posts", (http.get("requests") or 0) > 0, str(http))


@scenario("copilot-http-deny", ["copilot"],
          "HTTP install: a preToolUse guard denies as natively (behind a relay); a sessionEnd hook runs over HTTP",
          transports=["http"])
def copilot_http_deny(ctx, host):
    v = Verdict()
    answers = {"preToolUse": deny("CTX-denied"), "sessionEnd": {}}
    facts = run_both(ctx, host, "http-deny", answers, TOUCH)
    v.expect("native: the command did not run (reference sane)", facts["native"]["tool_ran"], [])
    kinds = facts["kinds"]
    v.expect("the guard's event is a command relay", kinds.get("preToolUse"), "relay")
    v.expect("sessionStart is a command relay (the session's project)", kinds.get("sessionStart"), "relay")
    v.expect("the sessionEnd hook (cannot block) is an HTTP entry", kinds.get("sessionEnd"), "http")
    v.check("install says what copilot must be started with",
            "COPILOT_HOOK_ALLOW_LOCALHOST=1" in facts["report"], facts["report"][-600:])
    same(v, facts)
    served_over_http(v, facts)
    return v


@scenario("copilot-http-rewrite", ["copilot"], "HTTP install: a preToolUse hook rewrites the command (modifiedArgs)",
          transports=["http"])
def copilot_http_rewrite(ctx, host):
    v = Verdict()
    turns = [{"tool": "touch marker-original"}, {"text": ["finished"]}]
    answers = {"preToolUse": {"stdout": {"modifiedArgs": {"command": "touch marker-rewritten",
                                                          "description": "scripted command"}}}}
    facts = run_both(ctx, host, "http-rewrite", answers, turns)
    v.expect("native: the rewritten command ran (reference sane)", facts["native"]["tool_ran"], ["marker-rewritten"])
    same(v, facts)
    served_over_http(v, facts)
    return v


@scenario("copilot-http-context", ["copilot"], "HTTP install: a postToolUse hook adds context the model sees",
          transports=["http"])
def copilot_http_context(ctx, host):
    v = Verdict()
    answers = {"postToolUse": {"stdout": {"additionalContext": "CTX-after-tool"}}}
    facts = run_both(ctx, host, "http-context", answers, TOUCH)
    v.check("native: the model saw the context (reference sane)",
            any("CTX-after-tool" in c for c in facts["native"]["contexts"]), str(facts["native"]["contexts"]))
    same(v, facts)
    served_over_http(v, facts)
    return v


@scenario("copilot-http-no-env", ["copilot"],
          "HTTP install, copilot started without COPILOT_HOOK_ALLOW_LOCALHOST: the guard still denies; the HTTP entries are skipped",
          transports=["http"])
def copilot_http_no_env(ctx, host):
    v = Verdict()
    answers = {"preToolUse": deny("CTX-denied"), "sessionEnd": {}}
    facts = run_both(ctx, host, "http-noenv", answers, TOUCH, env={})
    v.expect("native: the command did not run (reference sane)", facts["native"]["tool_ran"], [])
    compare(v, facts["native"], facts["hookd"], keys=("exit", "tool_ran", "sent_next"))
    http = facts["hookd"]["http"]
    v.expect("Copilot CLI posted nothing to hookd (it skips the entries without a word)",
             http.get("requests"), 0)
    # What is lost without the variable: the hooks of events behind HTTP entries (here the
    # sessionEnd logger, which cannot block), as the docs say.
    v.expect("the guard ran (its relay), the sessionEnd hook did not",
             facts["hookd"]["events"], [e for e in facts["native"]["events"] if e[0] != "sessionEnd"])
    return v


@scenario("copilot-http-hookd-stopped", ["copilot"],
          "HTTP install, hookd not running: the guard's call is denied by the relay's engine fallback, not run unguarded",
          transports=["http"])
def copilot_http_hookd_stopped(ctx, host):
    v = Verdict()
    answers = {"preToolUse": deny("CTX-denied"), "sessionEnd": {}}
    facts = run_both(ctx, host, "http-stopped", answers, TOUCH, daemon="absent")
    v.expect("native: the command did not run (reference sane)", facts["native"]["tool_ran"], [])
    compare(v, facts["native"], facts["hookd"], keys=("exit", "tool_ran", "sent_next"))
    return v


@scenario("copilot-http-hookd-killed", ["copilot"],
          "HTTP install, hookd killed with SIGKILL as the first guard runs: no guarded call goes through",
          transports=["http"])
def copilot_http_hookd_killed(ctx, host):
    v = Verdict()
    turns = [{"tool": "touch marker-1"}, {"tool": "touch marker-2"}, {"tool": "touch marker-3"},
             {"text": ["finished"]}]
    facts = run_both(ctx, host, "http-killed", {"preToolUse": deny("CTX-denied")}, turns, daemon="killed")
    v.expect("native: no command ran (reference sane)", facts["native"]["tool_ran"], [])
    v.check("hookd was killed while the first guard ran", facts["hookd"]["killed"], "")
    compare(v, facts["native"], facts["hookd"], keys=("exit", "tool_ran", "sent_next"))
    return v
