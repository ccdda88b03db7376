"""The Claude Agent SDK adapter: the shared translation table, and a real SDK agent (when
claude-agent-sdk is installed) against tests/interop/fakemodel.py, denied a tool call by a
hookd hook and given context by another."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import unittest
from pathlib import Path
from typing import Any

from hookd_client.claude_agent_sdk import answer_for_claude, claude_input_to_event, hookd_hooks

from .daemon import REPO, Daemon, command_hook, settings

TABLE = json.loads((REPO / "tests" / "protocol" / "claude-adapter.json").read_text())

try:
    import claude_agent_sdk
except ImportError:  # pragma: no cover - depends on the environment
    claude_agent_sdk = None


class TranslationTest(unittest.TestCase):
    def test_inputs_and_answers_follow_the_shared_table(self) -> None:
        for claude_input, expected in TABLE["inputs"]:
            self.assertEqual(claude_input_to_event(claude_input), expected, claude_input)
        for claude_input, merged, expected in TABLE["answers"]:
            self.assertEqual(answer_for_claude(claude_input, merged), expected, (claude_input, merged))
        self.assertEqual(answer_for_claude({"hook_event_name": "SessionEnd"}, None, ["boom"])["systemMessage"], "hookd: boom")


class FakeModel:
    """tests/interop/fakemodel.py serving Anthropic's API on 127.0.0.1."""

    def __init__(self, directory: Path, turns: list[dict[str, Any]]) -> None:
        self.log = directory / "model-requests.jsonl"
        script = directory / "model-script.json"
        script.write_text(json.dumps({"turns": turns}))
        port_file = directory / "model-port"
        self.process = subprocess.Popen(
            [sys.executable, str(REPO / "tests" / "interop" / "fakemodel.py"), "--api", "anthropic",
             "--script", str(script), "--log", str(self.log), "--port-file", str(port_file), "--max-seconds", "300"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        self.port_file = port_file

    async def url(self) -> str:
        for _ in range(1000):
            if self.port_file.exists() and self.port_file.read_text().strip():
                return f"http://127.0.0.1:{self.port_file.read_text().strip()}"
            if self.process.poll() is not None:
                break
            await asyncio.sleep(0.02)
        raise RuntimeError("the fake model server did not start")

    def bodies(self) -> list[str]:
        if not self.log.exists():
            return []
        return [json.dumps(json.loads(line).get("body")) for line in self.log.read_text().splitlines() if line.strip()]

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)


@unittest.skipIf(claude_agent_sdk is None, "claude-agent-sdk is not installed")
class SdkAgentTest(unittest.IsolatedAsyncioTestCase):
    async def test_an_sdk_agent_is_denied_by_one_hookd_hook_and_given_context_by_another(self) -> None:
        assert claude_agent_sdk is not None
        daemon = Daemon()
        guard = daemon.script(
            "guard.sh",
            "input=$(cat)\ncase \"$input\" in *'rm -rf'*) echo '{\"decision\":\"deny\",\"reason\":\"hookd guard: rm -rf is not allowed\"}' ;; esac",
        )
        daemon.write_settings(settings(
            ("BeforeTool", "run_shell_command", [command_hook("guard", guard)]),
            ("AfterTool", "run_shell_command",
             [command_hook("context", "echo '{\"hookSpecificOutput\":{\"additionalContext\":\"hookd-context-7f3a\"}}'")]),
        ))
        await daemon.launch()
        home = daemon.dir / "agent-home"
        home.mkdir()
        model = FakeModel(daemon.dir, [{"tool": "rm -rf victim && touch marker-1"}, {"tool": "touch marker-2"}, {"text": ["all done"]}])
        try:
            url = await model.url()
            hooks = await hookd_hooks(socket_path=daemon.socket, project_dir=daemon.cwd)
            env = {
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
                "ANTHROPIC_API_KEY": "fake-key", "ANTHROPIC_BASE_URL": url,
                "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            }
            options = claude_agent_sdk.ClaudeAgentOptions(
                cwd=daemon.cwd, hooks=hooks, allowed_tools=["Bash"], setting_sources=[], max_turns=6, env=env,
                **({"cli_path": os.environ["HOOKD_CLAUDE_CODE"]} if os.environ.get("HOOKD_CLAUDE_CODE") else {}),
            )
            kinds = []
            async with asyncio.timeout(120):
                async for message in claude_agent_sdk.query(prompt="clean up", options=options):
                    kinds.append(type(message).__name__)
            self.assertIn("ResultMessage", kinds)
            self.assertFalse((daemon.project / "marker-1").exists(), "the denied command did not run")
            self.assertTrue((daemon.project / "marker-2").exists(), "the allowed command ran")
            bodies = model.bodies()
            self.assertTrue(any("hookd guard: rm -rf is not allowed" in b for b in bodies), "the model was told why")
            self.assertTrue(any("hookd-context-7f3a" in b for b in bodies), "the model got the context")
        finally:
            model.stop()
            await asyncio.to_thread(daemon.cleanup)


if __name__ == "__main__":
    unittest.main()
