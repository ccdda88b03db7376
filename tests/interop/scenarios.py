"""The interop scenarios: each runs the same hooks natively in the CLI and through hookd.

A scenario function gets the suite context and a host, runs its sessions and returns a
`Verdict`: a list of checks, each with the facts it compared. A check compares what happened
natively (the CLI running its own hooks) with what happened through hookd (the hooks moved by
`hookctl install`, the CLI calling `hookctl relay`), or states what the issue requires where
the CLI alone has no equivalent (built-in filters). Facts: which marker files the shell
commands created (did the tool run), what the CLI sent the model after each tool call, what
it printed, its exit code, the stderr lines it showed about hooks, and how often each hook ran.
"""

import json
import re
import threading
import time

from harness import (
    COUNTER,
    Gemini,
    GUARD,
    SuiteError,
    Supervisor,
    World,
    cache_dir,
    read_json,
    read_lines,
    write_json,
    write_script,
)

SCENARIOS = []

DENY_REASON = "interop guard: rm -rf is not allowed"


def scenario(name, hosts, about, transports=None):
    """Registers a scenario; `transports` limits Claude Code's hookd runs to "command" or
    "http" (default: each Claude scenario runs once with each)."""

    def register(func):
        SCENARIOS.append({"name": name, "hosts": hosts, "about": about, "func": func, "transports": transports})
        return func

    return register


class Verdict:
    def __init__(self):
        self.checks = []  # (label, ok, detail)

    def check(self, label, ok, detail=""):
        self.checks.append((label, bool(ok), detail))

    def same(self, label, native, hookd, names=("native", "hookd")):
        ok = native == hookd
        detail = "%s=%s %s=%s" % (names[0], short(native), names[1], short(hookd))
        self.check(label, ok, "" if ok else detail)

    def expect(self, label, value, wanted):
        ok = value == wanted
        self.check(label, ok, "" if ok else "got %s, want %s" % (short(value), short(wanted)))

    @property
    def ok(self):
        return all(ok for _, ok, _ in self.checks)


def short(value, limit=400):
    text = json.dumps(value, sort_keys=True) if not isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


# --- building blocks ------------------------------------------------------------------------


def guard_entry(host, w, name="guard", timeout=True, command=None):
    """One command hook entry in the host's own settings language."""
    script = write_script(w.hooks_dir / "guard.py", GUARD)
    log = w.logs / "hook-runs.jsonl"
    entry = {"type": "command", "command": command or 'python3 "%s" "%s" %s' % (script, log, name)}
    if host.name == "gemini":
        entry["name"] = name
        if timeout:
            entry["timeout"] = 10000
    elif timeout:
        entry["timeout"] = 10
    return entry


def counter_entry(host, w, name):
    script = write_script(w.hooks_dir / "counter.py", COUNTER)
    log = w.logs / "hook-runs.jsonl"
    entry = {"type": "command", "command": 'python3 "%s" "%s" %s' % (script, log, name)}
    if host.name == "gemini":
        entry["name"] = name
        entry["timeout"] = 10000
    else:
        entry["timeout"] = 10
    return entry


def add_tool_hook(host, path, entry):
    host.add_hooks(path, host.tool_event, host.shell_tool, [entry])


def hook_runs(w, name=None):
    runs = read_lines(w.logs / "hook-runs.jsonl")
    return [r for r in runs if name is None or r.get("hook") == name]


def markers(w):
    return sorted(str(p.relative_to(w.proj)) for p in w.proj.rglob("marker-*"))


def relay_entries(path):
    """(event, command) of every relay entry in a CLI settings file."""
    found = []
    for event, groups in ((read_json(path, {}) or {}).get("hooks") or {}).items():
        for group in groups or []:
            for hook in group.get("hooks") or []:
                if is_relay(hook):
                    found.append((event, hook.get("command")))
    return found


def is_relay(hook):
    """A relay entry: `hookd-relay EVENT`, or `hookctl relay EVENT` as older installs wrote."""
    command = str(hook.get("command", ""))
    return "hookd-relay" in command or ("hookctl" in command and " relay" in command)


def tool_matchers(path, event, relay):
    """The matchers of the event's groups that hold relay entries (or real hooks)."""
    groups = ((read_json(path, {}) or {}).get("hooks") or {}).get(event) or []
    return sorted(
        {
            str(g.get("matcher", ""))
            for g in groups
            if any(is_relay(h) == relay for h in g.get("hooks") or [])
        }
    )


def matcher_covers(matcher, tool):
    """Whether a tool matcher (a regex; empty or `*` for every tool) selects the tool."""
    if matcher in ("", "*"):
        return True
    try:
        return re.fullmatch(matcher, tool) is not None
    except re.error:
        return matcher == tool


def hook_names(path):
    names = []
    for groups in ((read_json(path, {}) or {}).get("hooks") or {}).values():
        for group in groups or []:
            for hook in group.get("hooks") or []:
                if not (" relay" in str(hook.get("command", "")) and "hookctl" in str(hook.get("command", ""))):
                    names.append(hook.get("name") or hook.get("command", "").split()[-1])
    return sorted(names)


class Session:
    """One world, one mode: set up hooks, optionally move them to hookd, run the CLI once."""

    def __init__(self, ctx, host, mode, label, parent=None):
        self.ctx = ctx
        self.host = host
        self.mode = mode
        self.w = World(ctx.tools, "%s-%s-%s" % (label, host.name, mode), keep=ctx.keep, parent=parent)
        host.prepare(self.w)
        self.run = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.ctx.keep:
            self.ctx.kept_worlds.append(str(self.w.root))
        self.w.close()

    def user_settings(self):
        return self.host.user_settings_path(self.w)

    def project_settings(self):
        return self.host.project_settings_path(self.w)

    def install(self, scope="user", extra=()):
        args = ["install", "--host", self.host.name, "--scope", scope, "--yes", *extra]
        if self.w.http_port and self.host.name == "claude" and scope == "user":
            # HTTP entries are for the user's settings only; a project install stays relays.
            args += ["--transport", "http", "--port", str(self.w.http_port)]
        if scope == "project":
            args += ["--cwd", str(self.w.proj)]
        return self.w.hookctl(*args)

    def start_daemon(self, *extra):
        return self.w.start_daemon(*extra)

    def go(self, turns, prompt="run the scripted commands", env_extra=None, chunk_delay=0.0, daemon_env=True):
        self.w.start_model(self.host.api, turns, chunk_delay=chunk_delay)
        env = {}
        if self.mode == "hookd" and daemon_env:
            env["HOOKD_SOCKET"] = str(self.w.socket)
        env.update(env_extra or {})
        self.run = self.host.run(self.w, prompt, env_extra=env)
        if self.mode == "hookd" and self.w.daemon is not None:
            # A relayed SessionEnd's hooks finish after the CLI has exited.
            self.w.wait_background_done()
        return self.run

    def facts(self):
        r = self.run
        return {
            "exit": r.code,
            "tool_ran": markers(self.w),
            "sent_next": r.tool_results(),
            "printed": r.printed(),
            "hook_stderr": r.hook_stderr(),
        }


def compare(v, native, hookd, keys=("exit", "tool_ran", "sent_next", "printed", "hook_stderr")):
    for key in keys:
        v.same(key, native.get(key), hookd.get(key))


def rm_turns(count=1):
    turns = [{"tool": "rm -rf victim; touch marker-%d" % (i + 1)} for i in range(count)]
    return turns + [{"text": ["finished ", "the task"]}]


# --- scenarios -------------------------------------------------------------------------------


def deny_both(ctx, host, name="deny", install_extra=(), check_install=None):
    """A user guard denies `rm -rf`, natively and via hookd (installed with `install_extra`;
    `check_install(v, s)` then looks at what the install wrote): the same facts both ways."""
    v = Verdict()
    facts = {}
    for mode in ("native", "hookd"):
        with Session(ctx, host, mode, name) as s:
            add_tool_hook(host, s.user_settings(), guard_entry(host, s.w))
            if mode == "hookd":
                s.install(extra=install_extra)
                s.start_daemon()
                if check_install is not None:
                    check_install(v, s)
            s.go(rm_turns())
            facts[mode] = s.facts()
            facts[mode]["guard_runs"] = len(hook_runs(s.w, "guard"))
    v.expect("native denies (reference sane)", facts["native"]["tool_ran"], [])
    compare(v, facts["native"], facts["hookd"])
    v.same("guard_runs", facts["native"]["guard_runs"], facts["hookd"]["guard_runs"])
    return v


@scenario("deny", ["gemini", "claude"], "a user guard denies `rm -rf`: natively and via hookd")
def deny(ctx, host):
    return deny_both(ctx, host)


@scenario("allow", ["gemini", "claude"], "the guard allows a harmless command: it runs, its output reaches the model")
def allow(ctx, host):
    v = Verdict()
    facts = {}
    turns = [{"tool": "echo hello-interop; touch marker-1"}, {"text": ["all ", "done"]}]
    for mode in ("native", "hookd"):
        with Session(ctx, host, mode, "allow") as s:
            add_tool_hook(host, s.user_settings(), guard_entry(host, s.w))
            if mode == "hookd":
                s.install()
                s.start_daemon()
            s.go(turns)
            facts[mode] = s.facts()
            facts[mode]["guard_runs"] = len(hook_runs(s.w, "guard"))
    v.expect("native runs the tool (reference sane)", facts["native"]["tool_ran"], ["marker-1"])
    compare(v, facts["native"], facts["hookd"])
    v.same("guard_runs", facts["native"]["guard_runs"], facts["hookd"]["guard_runs"])
    return v


def cd_scenario(ctx, host, scope):
    v = Verdict()
    facts = {}
    turns = [
        {"tool": "mkdir -p sub && cd sub && touch here-marker"},
        {"tool": "rm -rf victim; touch marker-after-cd"},
        {"text": ["finished"]},
    ]
    for mode in ("native", "hookd"):
        with Session(ctx, host, mode, "cd-" + scope) as s:
            # The guard script lives in the project and is found through CLAUDE_PROJECT_DIR.
            script = write_script(s.w.proj / ".claude" / "hooks" / "guard.py", GUARD)
            del script
            command = 'python3 "$CLAUDE_PROJECT_DIR/.claude/hooks/guard.py" "%s" guard' % (
                s.w.logs / "hook-runs.jsonl"
            )
            entry = guard_entry(host, s.w, command=command)
            path = s.project_settings() if scope == "project" else s.user_settings()
            add_tool_hook(host, path, entry)
            if mode == "hookd":
                s.install(scope=scope)
                s.start_daemon()
            s.go(turns)
            f = s.facts()
            runs = hook_runs(s.w, "guard")
            f["guard_project_dirs"] = sorted({s.run.normalize(r.get("CLAUDE_PROJECT_DIR")) for r in runs})
            f["guard_runs"] = len(runs)
            facts[mode] = f
    v.expect("native denies after cd (reference sane)", facts["native"]["tool_ran"], [])
    compare(v, facts["native"], facts["hookd"])
    v.same("guard_runs", facts["native"]["guard_runs"], facts["hookd"]["guard_runs"])
    v.same("CLAUDE_PROJECT_DIR the guard saw", facts["native"]["guard_project_dirs"], facts["hookd"]["guard_project_dirs"])
    return v


@scenario("cd-project", ["claude"], "after `cd sub` in the Bash tool a project-scope guard still applies")
def cd_project(ctx, host):
    return cd_scenario(ctx, host, "project")


@scenario("cd-user", ["claude"], "after `cd sub` a user-scope guard using $CLAUDE_PROJECT_DIR still applies")
def cd_user(ctx, host):
    return cd_scenario(ctx, host, "user")


class CueWatcher:
    """Runs each action once, in order, when its cue file appears (created by the guard or by
    the fake model as it answers a turn)."""

    def __init__(self, cues):
        self.cues = list(cues)
        self.done = 0
        self.errors = []
        self.stopping = False
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def loop(self):
        deadline = time.monotonic() + 300
        while self.cues and not self.stopping and time.monotonic() < deadline:
            path, action = self.cues[0]
            if path.exists():
                try:
                    action()
                except Exception as e:  # reported as a fact, not raised in a thread
                    self.errors.append(repr(e))
                self.done += 1
                self.cues.pop(0)
                continue
            time.sleep(0.002)

    def stop(self):
        self.stopping = True
        self.thread.join(timeout=30)


def restart_scenario(ctx, host, activated):
    """Three guarded `rm -rf` calls; hookd restarts twice: once while the guard runs (the
    call is in flight), once just as the model hands the CLI the second call (its relay
    connects during the restart)."""
    v = Verdict()
    facts = {}
    label = "restart-activated" if activated else "restart-plain"
    for mode in ("native", "hookd"):
        with Session(ctx, host, mode, label) as s:
            add_tool_hook(host, s.user_settings(), guard_entry(host, s.w))
            in_flight = s.w.root / "cue-guard-running"
            second_call = s.w.root / "cue-second-call"
            turns = rm_turns(3)
            turns[1]["touch"] = str(second_call)
            watcher = None
            if mode == "hookd":
                s.install()
                facts["http"] = bool(s.w.http_port)
                if activated:
                    s.w.supervisor = Supervisor(s.w)
                    facts["how"] = s.w.supervisor.how

                    def restart():
                        old = s.w.supervisor.restart()
                        s.w.supervisor.wait_for_pid(not_pid=old)

                else:
                    s.start_daemon()

                    def restart():
                        # Stop (the old daemon finishes or fails what it has), a short gap
                        # with no daemon at all, then a new one on the same path.
                        s.w.stop_daemon()
                        time.sleep(0.3)
                        s.w.start_daemon()

                # The third call waits for the second restart to end: a relay that finds no
                # daemon runs the hooks itself at once, so the session would otherwise end
                # before a restart on a busy machine.
                restarted_twice = s.w.root / "cue-restarted-twice"
                turns[2]["wait_for"] = str(restarted_twice)

                def restart_then_cue():
                    restart()
                    restarted_twice.touch()

                watcher = CueWatcher([(in_flight, restart), (second_call, restart_then_cue)])
            s.go(turns, env_extra={"INTEROP_HOOK_SIGNAL": str(in_flight), "INTEROP_HOOK_SLEEP": "0.5"})
            if watcher:
                watcher.stop()
                facts["restarts"] = watcher.done
                facts["restart_errors"] = watcher.errors
            facts[mode] = s.facts()
    v.expect("native denies all three (reference sane)", facts["native"]["tool_ran"], [])
    v.check(
        "the daemon was restarted twice mid-session",
        facts.get("restarts") == 2 and not facts.get("restart_errors"),
        "restarts %s, errors %s" % (facts.get("restarts"), facts.get("restart_errors")),
    )
    if not activated and host.name == "claude" and facts.get("http"):
        # Over HTTP with no socket held across the restart, a call that comes while no hookd
        # listens is refused by Claude Code itself (the entry's onFailure block), in its own
        # words; the others get the guard's answer. Either way nothing runs.
        compare(v, facts["native"], facts["hookd"], keys=("exit", "tool_ran", "printed", "hook_stderr"))
        v.check(
            "each call denied by the guard or refused by onFailure block",
            len(facts["hookd"]["sent_next"]) == len(facts["native"]["sent_next"])
            and all(x in facts["native"]["sent_next"] or 'blocking because onFailure is "block"' in str(x)
                    for x in facts["hookd"]["sent_next"]),
            short(facts["hookd"]["sent_next"]),
        )
        return v
    compare(v, facts["native"], facts["hookd"])
    return v


@scenario("restart-activated", ["gemini", "claude"], "hookd restarted behind a held socket (systemd-style) while the guard runs")
def restart_activated(ctx, host):
    return restart_scenario(ctx, host, activated=True)


@scenario("restart-plain", ["gemini", "claude"], "hookd stopped and started again on the same path mid-session")
def restart_plain(ctx, host):
    return restart_scenario(ctx, host, activated=False)


@scenario("added-after-install", ["gemini", "claude"], "a hook added to the CLI's own settings after install runs exactly once")
def added_after_install(ctx, host):
    v = Verdict()
    facts = {}
    turns = [{"tool": "echo hi; touch marker-1"}, {"text": ["done"]}]
    for mode in ("native", "hookd"):
        with Session(ctx, host, mode, "added") as s:
            add_tool_hook(host, s.user_settings(), guard_entry(host, s.w))
            if mode == "hookd":
                s.install()
                s.start_daemon()
            add_tool_hook(host, s.user_settings(), counter_entry(host, s.w, "late"))
            s.go(turns)
            facts[mode] = s.facts()
            facts[mode]["late_runs"] = len(hook_runs(s.w, "late"))
    v.expect("native runs the late hook once (reference sane)", facts["native"]["late_runs"], 1)
    v.same("late hook runs", facts["native"]["late_runs"], facts["hookd"]["late_runs"])
    compare(v, facts["native"], facts["hookd"], keys=("exit", "tool_ran", "sent_next", "printed"))
    return v


@scenario("project-left-after-user-install", ["gemini"], "a project hook the CLI runs itself is not run again by hookd")
def project_left(ctx, host):
    v = Verdict()
    facts = {}
    turns = [{"tool": "echo hi; touch marker-1"}, {"text": ["done"]}]
    for mode in ("native", "hookd"):
        with Session(ctx, host, mode, "projleft") as s:
            add_tool_hook(host, s.user_settings(), guard_entry(host, s.w))
            add_tool_hook(host, s.project_settings(), counter_entry(host, s.w, "proj"))
            if mode == "hookd":
                s.install(scope="user")
                s.start_daemon()
            s.go(turns)
            facts[mode] = s.facts()
            facts[mode]["proj_runs"] = len(hook_runs(s.w, "proj"))
    v.expect("native runs the project hook once (reference sane)", facts["native"]["proj_runs"], 1)
    v.same("project hook runs", facts["native"]["proj_runs"], facts["hookd"]["proj_runs"])
    compare(v, facts["native"], facts["hookd"], keys=("exit", "tool_ran", "sent_next", "printed"))
    return v


SECRET = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"


@scenario("split-secret", ["gemini"], "a secret split across two AfterModel chunks is redacted as a whole one is")
def split_secret(ctx, host):
    v = Verdict()
    facts = {}
    cut = len("The token is ") + 12
    text = "The token is %s and that is all." % SECRET
    variants = {
        "whole": [{"text": [text]}],
        "split": [{"text": [text[:cut], text[cut:]]}],
    }
    for variant, turns in variants.items():
        with Session(ctx, host, "hookd", "secret-" + variant) as s:
            host.add_hooks(
                s.user_settings(),
                "AfterModel",
                None,
                [
                    {"name": "redact-secrets", "type": "builtin", "builtin": "redact"},
                    counter_entry(host, s.w, "after-model"),
                ],
            )
            s.install()
            s.start_daemon()
            s.go(turns)
            f = s.facts()
            seen = hook_runs(s.w, "after-model")
            f["hook_saw_secret"] = any(SECRET in (r.get("text") or "") for r in seen)
            f["hook_saw_part"] = any(SECRET[:12] in (r.get("text") or "") for r in seen)
            f["printed_secret"] = SECRET in (f["printed"] or "") or SECRET in s.run.stdout
            # hookd documents full_content as the response so far: at the last chunk, all of it.
            f["last_full_content"] = seen[-1].get("full_content") if seen else None
            facts[variant] = f
    # The CLI alone has no built-in filter: what it prints is the reference for "unfiltered".
    with Session(ctx, host, "native", "secret-native") as s:
        s.go(variants["split"])
        facts["native"] = s.facts()
    v.check(
        "the native CLI prints the raw secret (reference sane)",
        SECRET in (facts["native"]["printed"] or ""),
        "printed %s" % short(facts["native"]["printed"]),
    )
    v.expect("whole: secret not printed", facts["whole"]["printed_secret"], False)
    v.expect("split: secret not printed", facts["split"]["printed_secret"], False)
    v.same("printed: whole vs split", facts["whole"]["printed"], facts["split"]["printed"], names=("whole", "split"))
    v.expect("split: no part of it printed", SECRET[:12] in (facts["split"]["printed"] or ""), False)
    v.expect("whole: the AfterModel hook next to redact never sees it", facts["whole"]["hook_saw_secret"], False)
    v.expect("split: the AfterModel hook next to redact never sees it", facts["split"]["hook_saw_part"], False)
    v.same(
        "full_content at the last chunk is the response so far",
        facts["whole"]["printed"],
        facts["split"]["last_full_content"],
        names=("response", "full_content"),
    )
    return v


@scenario("unreachable-allow", ["gemini", "claude"], "daemon down, policy allow: the host behaves as with no hooks")
def unreachable_allow(ctx, host):
    v = Verdict()
    facts = {}
    turns = [{"tool": "echo hi; touch marker-1"}, {"text": ["done"]}]
    for mode in ("native", "hookd"):
        with Session(ctx, host, mode, "unreach") as s:
            if mode == "hookd":
                add_tool_hook(host, s.user_settings(), guard_entry(host, s.w))
                s.install()  # and no daemon is started
            s.go(turns)
            f = s.facts()
            if mode == "hookd" and s.w.http_port and host.name == "claude":
                # Over HTTP there is no relay, so no `allow` policy: the guard's entry has
                # onFailure block, and Claude Code refuses the call (stricter, never weaker).
                v.expect("over HTTP the call is refused", f["tool_ran"], [])
                v.check(
                    "by the entry's onFailure block",
                    all('blocking because onFailure is "block"' in str(x) for x in f["sent_next"]) and f["sent_next"],
                    short(f["sent_next"]),
                )
                return v
            requests = [r for r in s.w.model_requests() if r.get("kind") == "turn"]
            if host.name == "gemini":
                f["toolConfig"] = [(r["body"] or {}).get("toolConfig") for r in requests]
            f["request_keys"] = [sorted((r["body"] or {}).keys()) for r in requests]
            facts[mode] = f
    compare(v, facts["native"], facts["hookd"])
    if host.name == "gemini":
        v.same("toolConfig sent to the model", facts["native"]["toolConfig"], facts["hookd"]["toolConfig"])
    v.same("request fields", facts["native"]["request_keys"], facts["hookd"]["request_keys"])
    return v


CLAUDE_DEFAULT_TIMEOUT_MS = 600_000


@scenario("claude-default-timeout", ["claude"], "a converted Claude hook without timeout keeps Claude's 600 s default")
def claude_default_timeout(ctx, host):
    v = Verdict()
    with Session(ctx, host, "hookd", "timeout") as s:
        add_tool_hook(host, s.user_settings(), guard_entry(host, s.w, timeout=False))
        s.install()
        s.start_daemon()
        out = s.w.hookctl("list", "--json", "--cwd", str(s.w.proj))
        listing = json.loads(out.stdout)
        timeouts = []

        def walk(node):
            if isinstance(node, dict):
                if "guard.py" in str(node.get("command", "")) and "relay" not in str(node.get("command", "")):
                    for key in ("timeout", "timeout_ms"):
                        if key in node:
                            timeouts.append(node[key])
                for value in node.values():
                    walk(value)
            elif isinstance(node, list):
                for value in node:
                    walk(value)

        walk(listing)
        v.check("hookd lists the converted guard", bool(timeouts), "no timeout found in hookctl list --json")
        if timeouts:
            v.expect("timeout hookd derives (ms)", max(timeouts), CLAUDE_DEFAULT_TIMEOUT_MS)
        # The tool event's entry (a relay, or over HTTP the HTTP entry) must outlast the hook:
        # Claude Code gives up on it at the entry's timeout.
        relay_timeouts = [
            h.get("timeout")
            for g in (read_json(s.user_settings(), {}).get("hooks") or {}).get(host.tool_event) or []
            for h in g.get("hooks") or []
            if "relay" in str(h.get("command", "")) or h.get("type") == "http"
        ]
        v.check(
            "relay entries outlast it (s)",
            relay_timeouts and min(t or 600 for t in relay_timeouts) * 1000 > CLAUDE_DEFAULT_TIMEOUT_MS,
            "relay timeouts %s" % short(relay_timeouts),
        )
    return v


@scenario("install-socket", ["gemini", "claude"], "`install --socket S` carries the socket into the relay entries")
def install_socket(ctx, host):
    v = Verdict()
    facts = {}
    for mode in ("native", "hookd"):
        with Session(ctx, host, mode, "socket") as s:
            add_tool_hook(host, s.user_settings(), guard_entry(host, s.w))
            env = {}
            if mode == "hookd":
                s.install(extra=("--socket", str(s.w.socket)))
                s.start_daemon()
                # The CLI knows nothing of the socket: no HOOKD_SOCKET, another runtime dir.
                other = s.w.root / "other-runtime"
                other.mkdir(mode=0o700)
                env = {"XDG_RUNTIME_DIR": str(other)}
            s.go(rm_turns(), env_extra=env, daemon_env=False)
            facts[mode] = s.facts()
    v.expect("native denies (reference sane)", facts["native"]["tool_ran"], [])
    compare(v, facts["native"], facts["hookd"])
    return v


def system_file_scenario(ctx, host, file_mode):
    """A counter hook in the system settings file, the guard in the user's."""
    v = Verdict()
    facts = {}
    turns = [{"tool": "echo hi; touch marker-1"}, {"text": ["done"]}]
    runs = [("native", file_mode), ("hookd", file_mode)]
    if file_mode != 0o644:
        # The reference's reference: the same file, root's and not writable by others, is
        # known to run natively, so a 0 below means "refused", not "never read".
        runs.insert(0, ("secure", 0o644))
    for mode, bits in runs:
        # Not under /tmp: Gemini CLI refuses a system file below a directory others can write.
        parent = cache_dir() / "worlds"
        with Session(ctx, host, "hookd" if mode == "hookd" else "native", "sysfile-" + mode, parent=parent) as s:
            add_tool_hook(host, s.user_settings(), guard_entry(host, s.w))
            system = s.w.etc / "settings.json"
            add_tool_hook(host, system, counter_entry(host, s.w, "system"))
            system.chmod(bits)
            if mode == "hookd":
                s.install()
                s.start_daemon()
            s.go(turns)
            facts[mode] = s.facts()
            facts[mode]["system_runs"] = len(hook_runs(s.w, "system"))
    if "secure" in facts:
        v.expect("a secure system file's hook runs natively (reference sane)", facts["secure"]["system_runs"], 1)
    else:
        v.expect("the system hook runs once natively (reference sane)", facts["native"]["system_runs"], 1)
    v.same("system hook runs", facts["native"]["system_runs"], facts["hookd"]["system_runs"])
    compare(v, facts["native"], facts["hookd"], keys=("exit", "tool_ran", "sent_next", "printed"))
    return v


@scenario("system-file-once", ["gemini"], "a system settings file's hook, which the CLI runs itself, runs exactly once")
def system_once(ctx, host):
    return system_file_scenario(ctx, host, 0o644)


@scenario("system-file-insecure", ["gemini"], "hooks of a system file Gemini CLI refuses as insecure do not run in hookd either")
def system_insecure(ctx, host):
    return system_file_scenario(ctx, host, 0o666)


@scenario("hand-started-then-activated", ["gemini", "claude"], "stopping a hand-started hookd leaves the socket a service manager now holds")
def hand_started(ctx, host):
    v = Verdict()
    facts = {}
    for mode in ("native", "hookd"):
        with Session(ctx, host, mode, "handstarted") as s:
            add_tool_hook(host, s.user_settings(), guard_entry(host, s.w))
            if mode == "hookd":
                s.install()
                # Started by hand. A port, unlike a socket path, cannot be taken over while a
                # daemon listens on it: over HTTP the hand-started one serves the Unix socket
                # only, and the service manager's holds both.
                s.w.start_daemon(http=False)
                # The service manager takes the path over (systemd removes the old socket
                # file and binds its own), then the hand-started daemon is stopped.
                s.w.socket.unlink()
                s.w.supervisor = Supervisor(s.w)
                s.w.stop_daemon()
                facts["socket_left"] = s.w.socket.exists()
            s.go(rm_turns())
            facts[mode] = s.facts()
    v.expect("native denies (reference sane)", facts["native"]["tool_ran"], [])
    v.expect("the service's socket file is still there", facts.get("socket_left"), True)
    compare(v, facts["native"], facts["hookd"])
    return v


@scenario("uninstall-roundtrip", ["gemini", "claude"], "install, a hook added, install again, uninstall: the user's hooks are back, no relay left")
def uninstall_roundtrip(ctx, host):
    v = Verdict()
    facts = {}
    for mode in ("native", "hookd"):
        with Session(ctx, host, mode, "uninst") as s:
            add_tool_hook(host, s.user_settings(), guard_entry(host, s.w))
            if mode == "hookd":
                s.install()
                s.start_daemon()
                add_tool_hook(host, s.user_settings(), counter_entry(host, s.w, "late"))
                s.install()
                first = s.w.hookctl("uninstall", "--host", host.name, check=False)
                facts["uninstall_exit"] = first.returncode
                facts["uninstall_said"] = (first.stdout + first.stderr).strip()[-300:]
            else:
                add_tool_hook(host, s.user_settings(), counter_entry(host, s.w, "late"))
            f = {
                "relay_entries": len(relay_entries(s.user_settings())),
                "hooks_in_cli_file": hook_names(s.user_settings()),
            }
            # The CLI alone must now behave as before any install.
            s.go(rm_turns())
            f.update(s.facts())
            f["late_runs"] = len(hook_runs(s.w, "late"))
            facts[mode] = f
    v.expect("uninstall succeeds", facts.get("uninstall_exit"), 0)
    v.same("relay entries left", facts["native"]["relay_entries"], facts["hookd"]["relay_entries"])
    v.same("hooks in the CLI's file", facts["native"]["hooks_in_cli_file"], facts["hookd"]["hooks_in_cli_file"])
    v.same("late hook runs", facts["native"]["late_runs"], facts["hookd"]["late_runs"])
    compare(v, facts["native"], facts["hookd"], keys=("exit", "tool_ran", "sent_next", "printed"))
    if not v.ok and facts.get("uninstall_said"):
        v.check("(uninstall said)", True, facts["uninstall_said"])
    return v


@scenario("uninstall-one-of-two-hosts", ["claude"], "with both hosts installed, uninstalling Gemini's keeps Claude guarded")
def uninstall_two_hosts(ctx, host):
    v = Verdict()
    facts = {}
    gemini = Gemini(None)  # only its files: the Gemini CLI itself is not run here
    for mode in ("native", "hookd"):
        with Session(ctx, host, mode, "twohosts") as s:
            gemini.prepare(s.w)
            add_tool_hook(gemini, gemini.user_settings_path(s.w), guard_entry(gemini, s.w, name="gemini-guard"))
            add_tool_hook(host, s.user_settings(), guard_entry(host, s.w))
            if mode == "hookd":
                s.w.hookctl("install", "--host", "gemini", "--yes")
                s.install()
                s.start_daemon()
                out = s.w.hookctl("uninstall", "--host", "gemini", check=False)
                facts["uninstall_exit"] = out.returncode
                facts["uninstall_said"] = (out.stdout + out.stderr).strip()[-300:]
                facts["gemini_hooks_back"] = hook_names(gemini.user_settings_path(s.w))
            s.go(rm_turns())
            facts[mode] = s.facts()
    v.check("uninstall --host gemini succeeds", facts.get("uninstall_exit") == 0, facts.get("uninstall_said", ""))
    v.expect("Gemini's guard is back in its file", facts.get("gemini_hooks_back"), ["gemini-guard"])
    v.expect("native denies (reference sane)", facts["native"]["tool_ran"], [])
    compare(v, facts["native"], facts["hookd"])
    return v


@scenario("project-install-require", ["gemini"], "a project-scope install under --project-hooks require keeps guarding")
def project_require(ctx, host):
    v = Verdict()
    facts = {}
    for mode in ("native", "hookd"):
        with Session(ctx, host, mode, "require") as s:
            add_tool_hook(host, s.project_settings(), guard_entry(host, s.w))
            if mode == "hookd":
                s.install(scope="project")
                s.start_daemon("--project-hooks", "require")
                commands = [c for _, c in relay_entries(s.project_settings())]
                facts["relay_commands"] = sorted({c.split()[0] for c in commands})
            s.go(rm_turns())
            facts[mode] = s.facts()
    v.expect("native denies (reference sane)", facts["native"]["tool_ran"], [])
    compare(v, facts["native"], facts["hookd"])
    v.check(
        "project file's relay command is portable (hookctl from PATH)",
        all(not c.startswith("/") for c in facts.get("relay_commands", [])),
        "relay program(s) %s" % short(facts.get("relay_commands")),
    )
    return v


@scenario(
    "relay-wiring",
    ["gemini", "claude"],
    "install wires the relay only to events that have hooks (over HTTP: SessionStart's relay, one HTTP entry per event)",
)
def relay_wiring(ctx, host):
    v = Verdict()
    with Session(ctx, host, "hookd", "wiring") as s:
        add_tool_hook(host, s.user_settings(), guard_entry(host, s.w))
        native_events = sorted((read_json(s.user_settings(), {}).get("hooks") or {}).keys())
        native_matchers = tool_matchers(s.user_settings(), host.tool_event, relay=False)
        s.install()
        s.start_daemon()
        relayed = sorted({e for e, _ in relay_entries(s.user_settings())})
        relayed_matchers = tool_matchers(s.user_settings(), host.tool_event, relay=True)
        http_port = s.w.http_port if host.name == "claude" else None
        tool_groups = ((read_json(s.user_settings(), {}) or {}).get("hooks") or {}).get(host.tool_event) or []
    if http_port:
        # Over HTTP the only process is SessionStart's relay (it tells hookd the project);
        # the tool event is one HTTP entry for every tool, failing closed as its guard can.
        v.expect("events the host spawns a hook process for", relayed, ["SessionStart"])
        http_hooks = [h for g in tool_groups for h in g.get("hooks") or [] if h.get("type") == "http"]
        v.expect(
            "the tool event's HTTP entry",
            [(h.get("url"), h.get("onFailure"), "matcher" in g) for g in tool_groups for h in g.get("hooks") or []
             if h.get("type") == "http"],
            [("http://127.0.0.1:%d/v1/hooks/claude/%s" % (http_port, host.tool_event), "block", False)],
        )
        v.check("one HTTP entry", len(http_hooks) == 1, short(tool_groups))
        return v
    v.same("events the host spawns a hook process for", native_events, relayed)
    other_tool = {"gemini": "read_file", "claude": "Read"}[host.name]
    v.check(
        "the tool event's relay entries match the guarded tool only (native %s)" % short(native_matchers),
        relayed_matchers
        and all(matcher_covers(m, host.shell_tool) and not matcher_covers(m, other_tool) for m in relayed_matchers),
        "relay matchers %s" % short(relayed_matchers),
    )
    return v


def find(name):
    return [s for s in SCENARIOS if s["name"] == name]


def check_unique():
    names = [s["name"] for s in SCENARIOS]
    if len(names) != len(set(names)):
        raise SuiteError("duplicate scenario names")
