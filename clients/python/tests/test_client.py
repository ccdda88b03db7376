"""The Python client against the real daemon: handshake, multiplexed requests, events,
cancel, streams, subscriptions, hooked_events skipping, a daemon restart mid-request, and the
blocking wrapper."""

from __future__ import annotations

import asyncio
import os
import unittest

from hookd_client import (
    Client,
    ConnectionLost,
    HookdError,
    SyncClient,
    UntrustedSocketError,
    check_socket_path,
    resolve_socket_path,
)

from .daemon import Daemon, command_hook, settings

GUARD = """input=$(cat)
case "$input" in
  *'rm -rf'*) echo '{"decision":"deny","reason":"rm -rf is not allowed"}' ;;
  *) echo '{}' ;;
esac"""

UPPER = """python3 -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps({"content": d["content"].upper()}))'"""


class SocketTest(unittest.TestCase):
    def test_resolution_follows_hookctl(self) -> None:
        uid = os.getuid()
        cases = [
            ({"HOOKD_SOCKET": "/x/s.sock", "XDG_RUNTIME_DIR": "/run/user/1"}, "/x/s.sock"),
            ({"HOOKD_SOCKET": "", "XDG_RUNTIME_DIR": "/run/user/1"}, "/run/user/1/hookd/hookd.sock"),
            ({"XDG_RUNTIME_DIR": "relative/dir"}, f"/tmp/hookd-{uid}/hookd.sock"),
            ({}, f"/tmp/hookd-{uid}/hookd.sock"),
        ]
        for env, expected in cases:
            self.assertEqual(resolve_socket_path(env), expected, env)

    def test_a_directory_others_can_write_to_is_refused(self) -> None:
        with self.assertRaises(UntrustedSocketError):
            check_socket_path("/tmp/hookd.sock")


class ClientTest(unittest.IsolatedAsyncioTestCase):
    async def asyncSetUp(self) -> None:
        self.daemon = Daemon()
        guard = self.daemon.script("guard.sh", GUARD)
        upper = self.daemon.script("upper.sh", UPPER)
        self.daemon.write_settings(
            settings(
                ("BeforeTool", "run_shell_command", [command_hook("guard", guard)]),
                ("BeforeTool", "slow_tool", [command_hook("slow", "sleep 30")]),
                ("BeforeTool", "nap_tool", [command_hook("nap", "sleep 0.3")]),
                ("AfterModel", None, [command_hook("upper", upper)]),
            )
        )
        await self.daemon.launch()
        self.client = await self.daemon.client()

    async def asyncTearDown(self) -> None:
        await self.client.close()
        await asyncio.to_thread(self.daemon.cleanup)

    async def test_hello_ping_status_list(self) -> None:
        hello = self.client.server_hello
        assert hello is not None
        self.assertEqual(hello["protocol"], 1)
        await self.client.ping()
        status = await self.client.status()
        self.assertEqual(status["pid"], hello["pid"])
        listed = await self.client.list(self.daemon.cwd)
        self.assertEqual([hook["name"] for hook in listed["hooks"]], ["guard", "slow", "nap", "upper"])

    async def test_an_event_is_denied_with_per_hook_results(self) -> None:
        seen: list[tuple[int, str]] = []
        result = await self.client.event(
            {"event": "BeforeTool", "cwd": self.daemon.cwd,
             "input": {"tool_name": "run_shell_command", "tool_input": {"command": "rm -rf /"}}},
            on_hook_result=lambda index, hook: seen.append((index, hook["name"])),
        )
        assert result["final_output"] is not None
        self.assertEqual(result["final_output"]["decision"], "deny")
        self.assertEqual(result["final_output"]["reason"], "rm -rf is not allowed")
        self.assertEqual(seen, [(0, "guard")])

    async def test_a_ping_overtakes_a_slow_event(self) -> None:
        order: list[str] = []

        async def slow() -> None:
            await self.client.event({"event": "BeforeTool", "cwd": self.daemon.cwd, "input": {"tool_name": "nap_tool"}})
            order.append("event")

        task = asyncio.create_task(slow())
        await asyncio.sleep(0)
        await self.client.ping()
        order.append("ping")
        await task
        self.assertEqual(order, ["ping", "event"])

    async def test_a_cancelled_task_cancels_its_event(self) -> None:
        task = asyncio.create_task(
            self.client.event({"event": "BeforeTool", "cwd": self.daemon.cwd, "input": {"tool_name": "slow_tool"}})
        )
        await asyncio.sleep(0)
        await self.client.ping()
        task.cancel()
        with self.assertRaises(asyncio.CancelledError):
            await task
        # The daemon stopped the hook: its status shows no hook running soon after.
        for _ in range(200):
            if (await self.client.status())["hooks_running"] == 0:
                break
            await asyncio.sleep(0.05)
        self.assertEqual((await self.client.status())["hooks_running"], 0)
        self.assertFalse(await self.client.cancel(987654))

    async def test_a_stream_answers_each_chunk_in_order_in_both_part_forms(self) -> None:
        stream = await self.client.open_stream({"cwd": self.daemon.cwd, "input": {"llm_request": {"model": "m"}}})
        self.assertEqual(stream.hooks, 1)
        first = stream.send_nowait({"candidates": [{"content": {"role": "model", "parts": ["hello "]}}]})
        second = stream.send_nowait(
            {"candidates": [{"content": {"role": "model", "parts": [{"text": "api "}, {"text": "parts"}]}}]}
        )
        results = await asyncio.gather(first, second)
        self.assertEqual([(r["seq"], r.get("content")) for r in results], [(0, "HELLO "), (1, "API PARTS")])
        end = await stream.close()
        self.assertEqual((end.chunks, end.flush), (2, ""))

    async def test_errors_carry_the_daemon_code(self) -> None:
        with self.assertRaises(HookdError) as caught:
            await self.client.event({"event": "NoSuchEvent", "cwd": self.daemon.cwd})
        self.assertEqual(caught.exception.code, "unknown_event")
        with self.assertRaises(HookdError) as caught:
            await self.client.open_stream({"cwd": self.daemon.cwd, "event": "BeforeTool"})
        self.assertEqual(caught.exception.code, "unsupported_event")


class WatchTest(unittest.IsolatedAsyncioTestCase):
    async def test_a_watch_skips_unhooked_events_and_follows_changes(self) -> None:
        daemon = Daemon(settings(("BeforeTool", None, [command_hook("t", "true")])))
        await daemon.launch()
        client = await daemon.client()
        try:
            changes: list[dict] = []
            subscription = await client.subscribe(daemon.cwd, changes.append)
            watch = await client.watch_hooked_events(daemon.cwd)
            self.assertEqual(watch.events, {"BeforeTool"})
            skipped = await client.fire({"event": "SessionEnd", "cwd": daemon.cwd, "input": {"reason": "exit"}})
            self.assertTrue(skipped.get("skipped"))
            ran = await client.fire({"event": "BeforeTool", "cwd": daemon.cwd, "input": {"tool_name": "x"}})
            self.assertNotIn("skipped", ran)
            self.assertEqual(len(ran["hooks"]), 1)

            daemon.write_settings(
                settings(
                    ("BeforeTool", None, [command_hook("t", "true")]),
                    ("SessionEnd", None, [command_hook("bye", "true")]),
                )
            )
            async with asyncio.timeout(30):
                while not watch.is_hooked("SessionEnd"):
                    await watch.wait_changed()
            now = await client.fire({"event": "SessionEnd", "cwd": daemon.cwd, "input": {"reason": "exit"}})
            self.assertEqual(now["hooks"][0]["name"], "bye")
            self.assertTrue(any(change["hooks"] == 2 for change in changes), changes)
            await subscription.cancel()
            await watch.close()
        finally:
            await client.close()
            await asyncio.to_thread(daemon.cleanup)


class ReconnectTest(unittest.IsolatedAsyncioTestCase):
    async def test_requests_survive_a_daemon_restart(self) -> None:
        daemon = Daemon(settings(("BeforeTool", "nap_tool", [command_hook("nap", "sleep 0.3")])))
        await daemon.launch()
        client = await daemon.client(reconnect_timeout=20.0)
        nap = {"event": "BeforeTool", "cwd": daemon.cwd, "input": {"tool_name": "nap_tool"}}
        try:
            inflight = asyncio.create_task(client.event(nap))
            await asyncio.sleep(0)
            await client.ping()
            await asyncio.to_thread(daemon.stop)
            during = asyncio.create_task(client.event(nap))
            ping = asyncio.create_task(client.ping())
            await asyncio.sleep(0)
            await daemon.launch()
            first, second, _ = await asyncio.gather(inflight, during, ping)
            self.assertEqual(first["hooks"][0]["name"], "nap")
            self.assertTrue(second["hooks"][0]["success"])
            assert daemon.process is not None
            self.assertEqual((await client.status())["pid"], daemon.process.pid)
        finally:
            await client.close()
            await asyncio.to_thread(daemon.cleanup)

    async def test_without_reconnect_a_lost_connection_fails_what_is_pending(self) -> None:
        daemon = Daemon(settings(("BeforeTool", None, [command_hook("slow", "sleep 30")])), ["--shutdown-grace-ms", "200"])
        await daemon.launch()
        client = await daemon.client(reconnect=False)
        try:
            pending = asyncio.create_task(client.event({"event": "BeforeTool", "cwd": daemon.cwd, "input": {"tool_name": "x"}}))
            await asyncio.sleep(0)
            await client.ping()
            stopping = asyncio.create_task(asyncio.to_thread(daemon.stop))
            result = await pending
            self.assertEqual(result["hooks"][0]["outcome"]["kind"], "cancelled")
            await stopping
            with self.assertRaises(ConnectionLost):
                await client.ping()
        finally:
            await client.close()
            await asyncio.to_thread(daemon.cleanup)


class SyncTest(unittest.IsolatedAsyncioTestCase):
    async def test_the_blocking_wrapper(self) -> None:
        daemon = Daemon(settings(("BeforeTool", None, [command_hook("deny", "echo '{\"decision\":\"deny\",\"reason\":\"no\"}'")])))
        await daemon.launch()
        try:
            def blocking() -> tuple[dict, dict, str]:
                with SyncClient(daemon.socket, send_env=False, timeout=30) as client:
                    client.ping()
                    result = client.event({"event": "BeforeTool", "cwd": daemon.cwd, "input": {"tool_name": "x"}})
                    client.watch_hooked_events(daemon.cwd)
                    skipped = client.fire({"event": "SessionEnd", "cwd": daemon.cwd})
                    stream = client.open_stream({"cwd": daemon.cwd})
                    chunk = stream.send({"text": "hi"})
                    stream.close()
                    return result, skipped, chunk.get("content", "hi")

            result, skipped, text = await asyncio.to_thread(blocking)
            assert result["final_output"] is not None
            self.assertEqual(result["final_output"]["decision"], "deny")
            self.assertTrue(skipped.get("skipped"))
            self.assertEqual(text, "hi")
        finally:
            await asyncio.to_thread(daemon.cleanup)


if __name__ == "__main__":
    unittest.main()
