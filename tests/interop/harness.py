"""The interop suite's moving parts: pinned CLIs, temp worlds, the daemon, the fake model.

A *world* is one temp directory holding everything a run touches: a home (`home/`), a project
(`proj/`), hookd's config and state dirs, the socket dir, the fake model's script and request
log, hook scripts and their run logs. The CLI and hookd get an environment built from scratch
that points only inside it, so nothing of the machine's own settings leaks in and nothing
leaves 127.0.0.1.
"""

import hashlib
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent

GEMINI_PACKAGE = "@google/gemini-cli"
GEMINI_VERSION = "0.61.0"
CLAUDE_PACKAGE = "@anthropic-ai/claude-code"
CLAUDE_VERSION = "2.1.328"
CODEX_PACKAGE = "@openai/codex"
CODEX_VERSION = "0.171.0"
COPILOT_PACKAGE = "@github/copilot"
COPILOT_VERSION = "1.0.102"

# How long one CLI run may take before it is killed and reported.
CLI_TIMEOUT_S = 120


class SuiteError(Exception):
    """Something the suite itself could not do (install, build, start)."""


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# --- locations ---------------------------------------------------------------------------


def target_dir():
    env = os.environ.get("CARGO_TARGET_DIR")
    if env:
        return Path(env).resolve()
    out = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--no-deps"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(json.loads(out.stdout)["target_directory"])


def cache_dir():
    env = os.environ.get("HOOKD_INTEROP_CACHE")
    if env:
        return Path(env).resolve()
    return target_dir() / "interop-cache"


def build(release=False, static_relay=False):
    cmd = ["cargo", "build", "--locked", "-p", "hookd", "-p", "hookctl"]
    if release:
        # The benchmark also runs hookd-bench's relay benchmark.
        cmd += ["--release", "-p", "hookd-bench"]
    log("building: " + " ".join(cmd))
    subprocess.run(cmd, cwd=REPO, check=True)
    profile = "release" if release else "debug"
    if static_relay:
        # Relinks hookd-relay in place, statically (docs/hosts.md: a static relay).
        cmd = ["cargo", "rustc", "--locked", "-p", "hookctl", "--bin", "hookd-relay"]
        if release:
            cmd.append("--release")
        cmd += ["--", "-C", "target-feature=+crt-static"]
        log("building: " + " ".join(cmd))
        subprocess.run(cmd, cwd=REPO, check=True)
    bins = target_dir() / profile
    return bins / "hookd", bins / "hookctl"


# --- pinned CLIs --------------------------------------------------------------------------


def npm_install(dest, spec):
    """`npm install spec` into dest (its own package.json), unless already there."""
    name, version = spec.rsplit("@", 1)
    installed = dest / "node_modules" / name / "package.json"
    if installed.exists():
        try:
            if json.loads(installed.read_text())["version"] == version:
                return
        except (ValueError, KeyError):
            pass
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "package.json").write_text('{"private": true}\n')
    log("installing %s into %s" % (spec, dest))
    # --ignore-scripts: neither package needs its install script here (Claude Code's only
    # copies the platform binary, which the suite runs from its own package directly).
    subprocess.run(
        [
            "npm",
            "install",
            "--no-audit",
            "--no-fund",
            "--no-save",
            "--ignore-scripts",
            "--loglevel=error",
            spec,
        ],
        cwd=dest,
        check=True,
    )


def claude_platform_package():
    machine = os.uname().machine
    arch = {"x86_64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(machine, machine)
    libc = ""
    if Path("/etc/alpine-release").exists():
        libc = "-musl"
    return "%s-linux-%s%s" % (CLAUDE_PACKAGE, arch, libc)


def install_clis(hosts):
    """Installs the pinned CLIs the run needs; returns {host: argv prefix}."""
    root = cache_dir()
    out = {}
    if "gemini" in hosts:
        dest = root / ("gemini-cli-" + GEMINI_VERSION)
        npm_install(dest, "%s@%s" % (GEMINI_PACKAGE, GEMINI_VERSION))
        entry = dest / "node_modules" / GEMINI_PACKAGE / "bundle" / "gemini.js"
        if not entry.exists():
            raise SuiteError("Gemini CLI entry point missing: %s" % entry)
        out["gemini"] = ["node", str(entry)]
    if "claude" in hosts:
        dest = root / ("claude-code-" + CLAUDE_VERSION)
        npm_install(dest, "%s@%s" % (CLAUDE_PACKAGE, CLAUDE_VERSION))
        binary = dest / "node_modules" / claude_platform_package() / "claude"
        if not binary.exists():
            raise SuiteError(
                "Claude Code's native binary is missing: %s (npm installs the platform "
                "package as an optional dependency)" % binary
            )
        out["claude"] = [str(binary)]
    if "codex" in hosts:
        dest = root / ("codex-cli-" + CODEX_VERSION)
        npm_install(dest, "%s@%s" % (CODEX_PACKAGE, CODEX_VERSION))
        binary = codex_binary(dest)
        if binary is None:
            raise SuiteError(
                "Codex CLI's native binary is missing under %s (npm installs the platform "
                "package as an optional dependency)" % dest
            )
        out["codex"] = [str(binary)]
    if "copilot" in hosts:
        dest = root / ("copilot-" + COPILOT_VERSION)
        npm_install(dest, "%s@%s" % (COPILOT_PACKAGE, COPILOT_VERSION))
        binary = copilot_binary(dest)
        if binary is None:
            raise SuiteError(
                "Copilot CLI's native binary is missing under %s (npm installs the platform "
                "package as an optional dependency)" % dest
            )
        out["copilot"] = [str(binary)]
    return out


def copilot_binary(dest):
    """The native binary of the platform package npm installed for Copilot CLI."""
    machine = os.uname().machine
    arch = {"x86_64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(machine, machine)
    for platform in ("linuxmusl", "linux"):
        binary = dest / "node_modules" / "@github" / ("copilot-%s-%s" % (platform, arch)) / "copilot"
        if binary.exists():
            return binary
    return None


def codex_binary(dest):
    """The native binary of the platform package npm installed for Codex CLI."""
    machine = os.uname().machine
    arch = {"x86_64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(machine, machine)
    triple = {"x64": "x86_64", "arm64": "aarch64"}.get(arch, arch)
    vendor = dest / "node_modules" / "@openai" / ("codex-linux-" + arch) / "vendor"
    for libc in ("musl", "gnu"):
        binary = vendor / ("%s-unknown-linux-%s" % (triple, libc)) / "bin" / "codex"
        if binary.exists():
            return binary
    return None


# --- small utilities -------------------------------------------------------------------------


def write_json(path, value, mode=None):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2) + "\n")
    if mode is not None:
        path.chmod(mode)


def read_json(path, default=None):
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return default


def read_lines(path):
    """The JSON lines of a log; a line still being written (no end yet) is skipped."""
    try:
        text = Path(path).read_text()
    except OSError:
        return []
    out = []
    for line in text.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def wait_for_socket(path, timeout_s=10.0, proc=None):
    """Waits until something accepts a connection on the Unix socket at path."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise SuiteError("hookd exited with %s before listening" % proc.returncode)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(str(path))
            return
        except OSError:
            time.sleep(0.02)
        finally:
            s.close()
    raise SuiteError("nothing listens on %s after %.0f s" % (path, timeout_s))


def stop_process(proc, timeout_s=10.0):
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


# --- worlds --------------------------------------------------------------------------------


# How Claude Code reaches hookd in the hookd runs: "command" (relay entries) or "http" (`install
# --transport http`, hookd listening on a loopback port of the world). Set by `run`.
TRANSPORT = "command"


def free_port():
    """A loopback TCP port nothing listens on (bound once to learn it, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class World:
    """One run's private directory tree and environment."""

    def __init__(self, tools, label, keep=False, parent=None):
        self.tools = tools
        if parent is not None:
            Path(parent).mkdir(mode=0o755, parents=True, exist_ok=True)
        self.root = Path(tempfile.mkdtemp(prefix="hookd-interop-%s-" % label, dir=parent))
        self.keep = keep
        self.home = self.root / "home"
        self.proj = self.root / "proj"
        self.config = self.root / "config"
        self.state = self.root / "state"
        # The socket's directory is always a short path: a Unix socket path has ~107 bytes.
        self.run_dir = Path(tempfile.mkdtemp(prefix="hookd-interop-run-"))
        self.etc = self.root / "etc"
        self.hooks_dir = self.root / "hooks"
        self.logs = self.root / "logs"
        for d in (self.home, self.proj, self.config, self.state, self.etc, self.hooks_dir, self.logs):
            d.mkdir(parents=True)
        self.run_dir.chmod(0o700)
        self.socket = self.run_dir / "hookd.sock"
        # hookd's HTTP listener in this world (with TRANSPORT "http").
        self.http_port = free_port() if TRANSPORT == "http" else None
        self.daemon = None
        self.model = None

    # Environment shared by the CLI, hookd and hookctl: everything inside the world.
    def base_env(self):
        # hookd's binaries are on PATH, as after an install: relay entries call `hookd-relay`
        # from PATH, which is what makes project files work on a teammate's machine.
        path_dirs = [str(Path(self.tools.hookctl).parent)]
        for tool in ("node", "python3", "bash"):
            found = shutil.which(tool)
            if found:
                path_dirs.append(str(Path(found).parent))
        path_dirs += ["/usr/local/bin", "/usr/bin", "/bin"]
        seen = []
        for d in path_dirs:
            if d not in seen:
                seen.append(d)
        return {
            "PATH": ":".join(seen),
            "HOME": str(self.home),
            "USER": os.environ.get("USER", "root"),
            "LANG": "C.UTF-8",
            "TERM": "dumb",
            "NO_COLOR": "1",
            "TMPDIR": str(self.root),
            "XDG_CONFIG_HOME": str(self.config),
            "XDG_STATE_HOME": str(self.state),
            "XDG_RUNTIME_DIR": str(self.run_dir),
            "GEMINI_CLI_SYSTEM_SETTINGS_PATH": str(self.etc / "settings.json"),
            "GEMINI_CLI_SYSTEM_DEFAULTS_PATH": str(self.etc / "system-defaults.json"),
        }

    def hookctl(self, *args, env_extra=None, check=True):
        env = self.base_env()
        env["HOOKD_SOCKET"] = str(self.socket)
        env.update(env_extra or {})
        out = subprocess.run(
            [str(self.tools.hookctl), *args],
            cwd=self.proj,
            env=env,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=60,
        )
        (self.logs / "hookctl.log").open("a").write(
            "$ hookctl %s\nexit %s\n%s\n%s\n" % (" ".join(args), out.returncode, out.stdout, out.stderr)
        )
        if check and out.returncode != 0:
            raise SuiteError(
                "hookctl %s failed (%s): %s" % (" ".join(args), out.returncode, out.stderr.strip())
            )
        return out

    def wait_background_done(self, timeout_s=20):
        """Waits until the daemon holds no background run (async hooks, a detached SessionEnd
        that outlives the CLI), so facts read after the CLI exits include their effects.
        Returns at once when no daemon answers."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            out = self.hookctl("status", "--json", check=False)
            if out.returncode != 0:
                return
            try:
                background = json.loads(out.stdout).get("background") or {}
            except ValueError:
                return
            if not background.get("running"):
                return
            time.sleep(0.05)

    # --- hookd ---
    def http_args(self):
        """hookd's `--http` for this world, when the hookd runs go over HTTP."""
        return ["--http", "127.0.0.1:%d" % self.http_port] if self.http_port else []

    def daemon_args(self, extra, http=True):
        return [str(self.tools.hookd), "--socket", str(self.socket), *(self.http_args() if http else []), *extra]

    def start_daemon(self, *extra, http=True):
        """A plain hookd on the world's socket (and, with TRANSPORT "http" and `http`, on the
        world's HTTP port); returns when it accepts connections."""
        env = self.base_env()
        log_file = (self.logs / "hookd.log").open("a")
        self.daemon = subprocess.Popen(
            self.daemon_args(extra, http=http),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=log_file,
            start_new_session=True,
        )
        wait_for_socket(self.socket, proc=self.daemon)
        return self.daemon

    def stop_daemon(self):
        stop_process(self.daemon)
        self.daemon = None

    # --- the fake model ---
    def start_model(self, api, turns, chunk_delay=0.0):
        script = self.root / "model-script.json"
        write_json(script, {"turns": turns})
        self.model_log = self.root / "model-requests.jsonl"
        port_file = self.root / "model-port"
        self.model = subprocess.Popen(
            [
                sys.executable,
                str(HERE / "fakemodel.py"),
                "--api",
                api,
                "--script",
                str(script),
                "--log",
                str(self.model_log),
                "--port-file",
                str(port_file),
                "--chunk-delay",
                str(chunk_delay),
                "--max-seconds",
                "900",
            ],
            stdin=subprocess.DEVNULL,
            stdout=(self.logs / "model.log").open("a"),
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 10
        while not port_file.exists():
            if self.model.poll() is not None or time.monotonic() > deadline:
                raise SuiteError("the fake model server did not start (see %s)" % (self.logs / "model.log"))
            time.sleep(0.01)
        self.model_url = "http://127.0.0.1:%s" % port_file.read_text().strip()
        return self.model_url

    def model_requests(self):
        return read_lines(self.model_log)

    def close(self):
        stop_process(self.model)
        if getattr(self, "supervisor", None) is not None:
            self.supervisor.stop()
        self.stop_daemon()
        if not self.keep:
            shutil.rmtree(self.root, ignore_errors=True)
            shutil.rmtree(self.run_dir, ignore_errors=True)


# --- a socket-activated, restartable daemon ---------------------------------------------------

SUPERVISOR = r"""
# Holds the activation socket (fd 3) as systemd's socket unit does, and starts hookd again
# each time it exits, until the stop file exists.
while [ ! -e "$STOP_FILE" ]; do
  bash -c 'echo $$ > "$PID_FILE.tmp"; mv "$PID_FILE.tmp" "$PID_FILE"; export LISTEN_PID=$$; exec "$@"' hookd "$@" </dev/null
  echo "exited $?" >> "$EXITS_FILE"
done
"""


class Supervisor:
    """hookd behind a listening socket that outlives it, like `hookd.socket` under systemd.

    With `systemd-socket-activate` installed, it holds the socket; otherwise this process binds
    it and passes it down as fd 3. Either way `LISTEN_FDS`/`LISTEN_PID` are set for hookd, and
    `restart()` stops hookd with SIGTERM (as `systemctl restart` does) and lets the loop start a
    new one on the same listening socket.
    """

    def __init__(self, world, extra_args=()):
        self.world = world
        self.pid_file = world.run_dir / "hookd.pid"
        self.stop_file = world.run_dir / "supervisor.stop"
        self.exits_file = world.logs / "hookd-exits.log"
        env = world.base_env()
        env.update(
            {
                "PID_FILE": str(self.pid_file),
                "STOP_FILE": str(self.stop_file),
                "EXITS_FILE": str(self.exits_file),
            }
        )
        # hookd takes the socket from LISTEN_FDS; --socket is not given. Over HTTP the
        # loopback port is held too, named "http" as hookd-http.socket names it.
        daemon = [str(world.tools.hookd), *extra_args]
        log_file = (world.logs / "hookd.log").open("a")
        tool = shutil.which("systemd-socket-activate")
        self.held = None
        self.held_http = None
        http = world.http_port
        if tool:
            # systemd-socket-activate hands the program only the variables named with -E.
            setenv = [arg for name in sorted(env) for arg in ("-E", name)]
            listen = ["-l", str(world.socket)]
            if http:
                listen += ["-l", "127.0.0.1:%d" % http, "--fdname=hookd.socket:http"]
            argv = [tool, *listen, *setenv, "bash", "-c", SUPERVISOR, "supervisor", *daemon]
            self.proc = subprocess.Popen(
                argv, env=env, stdin=subprocess.DEVNULL, stdout=log_file, stderr=log_file, start_new_session=True
            )
            self.how = "systemd-socket-activate"
        else:
            self.held = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.held.bind(str(world.socket))
            self.held.listen(128)
            fd = self.held.fileno()
            env["LISTEN_FDS"] = "1"
            fds = [fd]
            if http:
                self.held_http = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                self.held_http.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                self.held_http.bind(("127.0.0.1", http))
                self.held_http.listen(128)
                fds.append(self.held_http.fileno())
                env["LISTEN_FDS"] = "2"
                env["LISTEN_FDNAMES"] = "hookd.socket:http"

            def to_fd3():
                for i, held in enumerate(fds):
                    os.dup2(held, 3 + i)

            self.proc = subprocess.Popen(
                ["bash", "-c", SUPERVISOR, "supervisor", *daemon],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=log_file,
                start_new_session=True,
                preexec_fn=to_fd3,
                pass_fds=tuple(fds),
            )
            self.how = "socket held by the suite"
        # systemd-socket-activate starts the program at the first connection: this one.
        wait_for_socket(world.socket, proc=self.proc)
        self.wait_for_pid()

    def wait_for_pid(self, not_pid=None, timeout_s=10.0):
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                pid = int(self.pid_file.read_text().strip())
                if pid != not_pid:
                    return pid
            except (OSError, ValueError):
                pass
            time.sleep(0.01)
        raise SuiteError("the supervised hookd did not start")

    def hookd_pid(self):
        return int(self.pid_file.read_text().strip())

    def restart(self):
        """SIGTERM to the running hookd; the loop starts the next one on the same socket."""
        pid = self.hookd_pid()
        os.kill(pid, signal.SIGTERM)
        return pid

    def stop(self):
        self.stop_file.touch()
        try:
            os.kill(self.hookd_pid(), signal.SIGTERM)
        except (OSError, ValueError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.held is not None:
            self.held.close()
        if self.held_http is not None:
            self.held_http.close()


# --- the hosts -------------------------------------------------------------------------------


class Host:
    """What differs between the two CLIs: files, events, payloads, how to run one session."""

    name = None
    api = None
    shell_tool = None
    tool_event = None

    def __init__(self, argv):
        self.argv = argv

    def user_settings_path(self, w):
        raise NotImplementedError

    def project_settings_path(self, w):
        raise NotImplementedError

    def prepare(self, w):
        """The host's settings that every run needs (auth, no telemetry), no hooks."""

    def set_hooks(self, path, hooks):
        settings = read_json(path, {}) or {}
        settings["hooks"] = hooks
        write_json(path, settings)

    def add_hooks(self, path, event, matcher, hook_list):
        settings = read_json(path, {}) or {}
        hooks = settings.setdefault("hooks", {})
        group = {"hooks": hook_list}
        if matcher is not None:
            group["matcher"] = matcher
        hooks.setdefault(event, []).append(group)
        write_json(path, settings)

    def run(self, w, prompt, env_extra=None, timeout_s=CLI_TIMEOUT_S):
        env = w.base_env()
        env.update(self.env(w))
        env.update(env_extra or {})
        started = time.monotonic()
        try:
            out = subprocess.run(
                self.argv + self.args(prompt),
                cwd=w.proj,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=timeout_s,
            )
            code, stdout, stderr = out.returncode, out.stdout, out.stderr
        except subprocess.TimeoutExpired as e:
            code = "timeout"
            stdout = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            stderr = (e.stderr or b"").decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
        elapsed = time.monotonic() - started
        (w.logs / ("%s.stdout" % self.name)).write_text(stdout)
        (w.logs / ("%s.stderr" % self.name)).write_text(stderr)
        return CliRun(self, w, code, stdout, stderr, elapsed)


class Gemini(Host):
    name = "gemini"
    api = "gemini"
    shell_tool = "run_shell_command"
    tool_event = "BeforeTool"

    def user_settings_path(self, w):
        return w.home / ".gemini" / "settings.json"

    def project_settings_path(self, w):
        return w.proj / ".gemini" / "settings.json"

    def prepare(self, w):
        settings = read_json(self.user_settings_path(w), {}) or {}
        settings.update(
            {
                # GOOGLE_GEMINI_BASE_URL alone selects the "gateway" auth type, which headless
                # mode refuses; an API key with the base URL override is accepted.
                "security": {"auth": {"selectedType": "gemini-api-key"}},
                "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
                "privacy": {"usageStatisticsEnabled": False},
                "telemetry": {"enabled": False},
            }
        )
        write_json(self.user_settings_path(w), settings)

    def env(self, w):
        return {
            "GEMINI_API_KEY": "interop-fake-key",
            "GOOGLE_GEMINI_BASE_URL": w.model_url,
            "GEMINI_CLI_TRUST_WORKSPACE": "true",
            "GEMINI_CLI_NO_RELAUNCH": "true",
        }

    def args(self, prompt):
        return ["-p", prompt, "--output-format", "json", "--yolo"]

    # What the CLI sent the model after each tool call, in order.
    def tool_results(self, requests):
        results = []
        for r in turn_requests(requests):
            contents = (r["body"] or {}).get("contents") or []
            if not contents:
                continue
            for part in contents[-1].get("parts") or []:
                if "functionResponse" in part:
                    results.append(json.dumps(part["functionResponse"].get("response"), sort_keys=True))
        return results

    def printed(self, run):
        data = parse_json_out(run.stdout)
        if isinstance(data, dict):
            if "error" in data:
                return "error: %s" % (data["error"] or {}).get("message")
            return data.get("response")
        return None


class Claude(Host):
    name = "claude"
    api = "anthropic"
    shell_tool = "Bash"
    tool_event = "PreToolUse"

    def user_settings_path(self, w):
        return w.home / ".claude" / "settings.json"

    def project_settings_path(self, w):
        return w.proj / ".claude" / "settings.json"

    def prepare(self, w):
        path = self.user_settings_path(w)
        write_json(path, read_json(path, {}) or {})

    def env(self, w):
        return {
            "ANTHROPIC_API_KEY": "interop-fake-key",
            "ANTHROPIC_BASE_URL": w.model_url,
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        }

    def args(self, prompt):
        # --allowedTools Bash instead of bypassing permissions, which Claude Code refuses as
        # root outside a sandbox.
        return ["-p", prompt, "--output-format", "json", "--allowedTools", "Bash"]

    def tool_results(self, requests):
        results = []
        for r in turn_requests(requests):
            messages = (r["body"] or {}).get("messages") or []
            # The messages after the last assistant one: the tool results, sometimes followed
            # by a system reminder Claude Code adds.
            tail = []
            for m in reversed(messages):
                if m.get("role") == "assistant":
                    break
                tail.insert(0, m)
            items = [
                item
                for m in tail
                if m.get("role") == "user" and isinstance(m.get("content"), list)
                for item in m["content"]
            ]
            for item in items:
                if isinstance(item, dict) and item.get("type") == "tool_result":
                    inner = item.get("content")
                    if isinstance(inner, list):
                        inner = "".join(i.get("text", "") for i in inner if isinstance(i, dict))
                    results.append(("error: " if item.get("is_error") else "") + str(inner))
        return results

    def printed(self, run):
        data = parse_json_out(run.stdout)
        if isinstance(data, dict):
            return ("error: " if data.get("is_error") else "") + str(data.get("result"))
        return None


class Codex(Host):
    """OpenAI Codex CLI, headless (`codex exec`), against the fake Responses API.

    Everything is in `~/.codex` of the world: `config.toml` names the fake model provider
    (its URL is given per run with `-c`, as the server's port is known only then) and holds
    the trust records without which Codex skips a hook; `hooks.json` the hooks."""

    name = "codex"
    api = "openai"
    shell_tool = "Bash"
    tool_event = "PreToolUse"

    def codex_home(self, w):
        return w.home / ".codex"

    def user_settings_path(self, w):
        return self.codex_home(w) / "hooks.json"

    def project_settings_path(self, w):
        return w.proj / ".codex" / "hooks.json"

    def config_path(self, w):
        return self.codex_home(w) / "config.toml"

    def prepare(self, w):
        path = self.config_path(w)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            'model = "gpt-interop"\n'
            'model_provider = "interop"\n'
            "check_for_update_on_startup = false\n"
            "\n"
            "[model_providers.interop]\n"
            'name = "interop"\n'
            'base_url = "http://127.0.0.1:9/v1"\n'
            'env_key = "INTEROP_FAKE_KEY"\n'
            'wire_api = "responses"\n'
            "\n"
            "[features]\n"
            "plugins = false\n"
        )
        self.world = w

    def trust_hooks(self, w):
        """Trusts every command hook of the user's hooks.json, as a user does in /hooks:
        Codex's own key and hash (`hooks.state."<key>".trusted_hash` in config.toml)."""
        path = self.user_settings_path(w)
        hooks = (read_json(path, {}) or {}).get("hooks") or {}
        lines = []
        for event, groups in hooks.items():
            label = re.sub(r"(?<!^)([A-Z])", r"_\1", event).lower()
            for gi, group in enumerate(groups or []):
                for hi, handler in enumerate(group.get("hooks") or []):
                    if handler.get("type") != "command":
                        continue
                    normalized = {
                        "async": bool(handler.get("async", False)),
                        "command": handler["command"],
                        "timeout": max(1, int(handler.get("timeout", 600))),
                        "type": "command",
                    }
                    identity = {"event_name": label, "hooks": [normalized]}
                    if group.get("matcher") is not None and event not in CODEX_NO_MATCHER:
                        identity["matcher"] = group["matcher"]
                    canonical = json.dumps(identity, separators=(",", ":"), sort_keys=True)
                    digest = hashlib.sha256(canonical.encode()).hexdigest()
                    key = "%s:%s:%d:%d" % (path, label, gi, hi)
                    lines.append('\n[hooks.state.%s]\ntrusted_hash = "sha256:%s"\n' % (json.dumps(key), digest))
        with open(self.config_path(w), "a") as f:
            f.write("".join(lines))

    def env(self, w):
        self.model_url = w.model_url
        return {"INTEROP_FAKE_KEY": "interop-fake-key", "CODEX_HOME": str(self.codex_home(w))}

    def args(self, prompt):
        return [
            "exec",
            "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox",
            "-c",
            'model_providers.interop.base_url="%s/v1"' % self.model_url,
            "-C",
            str(self.world.proj),
            prompt,
        ]

    def tool_results(self, requests):
        turns = turn_requests(requests)
        if not turns:
            return []
        results = []
        for item in (turns[-1]["body"] or {}).get("input") or []:
            if isinstance(item, dict) and item.get("type") == "function_call_output":
                output = item.get("output")
                if not isinstance(output, str):
                    output = json.dumps(output, sort_keys=True)
                # Timings and chunk ids differ from run to run.
                output = re.sub(r"(Wall time|Chunk ID|Original token count)[^\n]*\n?", "", output)
                results.append(output)
        return results

    def printed(self, run):
        return run.stdout.strip() or None


class Copilot(Host):
    """GitHub Copilot CLI, headless (`copilot -p`), against the fake Anthropic API.

    Its hooks are in `~/.copilot/hooks/` of the world (`$COPILOT_HOME`); the file the suite
    writes is the one `hookctl install` edits (`hookd.json`), so that install moves them.
    The binary unpacks itself once into a package cache shared by the run's worlds
    (`COPILOT_PKG_CACHE_HOME`); the world's project is a trusted folder, without which
    Copilot skips a repository's hook files."""

    name = "copilot"
    api = "anthropic"
    shell_tool = "bash"
    tool_event = "preToolUse"

    def copilot_home(self, w):
        return w.home / ".copilot"

    def user_settings_path(self, w):
        return self.copilot_home(w) / "hooks" / "hookd.json"

    def project_settings_path(self, w):
        return w.proj / ".github" / "hooks" / "hookd.json"

    def prepare(self, w):
        write_json(self.copilot_home(w) / "config.json", {"trustedFolders": [str(w.proj)]})
        subprocess.run(["git", "init", "-q", str(w.proj)], check=False)

    def add_hooks(self, path, event, matcher, hook_list):
        settings = read_json(path, {}) or {}
        settings.setdefault("version", 1)
        hooks = settings.setdefault("hooks", {})
        group = {"hooks": hook_list}
        if matcher is not None:
            group["matcher"] = matcher
        hooks.setdefault(event, []).append(group)
        write_json(path, settings)

    def env(self, w):
        return {
            "COPILOT_HOME": str(self.copilot_home(w)),
            "COPILOT_PKG_CACHE_HOME": str(target_dir() / "interop-copilot-pkg"),
            "COPILOT_AUTO_UPDATE": "false",
            "COPILOT_OFFLINE": "true",
            "COPILOT_PROVIDER_BASE_URL": w.model_url,
            "COPILOT_PROVIDER_TYPE": "anthropic",
            "COPILOT_PROVIDER_API_KEY": "interop-fake-key",
            "COPILOT_MODEL": "claude-sonnet-4",
        }

    # More arguments for every run (a scenario's `--additional-mcp-config`), reset by it.
    extra_args = ()

    def args(self, prompt):
        return ["-p", prompt, "--allow-all-tools", "--no-ask-user", *self.extra_args]

    def tool_results(self, requests):
        return Claude.tool_results(self, requests)

    def printed(self, run):
        # The final text, without the usage summary Copilot prints after it.
        text = run.stdout.split("\n\n\nChanges")[0]
        return re.sub(r"Duration.*|Resume.*|Tokens.*", "", text).strip() or None


# Codex events whose matcher Codex ignores (and leaves out of the trust hash).
CODEX_NO_MATCHER = {"UserPromptSubmit", "Stop", "SessionEnd", "Interrupt"}


def parse_json_out(text):
    text = text.strip()
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        # A trailing JSON object after other output.
        start = text.rfind("\n{")
        if start >= 0:
            try:
                return json.loads(text[start + 1 :])
            except ValueError:
                return None
        return None


def turn_requests(requests):
    """The main-loop requests, one per turn index (the first of each; retries dropped)."""
    seen = {}
    for r in requests:
        if r.get("kind") == "turn" and r.get("turn") not in seen:
            seen[r["turn"]] = r
    return [seen[k] for k in sorted(seen)]


HOOK_LINE = re.compile(r"hook|hookd|relay", re.IGNORECASE)


class CliRun:
    def __init__(self, host, world, code, stdout, stderr, elapsed):
        self.host = host
        self.world = world
        self.code = code
        self.stdout = stdout
        self.stderr = stderr
        self.elapsed = elapsed

    def normalize(self, text):
        if text is None:
            return None
        text = str(text).replace(str(self.world.root), "<world>").replace(str(self.world.run_dir), "<run>")
        text = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<uuid>", text)
        text = re.sub(r"\b\d+(\.\d+)?\s?ms\b", "<n>ms", text)
        text = re.sub(r"(PGID|PID|pid)([:= ]+)\d+", r"\1\2<n>", text)
        return text

    def tool_results(self):
        return [self.normalize(t) for t in self.host.tool_results(self.world.model_requests())]

    def printed(self):
        return self.normalize(self.host.printed(self))

    def hook_stderr(self):
        """stderr lines that speak of hooks: what the user is shown about them.

        The names Gemini CLI lists under its project-hooks warning ("- guard", "- hookd-relay")
        are left out: the relay entries necessarily have names of their own."""
        return [
            self.normalize(l.strip())
            for l in self.stderr.splitlines()
            if HOOK_LINE.search(l) and not l.strip().startswith("- ")
        ]


# --- hook scripts -------------------------------------------------------------------------------

GUARD = r'''#!/usr/bin/env python3
"""A guard for every CLI: denies shell commands containing "rm -rf", logs every run."""
import json, os, sys, time
log_path = sys.argv[1]
name = sys.argv[2] if len(sys.argv) > 2 else "guard"
payload = json.load(sys.stdin)
# Copilot CLI's own files send camelCase objects that name no event.
copilot = "toolArgs" in payload
event = "preToolUse" if copilot else payload.get("hook_event_name")
command = (payload.get("tool_input") or payload.get("toolArgs") or {}).get("command", "")
with open(log_path, "a") as f:
    f.write(json.dumps({
        "hook": name, "event": event, "command": command, "cwd": payload.get("cwd"),
        "GEMINI_PROJECT_DIR": os.environ.get("GEMINI_PROJECT_DIR"),
        "CLAUDE_PROJECT_DIR": os.environ.get("CLAUDE_PROJECT_DIR"),
        "pid": os.getpid(), "time": time.time(),
    }) + "\n")
request = os.environ.get("INTEROP_HOOK_SIGNAL")
if request and "rm -rf" in command and not os.path.exists(request):
    # Ask the suite to restart the daemon now, and stay busy while it does.
    open(request, "w").close()
    time.sleep(float(os.environ.get("INTEROP_HOOK_SLEEP", "0.5")))
if "rm -rf" in command:
    reason = "interop guard: rm -rf is not allowed"
    if copilot:
        print(json.dumps({"permissionDecision": "deny", "permissionDecisionReason": reason}))
    elif event == "PreToolUse":
        print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
              "permissionDecision": "deny", "permissionDecisionReason": reason}}))
    else:
        print(json.dumps({"decision": "deny", "reason": reason}))
sys.exit(0)
'''

COUNTER = r'''#!/usr/bin/env python3
"""Appends one line per run (event, tool, project dirs) to the log named by argv[1]."""
import json, os, sys
payload = json.load(sys.stdin)
with open(sys.argv[1], "a") as f:
    f.write(json.dumps({
        "hook": sys.argv[2] if len(sys.argv) > 2 else "counter",
        "event": payload.get("hook_event_name"),
        "tool": payload.get("tool_name"),
        "text": json.dumps(payload.get("llm_response"))[:4000] if "llm_response" in payload else None,
        "full_content": payload.get("full_content"),
        "GEMINI_PROJECT_DIR": os.environ.get("GEMINI_PROJECT_DIR"),
        "CLAUDE_PROJECT_DIR": os.environ.get("CLAUDE_PROJECT_DIR"),
    }) + "\n")
sys.exit(0)
'''


def write_script(path, body):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path
