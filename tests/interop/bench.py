"""`tests/interop/run --bench`: what hookd costs a real CLI session.

For each host, one session is the CLI answering a prompt while the fake model asks for
`--calls` shell tool calls (`echo step-N`) one after another, then ends with text. The wall
time of the CLI process, spawn to exit, is measured under five configurations:

- `none`: no hooks, nothing installed;
- `install, no hooks`: `hookctl install` with no hooks to move, a daemon running: the cost of
  the relay entries alone;
- `true in CLI`: the cheapest possible hook, `true`, run by the CLI itself: what the CLI pays to
  run any command hook at all, the floor under every other row;
- `guard in CLI`: one Python guard hook (the CLI's tool event, shell tool matcher) run by the
  CLI itself;
- `guard via hookd`: the same hook moved by `hookctl install`, run one-shot by hookd;
- `guard via hookd worker`: the same, with `"mode": "persistent"` in hookd's hooks file;
- `guard, hookd stopped`: the guard moved by `hookctl install` and no daemon running: each
  relayed event runs the guard in hookd's one-shot engine (`hookd --oneshot`), the fallback
  that keeps a moved guard deciding while hookd is down.

Claude Code has more, over its HTTP hooks (`hookctl install --transport http`, hookd
listening on a loopback port); Copilot CLI has `http install, no hooks`, `guard via hookd
worker, http` (its guard stays a command relay there, the other events are posted) and
`http {} in CLI`, run with `COPILOT_HOOK_ALLOW_LOCALHOST=1`:

- `http install, no hooks`: the HTTP entries alone (every common event is wired, and
  SessionStart's relay);
- `guard via hookd worker, http`: the guard as a persistent worker, Claude Code posting its
  events to hookd instead of starting the relay;
- `http install (hooked), no hooks` and `guard via hookd worker, http (hooked)`: the same with
  `--events hooked`, which wires only the events hookd has hooks for, with their matchers;
- `policy via hookd` (every host) and `policy via hookd, http` (Claude Code): the same rule
  as a Rego policy hook in hookd's hooks file (docs/policies.md), evaluated by hookd's
  evaluator with no process per call, reached through the relay or over HTTP;
- `http {} in CLI`: Claude Code's own HTTP hook on the shell tool posting to a bare loopback
  server (Python's, not hookd) that answers `{}` at once: what Claude Code pays to run any HTTP
  hook at all, the floor under the HTTP rows as `true in CLI` is under the command rows.

Besides each session's wall time, the time between two consecutive model requests (one tool
call: its hooks, the tool, the CLI's own work) is pooled over every call of every session; its
median per configuration is the per-call view, which the CLI's start-up and exit, the noisiest
part of a session on a busy machine, do not reach.

Each configuration has its own world (daemon and fake model kept running); the runs are
interleaved, one session of each per round in a rotating order, so drift hits all alike.
`--static-relay` links `hookd-relay` statically first (docs/hosts.md: a static relay).
Medians of `--runs` sessions are printed with the ratios the issue's targets name, then
`hookd-bench relay` (exec-to-exit of `hookctl relay` next to `bash -c true`) is run.
"""

import http.server
import json
import resource
import statistics
import subprocess
import sys
import threading

from harness import REPO, World, free_port, log, read_json, target_dir, write_json, write_script

# Works one-shot (stdin is one line) and as a persistent worker (one line per event).
BENCH_GUARD = r'''#!/usr/bin/env python3
import json, sys
for line in sys.stdin:
    if not line.strip():
        continue
    event = json.loads(line)
    command = (event.get("tool_input") or {}).get("command", "")
    answer = {}
    if "rm -rf" in command:
        if event.get("hook_event_name") == "PreToolUse":
            answer = {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                      "permissionDecision": "deny", "permissionDecisionReason": "no rm -rf"}}
        else:
            answer = {"decision": "deny", "reason": "no rm -rf"}
    print(json.dumps(answer), flush=True)
'''

CONFIGS = [
    "none",
    "install, no hooks",
    "true in CLI",
    "guard in CLI",
    "guard via hookd",
    "guard via hookd worker",
    "guard, hookd stopped",
    "policy via hookd",
]

# The guard's rule as a Rego policy (docs/policies.md): the same decision, no process per call.
BENCH_POLICY = r"""package bench.guard

import rego.v1

deny contains "no rm -rf" if {
	input.tool.kind == "shell"
	contains(input.tool.command, "rm -rf")
}
"""

# Claude Code's HTTP hooks (`install --transport http`), and its own HTTP hook to a bare server.
HTTP_CONFIGS = [
    "http install, no hooks",
    "guard via hookd worker, http",
    "http install (hooked), no hooks",
    "guard via hookd worker, http (hooked)",
    "http {} in CLI",
    "policy via hookd, http",
]
POLICY_CONFIGS = ("policy via hookd", "policy via hookd, http")
HOOKED_CONFIGS = ("http install (hooked), no hooks", "guard via hookd worker, http (hooked)")
WORKER_CONFIGS = ("guard via hookd worker", "guard via hookd worker, http", "guard via hookd worker, http (hooked)")
NO_HOOK_CONFIGS = ("none", "install, no hooks", "http install, no hooks", "http install (hooked), no hooks",
                   *POLICY_CONFIGS)


class _Empty(http.server.BaseHTTPRequestHandler):
    """Answers every POST with `{}` at once, keeping the connection (HTTP/1.1)."""

    protocol_version = "HTTP/1.1"

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass


def bare_server():
    """A loopback HTTP server answering `{}`, served from a thread; returns it (its port is
    `server.server_address[1]`)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Empty)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server

INSTALLED = (
    "install, no hooks",
    "guard via hookd",
    "guard via hookd worker",
    "guard, hookd stopped",
    "policy via hookd",
    *[c for c in HTTP_CONFIGS if c != "http {} in CLI"],
)


# Copilot CLI over HTTP: its guard stays a command relay there (docs/hosts.md, "Copilot CLI
# over HTTP"), so the rows are the HTTP entries' cost and the floor of its own HTTP hook.
COPILOT_HTTP_CONFIGS = ["http install, no hooks", "guard via hookd worker, http", "http {} in CLI"]


def configs(host):
    if host.name == "claude":
        return CONFIGS + HTTP_CONFIGS
    if host.name == "copilot":
        return CONFIGS + COPILOT_HTTP_CONFIGS
    return CONFIGS


def setup(ctx, host, config, calls):
    w = World(ctx.tools, "bench-%s-%s" % (host.name, "".join(ch for ch in config if ch.isalnum())))
    host.prepare(w)
    script = write_script(w.hooks_dir / "guard.py", BENCH_GUARD)
    # The interpreter running this suite, by its path: a `python3` found through a version
    # manager's shim (itself a script) would be most of what the guard costs.
    command = "true" if config == "true in CLI" else '"%s" "%s"' % (sys.executable, script)
    entry = {"type": "command", "command": command}
    if host.name == "gemini":
        entry.update({"name": "guard", "timeout": 10000})
    else:
        entry["timeout"] = 10
    if config == "http {} in CLI":
        w.bare_server = bare_server()
        url = "http://127.0.0.1:%d/" % w.bare_server.server_address[1]
        entry = {"type": "http", "url": url, ("timeoutSec" if host.name == "copilot" else "timeout"): 10}
    if config not in NO_HOOK_CONFIGS:
        host.add_hooks(host.user_settings_path(w), host.tool_event, host.shell_tool, [entry])
        if host.name == "codex" and config in ("true in CLI", "guard in CLI"):
            # Codex skips a hook without a trust record silently: trust it as /hooks would.
            host.trust_hooks(w)
    if config in POLICY_CONFIGS:
        (w.config / "hookd").mkdir(parents=True, exist_ok=True)
        (w.config / "hookd" / "guard.rego").write_text(BENCH_POLICY)
        write_json(
            w.config / "hookd" / "hooks.json",
            {"hooks": {"BeforeTool": [{"matcher": "run_shell_command", "hooks": [
                {"type": "policy", "name": "guard", "policy": "guard.rego", "on_failure": "deny"}]}]}},
        )
    env = {}
    if host.name == "copilot" and config in HTTP_CONFIGS:
        # Copilot CLI runs HTTP hooks on a loopback address only with this set.
        env["COPILOT_HOOK_ALLOW_LOCALHOST"] = "1"
    if config in INSTALLED:
        install = ["install", "--host", host.name, "--yes"]
        if config in HTTP_CONFIGS:
            w.http_port = free_port()
            install += ["--transport", "http", "--port", str(w.http_port)]
            # Named either way: the default differs by host (Copilot CLI: hooked).
            install += ["--events", "hooked" if config in HOOKED_CONFIGS else "all"]
        w.hookctl(*install)
        if config in WORKER_CONFIGS:
            path = w.config / "hookd" / "hooks.json"
            hooks = read_json(path)
            for groups in hooks["hooks"].values():
                for group in groups:
                    for hook in group["hooks"]:
                        hook["mode"] = "persistent"
            write_json(path, hooks)
        if config != "guard, hookd stopped":
            w.start_daemon()
        env["HOOKD_SOCKET"] = str(w.socket)
    turns = [{"tool": "echo step-%d" % (i + 1)} for i in range(calls)] + [{"text": ["done"]}]
    w.start_model(host.api, turns)
    return w, env


def session(host, w, env, calls, gaps=None, cpus=None):
    """Runs one session; returns its wall time, and appends to `gaps` the time between each
    two model requests of the session (one tool call each: the hooks, the tool and the CLI's
    own work between them), which the CLI's start-up and exit do not blur, and to `cpus` the
    CPU time (user + system) of the CLI and every process it waited for: what the session
    cost the machine, which other work on a busy machine stretches far less than wall time.
    hookd's own CPU is not in it (the daemon is not the CLI's child)."""
    seen = len(w.model_requests())
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    run = host.run(w, "run the steps", env_extra=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if cpus is not None:
        cpus.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
    done = len(run.tool_results())
    if run.code != 0 or done < calls:
        raise RuntimeError(
            "%s session under %s: exit %s, %d of %d tool results (see %s)"
            % (host.name, w.root.name, run.code, done, calls, w.logs)
        )
    if gaps is not None:
        times = [r["time"] for r in w.model_requests()[seen:] if r.get("kind") == "turn"]
        gaps.extend(b - a for a, b in zip(times, times[1:]))
    return run.elapsed


def bench_host(ctx, host, runs, calls):
    names = configs(host)
    worlds = {c: setup(ctx, host, c, calls) for c in names}
    times = {c: [] for c in names}
    gaps = {c: [] for c in names}
    cpus = {c: [] for c in names}
    try:
        # One warm-up session each (page cache, Node's compile cache, the worker's start).
        for c in names:
            session(host, *worlds[c], calls)
        for r in range(runs):
            order = names[r % len(names) :] + names[: r % len(names)]
            for c in order:
                times[c].append(session(host, *worlds[c], calls, gaps[c], cpus[c]))
            log("%s: round %d of %d done" % (host.name, r + 1, runs))
    finally:
        for w, _ in worlds.values():
            if getattr(w, "bare_server", None) is not None:
                w.bare_server.shutdown()
            w.close()
    medians = {c: statistics.median(t) for c, t in times.items()}
    per_call = {c: statistics.median(g) for c, g in gaps.items() if g}
    cpu = {c: statistics.median(t) for c, t in cpus.items() if t}
    return medians, times, per_call, gaps, cpu


def report_cpu(host, cpu, calls):
    """The CPU view: median CPU seconds of the CLI's process tree per session, and per call
    over no install."""
    none = cpu["none"]
    lines = ["%s, CPU of the CLI and its children per session (median):" % host]
    for c in [c for c in CONFIGS + HTTP_CONFIGS if c in cpu]:
        lines.append(
            "  %-38s %7.3f s   %+7.2f ms per call over none   %+6.1f %%"
            % (c, cpu[c], (cpu[c] - none) / calls * 1000, (cpu[c] / none - 1) * 100)
        )
    return "\n".join(lines)


def report_per_call(host, medians, per_call, calls):
    """The per-call view: the median time between two model requests (one tool call) per
    configuration, pooled over every call of every session, and the targets on it."""
    none = per_call["none"]
    lines = ["%s, per tool call (median gap between model requests, %d calls x sessions):" % (host, calls)]
    for c in [c for c in CONFIGS + HTTP_CONFIGS if c in per_call]:
        lines.append("  %-30s %7.2f ms   %+7.2f ms over none" % (c, per_call[c] * 1000, (per_call[c] - none) * 1000))
    cli = (per_call["guard in CLI"] - none) * 1000
    if "guard via hookd worker, http" in per_call:
        base = per_call["http install, no hooks"]
        worker = (per_call["guard via hookd worker, http"] - base) * 1000
        worker_all = (per_call["guard via hookd worker, http"] - none) * 1000
        lines.append(
            "  http install, no hooks: %+.2f ms per call = %+.1f %% of the no-install session (target <= 2 %%)"
            % ((base - none) * 1000, (base - none) * calls / medians["none"] * 100)
        )
        lines.append(
            "  guard in CLI %.2f ms / hookd worker over HTTP %.2f ms (over http install) = %s; over no install %.2f ms = %s (target >= 20x)"
            % (
                cli,
                worker,
                "%.1fx" % (cli / worker) if worker > 0 else "n/a",
                worker_all,
                "%.1fx" % (cli / worker_all) if worker_all > 0 else "n/a",
            )
        )
    if "guard via hookd worker, http (hooked)" in per_call:
        hooked_base = per_call["http install (hooked), no hooks"]
        hooked = (per_call["guard via hookd worker, http (hooked)"] - none) * 1000
        lines.append(
            "  http install (hooked), no hooks: %+.2f ms per call = %+.1f %% of the no-install session (target <= 2 %%)"
            % ((hooked_base - none) * 1000, (hooked_base - none) * calls / medians["none"] * 100)
        )
        lines.append(
            "  guard in CLI %.2f ms / hookd worker over HTTP (hooked) %.2f ms over no install = %s"
            % (cli, hooked, "%.1fx" % (cli / hooked) if hooked > 0 else "n/a")
        )
    for c in POLICY_CONFIGS:
        if c in per_call:
            policy = (per_call[c] - none) * 1000
            lines.append(
                "  guard in CLI %.2f ms / %s %.2f ms over no install = %s (target >= 40x on Claude Code over HTTP)"
                % (cli, c, policy, "%.1fx" % (cli / policy) if policy > 0 else "policy adds nothing measurable")
            )
    if "http {} in CLI" in per_call:
        lines.append(
            "  %s's own cost of an HTTP hook (bare server answering {}): %.2f ms per call; of a command hook (true): %.2f ms"
            % (host, (per_call["http {} in CLI"] - none) * 1000, (per_call["true in CLI"] - none) * 1000)
        )
    relay_worker = (per_call["guard via hookd worker"] - per_call["install, no hooks"]) * 1000
    lines.append(
        "  guard in CLI %.2f ms / hookd worker through the relay %.2f ms = %s"
        % (cli, relay_worker, "%.1fx" % (cli / relay_worker) if relay_worker > 0 else "n/a")
    )
    return "\n".join(lines)


def report(host, medians, calls):
    none = medians["none"]
    lines = ["%s, %d tool calls per session, median wall time:" % (host, calls)]
    for c in [c for c in CONFIGS + HTTP_CONFIGS if c in medians]:
        lines.append("  %-24s %7.2f s   %5.2fx no install" % (c, medians[c], medians[c] / none))
    cli = (medians["guard in CLI"] - none) / calls * 1000  # the CLI's own hook, over no hooks
    base = medians["install, no hooks"]
    oneshot = (medians["guard via hookd"] - base) / calls * 1000
    worker = (medians["guard via hookd worker"] - base) / calls * 1000
    lines.append("  install with no hooks vs no install: %+.1f %% (target within 5 %%)" % ((base / none - 1) * 100))
    lines.append(
        "  hook overhead per call (over install, no hooks): CLI %.1f ms, hookd one-shot %.1f ms, hookd worker %.1f ms"
        % (cli, oneshot, worker)
    )
    lines.append(
        "  everything per call (over no install): CLI %.1f ms, hookd one-shot %.1f ms, hookd worker %.1f ms"
        % (cli, (medians["guard via hookd"] - none) / calls * 1000, (medians["guard via hookd worker"] - none) / calls * 1000)
    )
    floor = (medians["true in CLI"] - none) / calls * 1000
    lines.append(
        "  the CLI's own cost of any hook (true in CLI, per call): %.1f ms; hookd worker above it: %.1f ms"
        % (floor, worker - floor)
    )
    lines.append(
        "  CLI's per-call overhead / hookd worker's: %s (target >= 5x)"
        % ("%.1fx" % (cli / worker) if worker > 0 else "worker adds nothing measurable")
    )
    lines.append(
        "  session: hookd one-shot / guard in CLI: %.2fx (target <= 1.00x)"
        % (medians["guard via hookd"] / medians["guard in CLI"])
    )
    fallback = (medians["guard, hookd stopped"] - none) / calls * 1000
    lines.append(
        "  hookd stopped, the guard run by the relay's fallback engine, per call (over no install): "
        "%.1f ms, against %.1f ms for the guard in the CLI (%s)"
        % (fallback, cli, "%.2fx" % (fallback / cli) if cli > 0 else "n/a")
    )
    lines.append(
        "  session: hookd stopped / guard in CLI: %.2fx"
        % (medians["guard, hookd stopped"] / medians["guard in CLI"])
    )
    if "guard via hookd worker, http" in medians:
        http_base = medians["http install, no hooks"]
        http_worker = (medians["guard via hookd worker, http"] - http_base) / calls * 1000
        lines.append(
            "  http install with no hooks vs no install: %+.1f %% of the session (target <= 2 %%)"
            % ((http_base / none - 1) * 100)
        )
        lines.append(
            "  hookd worker over HTTP, per call: %.2f ms over http install, %.2f ms over no install"
            % (http_worker, (medians["guard via hookd worker, http"] - none) / calls * 1000)
        )
        lines.append(
            "  guard in CLI per-call overhead / hookd worker over HTTP's: %s (target >= 20x)"
            % ("%.1fx" % (cli / http_worker) if http_worker > 0 else "worker over HTTP adds nothing measurable")
        )
    return "\n".join(lines)


def relay_bench():
    binary = target_dir() / "release" / "hookd-bench"
    out = subprocess.run([str(binary), "--iterations", "300", "relay"], cwd=REPO, capture_output=True, text=True)
    if out.returncode != 0:
        return "hookd-bench relay failed (%s): %s" % (out.returncode, out.stderr.strip()[-500:])
    return out.stdout.rstrip()


def main(ctx, hosts, runs, calls):
    results = {}
    for name in hosts:
        medians, times, per_call, gaps, cpu = bench_host(ctx, ctx.hosts[name], runs, calls)
        results[name] = {"medians_s": medians, "samples_s": times, "per_call_s": per_call, "gaps_s": gaps, "cpu_s": cpu}
        print(report(name, medians, calls), flush=True)
        print(report_per_call(name, medians, per_call, calls), flush=True)
        print(report_cpu(name, cpu, calls), flush=True)
    print("relay, exec to exit (hookd-bench relay, 300 samples each):", flush=True)
    print(relay_bench(), flush=True)
    out = target_dir() / "interop-bench.json"
    out.write_text(json.dumps(results, indent=2))
    print("samples: %s" % out)
    return 0
