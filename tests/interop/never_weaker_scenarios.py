"""Never weaker than the CLI alone: a guard moved into hookd still blocks when hookd is not
running, is stopped with SIGSTOP, or is killed with SIGKILL in the middle of a session.

Natively the CLI runs the guard itself. Through hookd the guard was moved by `hookctl
install`, and the daemon is absent, stopped or killed: the relay then runs the guard with
hookd's own engine (`hookd --oneshot`, the `hookd` beside `hookd-relay`), or, when the daemon
has the event but stopped answering, lets the guard's failure policy decide. Every scenario
checks that no guarded call went through, as natively, and compares what reached the model.
Over Claude Code's HTTP entries there is no relay: the entry's `onFailure: "block"` refuses
every call hookd does not answer, which is checked instead (same calls refused, Claude Code's
words).
"""

import os
import signal
import time

import harness
from harness import read_json, write_json
from scenarios import (
    CueWatcher,
    Session,
    Verdict,
    add_tool_hook,
    compare,
    guard_entry,
    hook_runs,
    rm_turns,
    scenario,
)

HOSTS = ["gemini", "claude", "codex"]


def over_http(host):
    """Whether this run's hookd side is Claude Code's HTTP entries (`--transport http`)."""
    return host.name == "claude" and harness.TRANSPORT == "http"


HTTP_BLOCK = 'blocking because onFailure is "block"'


def http_blocked(v, native, hookd):
    """Over HTTP there is no relay to run the guard: Claude Code itself blocks every call that
    hookd does not answer, because `install` gave the entry `onFailure: "block"`. Not weaker:
    the same calls are refused as natively, with Claude Code's words instead of the guard's."""
    v.same("tool ran", native["tool_ran"], hookd["tool_ran"])
    v.same("exit", native["exit"], hookd["exit"])
    sent = hookd["sent_next"]
    v.check(
        "every call refused by the entry's onFailure block (as many as natively)",
        len(sent) == len(native["sent_next"]) and all(HTTP_BLOCK in str(x) for x in sent),
        str(sent)[:600],
    )


def fail_closed(s):
    """Marks every hook in hookd's user hooks file `on_failure: deny` (a fail-closed guard)."""
    path = s.w.config / "hookd" / "hooks.json"
    hooks = read_json(path, {}) or {}
    for groups in (hooks.get("hooks") or {}).values():
        for group in groups or []:
            for hook in group.get("hooks") or []:
                hook["on_failure"] = "deny"
    write_json(path, hooks)


def guarded_session(ctx, host, mode, label, turns, hookd_setup, env_extra=None):
    # hookd_setup returns a CueWatcher to stop afterwards, or None.
    """Runs one session with the guard natively, or moved into hookd with `hookd_setup(s)`
    deciding what becomes of the daemon; returns its facts, with how often the guard ran and
    how long the CLI took."""
    with Session(ctx, host, mode, label) as s:
        add_tool_hook(host, s.user_settings(), guard_entry(host, s.w))
        watcher = None
        if mode == "native":
            if host.name == "codex":
                host.trust_hooks(s.w)
        else:
            s.install()
            watcher = hookd_setup(s)
        started = time.monotonic()
        try:
            s.go(turns, env_extra=env_extra)
        finally:
            if watcher is not None:
                watcher.stop()
            daemon = s.w.daemon
            if daemon is not None and daemon.poll() is None:
                # A stopped daemon cannot take the SIGTERM the world's close sends.
                os.kill(daemon.pid, signal.SIGCONT)
        f = s.facts()
        f["seconds"] = time.monotonic() - started
        f["guard_runs"] = len(hook_runs(s.w, "guard"))
        f["cue_errors"] = watcher.errors if watcher is not None else []
        f["relay_log"] = read_relay_log(s)
        return f


def read_relay_log(s):
    path = s.w.state / "hookd" / "relay.log"
    try:
        return path.read_text()
    except OSError:
        return ""


@scenario("stopped-nothing-configured", HOSTS, "hookd stopped before the tool call, nothing configured: the moved guard still blocks")
def stopped_nothing_configured(ctx, host):
    v = Verdict()
    facts = {}
    turns = rm_turns(2)
    for mode in ("native", "hookd"):
        # No daemon and no unit: the relay finds no socket and runs the guard in the engine.
        facts[mode] = guarded_session(ctx, host, mode, "stopped", turns, lambda s: None)
    v.expect("native blocks both calls (reference sane)", facts["native"]["tool_ran"], [])
    if over_http(host):
        http_blocked(v, facts["native"], facts["hookd"])
        return v
    compare(v, facts["native"], facts["hookd"], keys=("exit", "tool_ran", "sent_next", "printed"))
    v.same("guard runs", facts["native"]["guard_runs"], facts["hookd"]["guard_runs"])
    v.check(
        "the relay logged the fallback",
        "ran the hooks with hookd --oneshot" in facts["hookd"]["relay_log"],
        facts["hookd"]["relay_log"][-400:],
    )
    return v


@scenario("sigstop-fail-closed", HOSTS, "hookd stopped with SIGSTOP while a fail-closed guard runs: blocked before the host's timeout")
def sigstop_fail_closed(ctx, host):
    v = Verdict()
    turns = rm_turns(2)
    facts = {
        "native": guarded_session(ctx, host, "native", "sigstop", turns, lambda s: None),
        "hookd": sigstop_hookd(ctx, host, turns),
    }
    v.expect("native blocks both calls (reference sane)", facts["native"]["tool_ran"], [])
    v.same("tool ran", facts["native"]["tool_ran"], facts["hookd"]["tool_ran"])
    v.same("exit", facts["native"]["exit"], facts["hookd"]["exit"])
    v.check(
        "the daemon was stopped while the first guard ran",
        facts["hookd"]["stopped"] and not facts["hookd"]["cue_errors"],
        "stopped %s, errors %s" % (facts["hookd"]["stopped"], facts["hookd"]["cue_errors"]),
    )
    if over_http(host):
        # No relay pings a stopped daemon over HTTP: each call waits for its entry's timeout
        # (the guard's 10 s plus 10 s), then Claude Code blocks it; Stop and SessionEnd, which
        # have no hook, wait 10 s each.
        http_blocked(v, facts["native"], facts["hookd"])
        v.check(
            "both calls refused within the entries' timeouts (20 s each, 10 s for Stop and SessionEnd)",
            facts["hookd"]["seconds"] < 90,
            "%.1f s" % facts["hookd"]["seconds"],
        )
        return v
    v.check(
        "a failure policy decided (the daemon had the event)",
        "decided by the hooks' failure policies" in facts["hookd"]["relay_log"],
        facts["hookd"]["relay_log"][-400:],
    )
    v.check(
        "both calls answered well within the relay entries' timeout (20 s each)",
        facts["hookd"]["seconds"] < 40,
        "%.1f s" % facts["hookd"]["seconds"],
    )
    return v


def sigstop_hookd(ctx, host, turns):
    """The hookd side of `sigstop-fail-closed`: the daemon is stopped with SIGSTOP once the
    first guard runs (the guard creates the cue file and then takes a second)."""
    with Session(ctx, host, "hookd", "sigstop") as s:
        add_tool_hook(host, s.user_settings(), guard_entry(host, s.w))
        s.install()
        fail_closed(s)
        s.start_daemon()
        cue = s.w.root / "cue-guard-running"
        state = {"stopped": False}

        def stop():
            os.kill(s.w.daemon.pid, signal.SIGSTOP)
            state["stopped"] = True

        watcher = CueWatcher([(cue, stop)])
        started = time.monotonic()
        try:
            s.go(
                turns,
                env_extra={"INTEROP_HOOK_SIGNAL": str(cue), "INTEROP_HOOK_SLEEP": "1.0"},
            )
        finally:
            watcher.stop()
            if s.w.daemon is not None and s.w.daemon.poll() is None:
                os.kill(s.w.daemon.pid, signal.SIGCONT)
        f = s.facts()
        f["seconds"] = time.monotonic() - started
        f["guard_runs"] = len(hook_runs(s.w, "guard"))
        f["cue_errors"] = watcher.errors
        f["stopped"] = state["stopped"]
        f["relay_log"] = read_relay_log(s)
        return f


@scenario("sigkill-mid-session", HOSTS, "hookd killed with SIGKILL while the guard runs: no guarded call goes through")
def sigkill_mid_session(ctx, host):
    v = Verdict()
    facts = {}
    turns = rm_turns(3)
    for mode in ("native", "hookd"):
        with Session(ctx, host, mode, "sigkill") as s:
            add_tool_hook(host, s.user_settings(), guard_entry(host, s.w))
            cue = s.w.root / "cue-guard-running"
            watcher = None
            killed = {"done": False}
            if mode == "native":
                if host.name == "codex":
                    host.trust_hooks(s.w)
            else:
                s.install()
                s.start_daemon()

                def kill():
                    os.kill(s.w.daemon.pid, signal.SIGKILL)
                    killed["done"] = True

                watcher = CueWatcher([(cue, kill)])
            try:
                s.go(
                    turns,
                    env_extra={"INTEROP_HOOK_SIGNAL": str(cue), "INTEROP_HOOK_SLEEP": "0.5"},
                )
            finally:
                if watcher is not None:
                    watcher.stop()
            f = s.facts()
            f["killed"] = killed["done"]
            f["relay_log"] = read_relay_log(s)
            facts[mode] = f
    v.expect("native blocks all three calls (reference sane)", facts["native"]["tool_ran"], [])
    v.check("the daemon was killed while the first guard ran", facts["hookd"]["killed"], "")
    if over_http(host):
        http_blocked(v, facts["native"], facts["hookd"])
        return v
    compare(v, facts["native"], facts["hookd"], keys=("exit", "tool_ran", "sent_next", "printed"))
    v.check(
        "the relay logged the fallback",
        "ran the hooks with hookd --oneshot" in facts["hookd"]["relay_log"],
        facts["hookd"]["relay_log"][-400:],
    )
    return v
