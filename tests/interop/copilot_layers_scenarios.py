"""Copilot CLI's own hook files as hookd layers (`hookd --copilot-settings`).

A guard written only in `~/.copilot/hooks/guard.json` runs in Copilot CLI, which reads that
file itself, and, through hookd started with `--copilot-settings`, for Claude Code's relayed
`PreToolUse`, answering in Copilot's words, which hookd turns into Claude Code's. Each CLI is
run once: the guard runs exactly once in each and denies `rm -rf` in each.
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
        claude.prepare(s.w)
        # Claude Code relays its shell calls to hookd (as `install --host claude` writes it for
        # hooks in hookd's files); the guard itself is in Copilot's file only.
        relay = '"%s" relay PreToolUse --dialect claude' % s.w.tools.hookctl
        settings = json.loads(claude.user_settings_path(s.w).read_text())
        settings["hooks"] = {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": relay}]}]}
        write_json(claude.user_settings_path(s.w), settings)
        s.start_daemon("--copilot-settings")
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
