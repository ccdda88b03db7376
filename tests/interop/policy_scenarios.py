"""Policy hooks through the real CLIs: one Rego policy in hookd's hooks file guards Gemini CLI,
Claude Code, Codex CLI and Copilot CLI, each hearing the deny in its own shape; compared with the same
rule as the CLI's own command hook (the suite's Python guard, run by the CLI itself).
"""

import json

from harness import write_json
from scenarios import DENY_REASON, Session, Verdict, add_tool_hook, compare, guard_entry, rm_turns, scenario

POLICY = r'''package interop.guard

import rego.v1

deny contains "%s" if {
	input.tool.kind == "shell"
	contains(input.tool.command, "rm -rf")
}
''' % DENY_REASON


@scenario(
    "policy-deny",
    ["gemini", "claude", "codex", "copilot"],
    "one Rego policy in hookd's hooks file denies `rm -rf` for every CLI, as the same rule written "
    "as the CLI's own command hook does",
)
def policy_deny(ctx, host):
    v = Verdict()
    facts = {}
    for mode in ("native", "hookd"):
        with Session(ctx, host, mode, "policy") as s:
            if mode == "native":
                add_tool_hook(host, s.user_settings(), guard_entry(host, s.w))
                if host.name == "codex":
                    host.trust_hooks(s.w)
            else:
                policy = s.w.config / "hookd" / "guard.rego"
                policy.parent.mkdir(parents=True, exist_ok=True)
                policy.write_text(POLICY)
                write_json(
                    s.w.config / "hookd" / "hooks.json",
                    {"hooks": {"BeforeTool": [{"matcher": "run_shell_command", "hooks": [
                        {"type": "policy", "name": "guard", "policy": "guard.rego", "on_failure": "deny"}
                    ]}]}},
                )
                s.install()
                s.start_daemon()
                wired = json.dumps(json.load(open(s.user_settings())))
                v.check("the CLI's settings wire hookd for the tool event", "hookd" in wired, wired[:300])
            s.go(rm_turns())
            facts[mode] = s.facts()
    v.expect("native denies (reference sane)", facts["native"]["tool_ran"], [])
    compare(v, facts["native"], facts["hookd"], keys=("exit", "tool_ran", "sent_next", "printed"))
    return v
