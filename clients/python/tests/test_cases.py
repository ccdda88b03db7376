"""The shared protocol cases (tests/protocol/cases.json at the repository's root), sent
through this client's connection (its socket checks, framing and handshake)."""

from __future__ import annotations

import asyncio
import json
import unittest
from typing import Any

from .daemon import REPO, Daemon

CASES = json.loads((REPO / "tests" / "protocol" / "cases.json").read_text())

_MISSING = object()


def matches(expected: Any, actual: Any = _MISSING) -> bool:
    """Whether ``actual`` matches ``expected`` as the file's ``about`` describes."""
    if expected == "<absent>":
        return actual is _MISSING
    if actual is _MISSING:
        return False
    if expected == "<any>":
        return True
    if isinstance(expected, str) and expected.startswith("<contains:"):
        return isinstance(actual, str) and expected[len("<contains:"):-1] in actual
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            matches(value, actual.get(key, _MISSING)) for key, value in expected.items()
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(expected)
            and all(matches(e, a) for e, a in zip(expected, actual))
        )
    # JSON keeps booleans and numbers apart; Python's == does not.
    return type(expected) is type(actual) and expected == actual


def substitute(value: Any, cwd: str) -> Any:
    if isinstance(value, str):
        return value.replace("$CWD", cwd)
    if isinstance(value, list):
        return [substitute(item, cwd) for item in value]
    if isinstance(value, dict):
        return {key: substitute(item, cwd) for key, item in value.items()}
    return value


class MatcherTest(unittest.TestCase):
    def test_the_matcher_reads_the_file_format(self) -> None:
        self.assertTrue(matches({"a": 1}, {"a": 1, "b": 2}))
        self.assertFalse(matches({"a": "<any>"}, {}))
        self.assertTrue(matches({"a": "<absent>"}, {}))
        self.assertFalse(matches({"id": 7}, {"id": "7"}))
        self.assertFalse(matches([1], [1, 2]))
        self.assertFalse(matches({"a": 1}, {"a": True}))


class CasesTest(unittest.IsolatedAsyncioTestCase):
    async def test_the_shared_protocol_cases_pass(self) -> None:
        daemon = Daemon(CASES["settings"])
        await daemon.launch()
        try:
            self.assertGreaterEqual(len(CASES["cases"]), 10)
            for case in CASES["cases"]:
                with self.subTest(case["name"]):
                    await self.run_case(daemon, case)
        finally:
            await asyncio.to_thread(daemon.cleanup)

    async def run_case(self, daemon: Daemon, case: dict[str, Any]) -> None:
        client = await daemon.client(reconnect=False)
        frames: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        client.tap(frames.put_nowait)
        try:
            for raw_step in case["steps"]:
                step = substitute(raw_step, daemon.cwd)
                if "send" in step:
                    client.send_raw(step["send"])
                elif "expect" in step:
                    for expected in step["expect"]:
                        frame = await asyncio.wait_for(frames.get(), 20)
                        self.assertTrue(matches(expected, frame), f"expected {expected}, got {frame}")
                elif "expect_unordered" in step:
                    left = list(step["expect_unordered"])
                    while left:
                        frame = await asyncio.wait_for(frames.get(), 20)
                        found = [i for i, expected in enumerate(left) if matches(expected, frame)]
                        self.assertTrue(found, f"got {frame}, expected one of {left}")
                        left.pop(found[0])
                else:
                    self.fail(f"a step that neither sends nor expects: {step}")
        finally:
            await client.close()


if __name__ == "__main__":
    unittest.main()
