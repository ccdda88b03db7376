"""Codex CLI scenarios: its answers natively and through hookd (`hookctl install --host codex`).

Each scenario puts the same recorder hooks in Codex's `~/.codex/hooks.json`. Natively they
are trusted the way a user trusts them in Codex's /hooks (a `hooks.state` record in
`config.toml`); in the hookd run `hookctl install` moves them to hookd, writes relay entries
and records their trust itself. A scenario compares what reached the model (tool outputs,
`CTX-...` words), which commands ran (marker files), what Codex printed and exited with.
"""

import json

from claude_scenarios import contexts_sent, events_seen, recorder
from harness import read_json
from scenarios import Session, Verdict, compare, scenario


def run_both(ctx, host, label, answers, turns, modes=("native", "hookd")):
    facts = {}
    for mode in modes:
        with Session(ctx, host, mode, label) as s:
            for event in answers:
                host.add_hooks(s.user_settings(), event, None, [recorder(s, "rec", answers)])
            if mode == "native":
                host.trust_hooks(s.w)
            else:
                s.install()
                s.start_daemon()
            s.go(turns)
            f = s.facts()
            f["contexts"] = contexts_sent(s)
            f["events"] = [(r["event"], r.get("tool")) for r in events_seen(s)]
            f["requests"] = len([r for r in s.w.model_requests() if r.get("kind") == "turn"])
            facts[mode] = f
    return facts


def both_same(v, facts, keys=("exit", "tool_ran", "sent_next", "printed")):
    compare(v, facts["native"], facts["hookd"], keys=keys)
    v.same("CTX- words per model request", facts["native"]["contexts"], facts["hookd"]["contexts"])
    v.same("events the hook saw", facts["native"]["events"], facts["hookd"]["events"])


def deny_answer(reason):
    return {"stdout": {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                              "permissionDecision": "deny",
                                              "permissionDecisionReason": reason}}}


@scenario("codex-deny", ["codex"], "a PreToolUse hook denies a command with a reason: natively and via hookd")
def codex_deny(ctx, host):
    v = Verdict()
    turns = [{"tool": "touch marker-1"}, {"text": ["finished"]}]
    facts = run_both(ctx, host, "deny", {"PreToolUse": deny_answer("CTX-denied")}, turns)
    v.expect("native: the command did not run (reference sane)", facts["native"]["tool_ran"], [])
    v.check("native: the model got the reason", any("CTX-denied" in t for t in facts["native"]["sent_next"]),
            str(facts["native"]["sent_next"]))
    both_same(v, facts)
    return v


@scenario("codex-exit-2", ["codex"], "a PreToolUse hook blocks with exit 2 and a reason on stderr")
def codex_exit_2(ctx, host):
    v = Verdict()
    turns = [{"tool": "touch marker-1"}, {"text": ["finished"]}]
    facts = run_both(ctx, host, "exit2", {"PreToolUse": {"stderr": "CTX-exit-two", "exit": 2}}, turns)
    v.expect("native: the command did not run (reference sane)", facts["native"]["tool_ran"], [])
    both_same(v, facts)
    return v


@scenario("codex-rewrite", ["codex"], "a PreToolUse hook rewrites the command (allow + updatedInput)")
def codex_rewrite(ctx, host):
    v = Verdict()
    turns = [{"tool": "touch marker-original"}, {"text": ["finished"]}]
    answers = {"PreToolUse": {"stdout": {"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "permissionDecision": "allow",
        "updatedInput": {"command": "touch marker-rewritten"}}}}}
    facts = run_both(ctx, host, "rewrite", answers, turns)
    v.expect("native: the rewritten command ran (reference sane)", facts["native"]["tool_ran"], ["marker-rewritten"])
    both_same(v, facts)
    return v


@scenario("codex-context", ["codex"], "SessionStart and UserPromptSubmit add context (JSON and plain text)")
def codex_context(ctx, host):
    v = Verdict()
    turns = [{"text": ["finished"]}]
    answers = {
        "SessionStart": {"stdout": {"hookSpecificOutput": {"hookEventName": "SessionStart",
                                                           "additionalContext": "CTX-session"}}},
        "UserPromptSubmit": {"stdout": "CTX-prompt-plain"},
    }
    facts = run_both(ctx, host, "context", answers, turns)
    v.check("native: both contexts reached the model (reference sane)",
            facts["native"]["contexts"] and {"CTX-session", "CTX-prompt-plain"} <= set(facts["native"]["contexts"][0]),
            str(facts["native"]["contexts"]))
    both_same(v, facts)
    return v


@scenario("codex-stop", ["codex"], "a Stop hook blocks once: the turn goes on with the reason, then ends")
def codex_stop(ctx, host):
    v = Verdict()
    turns = [{"text": ["first"]}, {"text": ["second"]}, {"text": ["third"]}]
    answers = {"Stop": {"stdout": {"decision": "block", "reason": "CTX-keep-going"}, "times": 1}}
    facts = run_both(ctx, host, "stop", answers, turns)
    v.expect("native: one more model request (reference sane)", facts["native"]["requests"], 2)
    both_same(v, facts)
    v.same("model requests", facts["native"]["requests"], facts["hookd"]["requests"])
    return v


@scenario("codex-stop-loop", ["codex"], "a Stop hook that always blocks: Codex has no loop limit, via hookd stop_hook_active ends it")
def codex_stop_loop(ctx, host):
    # Natively this loops until the CLI is killed, so only the hookd run is made.
    v = Verdict()
    turns = [{"text": ["first"]}, {"text": ["second"]}, {"text": ["third"]}]
    answers = {"Stop": {"stdout": {"decision": "block", "reason": "CTX-again"}}}
    facts = run_both(ctx, host, "stoploop", answers, turns, modes=("hookd",))
    v.expect("via hookd: one continuation, then the turn ends", facts["hookd"]["requests"], 2)
    v.expect("via hookd: Codex exits 0", facts["hookd"]["exit"], 0)
    return v


@scenario("codex-ask", ["codex"], "a PreToolUse `ask`: Codex has none and runs the tool; via hookd it is denied (documented safe difference)")
def codex_ask(ctx, host):
    v = Verdict()
    turns = [{"tool": "touch marker-1"}, {"text": ["finished"]}]
    answers = {"PreToolUse": {"stdout": {"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "permissionDecision": "ask",
        "permissionDecisionReason": "CTX-confirm"}}}}
    facts = run_both(ctx, host, "ask", answers, turns)
    v.expect("native: the command ran anyway (Codex fails open)", facts["native"]["tool_ran"], ["marker-1"])
    v.expect("via hookd: the command did not run", facts["hookd"]["tool_ran"], [])
    v.check("via hookd: the model is told a confirmation was asked for",
            any("CTX-confirm" in t for t in facts["hookd"]["sent_next"]), str(facts["hookd"]["sent_next"]))
    return v


@scenario("codex-install-roundtrip", ["codex"], "install records trust for the relay entries; doctor sees stale trust; uninstall restores every file byte for byte")
def codex_install_roundtrip(ctx, host):
    v = Verdict()
    with Session(ctx, host, "hookd", "roundtrip") as s:
        host.add_hooks(s.user_settings(), "PreToolUse", "Bash", [recorder(s, "rec", {})])
        host.trust_hooks(s.w)
        config = host.config_path(s.w)
        with open(config, "a") as f:
            f.write("# a comment of the user's\n")
        before = {p: p.read_bytes() for p in (s.user_settings(), config)}
        s.install()
        hooks = read_json(s.user_settings(), {}) or {}
        text = config.read_text()
        # The user's record at the relay entry's position (their own hook moved to hookd) is
        # updated in place; uninstall gives the file back as it was.
        v.check("relay entries have trust records", "trusted_hash" in text, text)
        v.check("relay entries written", "PreToolUse" in (hooks.get("hooks") or {}), json.dumps(hooks))
        doctor = s.w.hookctl("doctor", check=False)
        v.check("doctor: no stale trust after install", "skips the" not in doctor.stdout + doctor.stderr,
                doctor.stdout[-2000:])
        # A relay command line edited by hand: Codex would skip it; doctor says so.
        edited = json.loads(s.user_settings().read_text())
        for group in edited["hooks"]["PreToolUse"]:
            for hook in group["hooks"]:
                hook["command"] += " --retry 0"
        s.user_settings().write_text(json.dumps(edited, indent=2) + "\n")
        doctor = s.w.hookctl("doctor", check=False)
        v.check("doctor: stale trust reported", "stale" in doctor.stdout + doctor.stderr, doctor.stdout[-2000:])
        s.user_settings().write_text(json.dumps(hooks, indent=2) + "\n")
        s.w.hookctl("uninstall", "--host", "codex", "--scope", "user")
        for path, data in before.items():
            v.expect("%s restored byte for byte" % path.name, path.read_bytes() == data, True)
    return v


@scenario("codex-untrusted-skipped", ["codex"], "why install records trust: without the records the real Codex skips the relay entries silently")
def codex_untrusted_skipped(ctx, host):
    v = Verdict()
    turns = [{"tool": "touch marker-1"}, {"text": ["finished"]}]
    with Session(ctx, host, "hookd", "untrusted") as s:
        host.add_hooks(s.user_settings(), "PreToolUse", None, [recorder(s, "rec", {"PreToolUse": deny_answer("CTX-denied")})])
        s.install()
        s.start_daemon()
        config = host.config_path(s.w)
        text = config.read_text()
        cut = text.find("\n[hooks.state.")
        v.check("install wrote trust records", cut >= 0, text)
        config.write_text(text[:cut + 1] if cut >= 0 else text)
        s.go(turns)
        v.expect("untrusted relay entry skipped: the command ran", markers_of(s), ["marker-1"])
        v.expect("no hook saw the call", events_seen(s), [])
    return v


def markers_of(s):
    return sorted(str(p.relative_to(s.w.proj)) for p in s.w.proj.rglob("marker-*"))
