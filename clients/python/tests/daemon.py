"""Starts the real hookd binary on a socket in a temp directory, for the client's tests."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from hookd_client import Client

REPO = Path(__file__).resolve().parents[3]


def hookd_binary() -> str:
    """``$HOOKD_BIN``, else the workspace's debug build."""
    if os.environ.get("HOOKD_BIN"):
        return os.environ["HOOKD_BIN"]
    target = os.environ.get("CARGO_TARGET_DIR") or str(REPO / "target")
    return str(Path(target) / "debug" / "hookd")


def settings(*definitions: tuple[str, str | None, list[dict[str, Any]]]) -> dict[str, Any]:
    """Settings with one definition per ``(event, matcher, hooks)``."""
    hooks: dict[str, list[dict[str, Any]]] = {}
    for event, matcher, entries in definitions:
        definition: dict[str, Any] = {"hooks": entries}
        if matcher:
            definition["matcher"] = matcher
        hooks.setdefault(event, []).append(definition)
    return {"hooks": hooks}


def command_hook(name: str, command: str) -> dict[str, Any]:
    """A command hook entry."""
    return {"name": name, "type": "command", "command": command}


class Daemon:
    """A running daemon with its own home, project and socket."""

    def __init__(self, project_settings: dict[str, Any] | None = None, args: list[str] | None = None):
        self.dir = Path(tempfile.mkdtemp(prefix="hookd-client-test-"))
        self.home = self.dir / "home"
        self.project = self.dir / "project"
        self.socket = str(self.dir / "run" / "hookd.sock")
        self.args = args or []
        (self.home / ".gemini").mkdir(parents=True)
        (self.project / ".gemini" / "hooks").mkdir(parents=True)
        self.write_settings(project_settings or {})
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def cwd(self) -> str:
        return str(self.project)

    def write_settings(self, value: dict[str, Any]) -> None:
        (self.project / ".gemini" / "settings.json").write_text(json.dumps(value, indent=2))

    def script(self, name: str, body: str) -> str:
        """Writes an executable bash script into the project's hooks; returns its path."""
        path = self.project / ".gemini" / "hooks" / name
        path.write_text(f"#!/usr/bin/env bash\n{body}\n")
        path.chmod(0o755)
        return str(path)

    async def launch(self) -> None:
        """Starts the daemon process; ready when a client completes a handshake."""
        env = {
            "HOME": str(self.home),
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "XDG_STATE_HOME": str(self.home / ".local" / "state"),
            "GEMINI_CLI_SYSTEM_SETTINGS_PATH": str(self.dir / "etc" / "settings.json"),
            "GEMINI_CLI_SYSTEM_DEFAULTS_PATH": str(self.dir / "etc" / "system-defaults.json"),
        }
        self.process = subprocess.Popen(
            [hookd_binary(), "--socket", self.socket, "--kill-grace-ms", "500", *self.args],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        client = await Client.connect(self.socket, connect_timeout=20.0, send_env=False)
        await client.ping()
        await client.close()

    async def client(self, **options: Any) -> Client:
        return await Client.connect(self.socket, send_env=False, **options)

    def stop(self) -> None:
        """SIGTERM, then wait for the exit."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(30)
        self.process = None

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
