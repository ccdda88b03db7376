"""Round-trip latencies of the Python client against a real daemon, for docs/benchmarks.md:
a no-hook event, and one chunk of an AfterModel stream (builtin redact filter; no hook).

    HOOKD_BIN=target/release/hookd python3 clients/python/bench/bench.py [--count N]
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import sys
import time
from pathlib import Path
from typing import Awaitable, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.daemon import Daemon  # noqa: E402

TEXT = ("The quick brown fox jumps over the lazy dog; foo bar baz. " * 4)[:200]
CHUNK = {"candidates": [{"content": {"role": "model", "parts": [TEXT]}}]}


async def measure(
    count: int, step: Callable[[], Awaitable[object]], untimed: Callable[[], Awaitable[None]] | None = None
) -> tuple[float, float]:
    for _ in range(min(1000, count)):
        if untimed:
            await untimed()
        await step()
    times = []
    for _ in range(count):
        if untimed:
            await untimed()
        start = time.perf_counter_ns()
        await step()
        times.append((time.perf_counter_ns() - start) / 1000)
    times.sort()
    return times[count // 2], times[int(count * 0.99)]


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=5000)
    count = parser.parse_args().count
    plain = Daemon()
    filtered = Daemon({"hooks": {"AfterModel": [{"hooks": [{"name": "redact", "type": "builtin", "builtin": "redact"}]}]}})
    await plain.launch()
    await filtered.launch()
    rows = []
    try:
        client = await plain.client()
        event = {"event": "BeforeTool", "cwd": plain.cwd,
                 "input": {"tool_name": "run_shell_command", "tool_input": {"command": "ls"}}}
        rows.append(("no-hook event, 1 connection", await measure(count, lambda: client.event(event))))
        stream = await client.open_stream({"cwd": plain.cwd, "input": {"llm_request": {"model": "m"}}})
        rows.append(("stream chunk, no hook", await measure(count, lambda: stream.send(CHUNK))))
        await stream.close()
        await client.close()

        filter_client = await filtered.client()
        state = {"stream": await filter_client.open_stream({"cwd": filtered.cwd, "input": {"llm_request": {"model": "m"}}}), "sent": 0}

        async def next_response() -> None:
            # 100 chunks per model response, as hookd-bench does; the reopening is not timed.
            if state["sent"] == 100:
                await state["stream"].close()
                state["stream"] = await filter_client.open_stream({"cwd": filtered.cwd, "input": {"llm_request": {"model": "m"}}})
                state["sent"] = 0
            state["sent"] += 1

        rows.append(("stream chunk, builtin redact filter",
                     await measure(count, lambda: state["stream"].send(CHUNK), next_response)))
        await filter_client.close()
    finally:
        plain.cleanup()
        filtered.cleanup()
    print(f"Python client (CPython {platform.python_version()}), {count} sequential round trips per row")
    print("| row | p50 | p99 |")
    print("|---|---|---|")
    for name, (p50, p99) in rows:
        print(f"| {name} | {p50:.1f} µs | {p99:.1f} µs |")


if __name__ == "__main__":
    asyncio.run(main())
