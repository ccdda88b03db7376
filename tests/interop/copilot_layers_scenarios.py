"""Copilot CLI's own hook files as hookd layers (`hookd --copilot-settings`).

A guard written only in `~/.copilot/hooks/guard.json` runs in Copilot CLI, which reads that
file itself, and, through hookd started with `--copilot-settings` and `hookctl install --host
claude` (which wires Claude Code's `PreToolUse` for it), for Claude Code, answering in
Copilot's words, which hookd turns into Claude Code's. Each CLI is run once: the guard runs
exactly once in each and denies `rm -rf` in each. `copilot-layers-where` puts the guard in
each place Copilot CLI reads hooks from, or ignores, and checks that hookd runs it for Claude
Code exactly where Copilot runs it.
"""

import json

from harness import write_json, write_script
from scenarios import Session, Verdict, markers, rm_turns, scenario

# A guard in Copilot's language: it reads Copilot's stdin object (`toolName`, `toolArgs`) and
# denies with `permissionDecision`.
COPILOT_GUARD = r'''#!/usr/bin/env python3
import json, sys
log_path = sys.argv[1]
payload = json.load(sys.stdin)
command = (payload.get("toolArgs") or {}).get("command", "")
with open(log_path, "a") as f:
    f.write(json.dumps({"tool": payload.get("toolName"), "command": command,
                        "keys": sorted(payload)}) + "\n")
if "rm -rf" in command:
    print(json.dumps({"permissionDecision": "deny",
                      "permissionDecisionReason": "copilot file guard: no rm -rf"}))
'''


def guard_runs(w):
    path = w.logs / "copilot-guard.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def write_guard_file(w, extra=None):
    script = write_script(w.hooks_dir / "copilot-guard.py", COPILOT_GUARD)
    command = 'python3 "%s" "%s"' % (script, w.logs / "copilot-guard.jsonl")
    hooks = {"version": 1, "hooks": {"preToolUse": [{"type": "command", "bash": command, "timeoutSec": 10}]}}
    hooks.update(extra or {})
    write_json(w.home / ".copilot" / "hooks" / "guard.json", hooks)


@scenario("copilot-layers", ["copilot"],
          "a guard only in ~/.copilot/hooks/guard.json denies rm -rf in Copilot CLI and, via hookd --copilot-settings, in Claude Code: once in each")
def copilot_layers(ctx, host):
    import harness

    v = Verdict()
    claude = harness.Claude(harness.install_clis(["claude"])["claude"])
    with Session(ctx, host, "hookd", "layers") as s:
        write_guard_file(s.w)
        said = relay_claude(s, claude)
        v.check("install --host claude wires PreToolUse for the Copilot guard",
                "PreToolUse" in claude.user_settings_path(s.w).read_text(), said[-600:])
        listed = s.w.hookctl("list", "--cwd", str(s.w.proj), check=False)
        v.check("hookctl list names the Copilot file", "guard.json" in listed.stdout, listed.stdout[-800:])

        # Copilot CLI runs its own file itself; it has no relay entry, so hookd is not asked.
        s.go(rm_turns())
        copilot_runs = len(guard_runs(s.w))
        v.expect("Copilot did not run rm -rf", markers(s.w), [])
        v.expect("the guard ran once in Copilot", copilot_runs, 1)

        claude_run = claude.run(s.w, "run the scripted commands", env_extra={"HOOKD_SOCKET": str(s.w.socket)})
        s.w.wait_background_done()
        runs = guard_runs(s.w)
        v.expect("Claude Code did not run rm -rf", markers(s.w), [])
        v.expect("the guard ran once in Claude Code (through hookd)", len(runs) - copilot_runs, 1)
        if len(runs) > copilot_runs:
            v.expect("in hookd the guard read Copilot's payload", runs[-1].get("tool"), "bash")
        claude_requests = [r for r in s.w.model_requests()
                           if any(t.get("name") == "Bash" for t in (r.get("body") or {}).get("tools") or [])]
        said = claude.tool_results(claude_requests)
        v.check("Claude Code told the model the guard's reason",
                any("copilot file guard: no rm -rf" in r for r in said), str(said))
        v.expect("Claude Code exited 0", claude_run.code, 0)
    return v



def relay_claude(s, claude, by_hand=False):
    """Starts hookd with `--copilot-settings`, then `hookctl install --host claude`: the
    daemon's record says it reads Copilot's files, so install wires Claude Code's
    `PreToolUse` to hookd for the Copilot guard (there is nothing of Claude Code's to move).
    `by_hand`: the relay entry is written into Claude Code's user settings instead, for a
    guard in a project's files, whose install (`--scope project`) would write into the
    project's `.claude/settings.json`, which Copilot CLI runs too."""
    claude.prepare(s.w)
    s.start_daemon("--copilot-settings")
    if by_hand:
        relay = '"%s" relay PreToolUse --dialect claude' % s.w.tools.hookctl
        settings = json.loads(claude.user_settings_path(s.w).read_text())
        settings["hooks"] = {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": relay}]}]}
        write_json(claude.user_settings_path(s.w), settings)
        return ""
    out = s.w.hookctl("install", "--host", "claude", "--yes", check=False)
    return out.stdout + out.stderr


# Where the guard is, and whether Copilot CLI 1.0.102 runs it (observed): hookd must run it for
# Claude Code exactly where Copilot runs it for itself.
PLACES = [
    ("hooks/guard.json", None, True),
    ("hooks/guard.json", {"disableAllHooks": True}, False),
    ("hooks/guard.json + hooks/off.json", None, True),
    ("hooks/guard.json", {"allowManagedHooksOnly": True}, True),
    ("hooks/.guard.json", None, False),
    ("hooks/guard.JSON", None, False),
    ("settings.json", None, True),
    ("config.json", None, False),
    ("PROJECT .github/copilot/settings.json", None, True),
    ("PROJECT .github/copilot/settings.local.json", None, True),
    ("PROJECT .github/hooks/guard.json", None, True),
]


def place_guard(w, place, extra):
    write_guard_file(w, extra)
    home = w.home / ".copilot"
    guard = json.loads((home / "hooks" / "guard.json").read_text())
    if place == "hooks/guard.json":
        return
    (home / "hooks" / "guard.json").unlink()
    if place == "hooks/guard.json + hooks/off.json":
        write_json(home / "hooks" / "guard.json", guard)
        write_json(home / "hooks" / "off.json", {"version": 1, "disableAllHooks": True, "hooks": {}})
    elif place.startswith("hooks/"):
        write_json(home / place, guard)
    elif place.startswith("PROJECT "):
        write_json(w.proj / place.split(" ", 1)[1], {"hooks": guard["hooks"]})
    else:
        path = home / place
        settings = json.loads(path.read_text()) if path.exists() else {}
        settings["hooks"] = guard["hooks"]
        write_json(path, settings)


@scenario("copilot-layers-where", ["copilot"],
          "a Copilot guard in each place Copilot CLI reads (or ignores) hooks: hookd --copilot-settings runs it for Claude Code exactly where Copilot runs it")
def copilot_layers_where(ctx, host):
    import harness

    v = Verdict()
    claude = harness.Claude(harness.install_clis(["claude"])["claude"])
    for index, (place, extra, runs) in enumerate(PLACES):
        label = "%s%s" % (place, " " + json.dumps(extra) if extra else "")
        with Session(ctx, host, "hookd", "where-%d" % index) as s:
            place_guard(s.w, place, extra)
            relay_claude(s, claude, by_hand=place.startswith("PROJECT "))
            s.go(rm_turns())
            in_copilot = len(guard_runs(s.w))
            claude.run(s.w, "run the scripted commands", env_extra={"HOOKD_SOCKET": str(s.w.socket)})
            s.w.wait_background_done()
            in_hookd = len(guard_runs(s.w)) - in_copilot
            v.expect("%s: Copilot runs it (as observed)" % label, in_copilot, 1 if runs else 0)
            v.expect("%s: hookd runs it for Claude Code as Copilot does" % label, in_hookd, in_copilot)
    return v


@scenario("copilot-layers-claude-project", ["copilot"],
          "with hookd --copilot-settings and `install --host claude --scope project`, whose "
          ".claude/settings.json Copilot CLI runs too: on an allowed call the Copilot guard runs once "
          "in Copilot (the relay it runs from the Claude file is relayed by Copilot) and once in Claude Code")
def copilot_layers_claude_project(ctx, host):
    import harness

    v = Verdict()
    claude = harness.Claude(harness.install_clis(["claude"])["claude"])
    with Session(ctx, host, "hookd", "layers-project") as s:
        write_guard_file(s.w)
        claude.prepare(s.w)
        s.start_daemon("--copilot-settings")
        out = s.w.hookctl("install", "--host", "claude", "--scope", "project", "--yes",
                          "--cwd", str(s.w.proj), check=False)
        wired = (s.w.proj / ".claude" / "settings.json")
        v.check("the project's Claude file relays PreToolUse",
                wired.exists() and "PreToolUse" in wired.read_text(), (out.stdout + out.stderr)[-600:])
        # A call the guard allows: Copilot stops at the first deny, so only an allowed call
        # shows every copy of the guard that runs.
        s.go([{"tool": "touch marker-1"}, {"text": ["done"]}])
        copilot_runs = len(guard_runs(s.w))
        v.expect("Copilot ran the allowed command", markers(s.w), ["marker-1"])
        v.expect("the guard ran once in Copilot", copilot_runs, 1)
        claude_run = claude.run(s.w, "run the scripted commands", env_extra={"HOOKD_SOCKET": str(s.w.socket)})
        s.w.wait_background_done()
        v.expect("the guard ran once in Claude Code (through hookd)", len(guard_runs(s.w)) - copilot_runs, 1)
        v.expect("Claude Code exited 0", claude_run.code, 0)
    return v
