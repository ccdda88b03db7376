"""A small blocking wrapper around the asyncio :class:`~hookd_client.Client`, for code that
has no event loop: the client runs on a loop in a background thread, and each method waits
for its answer."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from ._client import ChunkResult, Client, EventResult, Message, Stream, StreamEnd

T = TypeVar("T")


class SyncClient:
    """A blocking hookd client. Use as a context manager, or call :meth:`close`."""

    def __init__(self, socket_path: str | None = None, *, timeout: float | None = None, **options: Any):
        """Connects; ``options`` are those of :meth:`Client.connect`. ``timeout`` bounds
        every call (seconds; ``None``: as long as the hooks take)."""
        self._timeout = timeout
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="hookd-client", daemon=True)
        self._thread.start()
        try:
            self._client: Client = self._run(Client.connect(socket_path, **options))
        except BaseException:
            self._stop_loop()
            raise

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(self._timeout)

    def ping(self) -> None:
        """Sends ``ping`` and waits for ``pong``."""
        self._run(self._client.ping())

    def status(self) -> Message:
        """The daemon's state."""
        return self._run(self._client.status())

    def list(self, cwd: str) -> Message:
        """The hooks configured for a project."""
        return self._run(self._client.list(cwd))

    def hooked_events(self, cwd: str) -> Message:
        """The events with at least one enabled hook for a project."""
        return self._run(self._client.hooked_events(cwd))

    def event(self, request: Message, on_hook_result: Callable[[int, dict[str, Any]], None] | None = None) -> EventResult:
        """Fires an event and returns the aggregate result (``on_hook_result`` is called on
        the client's thread)."""
        return self._run(self._client.event(request, on_hook_result))

    def watch_hooked_events(self, cwd: str) -> None:
        """Keeps the project's hooked events current so that :meth:`fire` skips the others."""
        self._run(self._client.watch_hooked_events(cwd))

    def fire(self, request: Message) -> EventResult:
        """Like :meth:`event`, answered locally when a watch says no hook listens."""
        return self._run(self._client.fire(request))

    def open_stream(self, request: Message) -> SyncStream:
        """Opens an AfterModel stream."""
        return SyncStream(self, self._run(self._client.open_stream(request)))

    def close(self) -> None:
        """Closes the connection and stops the client's thread."""
        try:
            self._run(self._client.close())
        finally:
            self._stop_loop()

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        if not self._thread.is_alive():
            self._loop.close()

    def __enter__(self) -> SyncClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SyncStream:
    """A blocking AfterModel stream."""

    def __init__(self, owner: SyncClient, stream: Stream) -> None:
        self._owner = owner
        self._stream = stream
        self.hooks = stream.hooks

    def send(self, llm_response: Message) -> ChunkResult:
        """Sends one chunk and returns its result."""
        return self._owner._run(self._stream.send(llm_response))

    def close(self) -> StreamEnd:
        """Ends the stream; returns the text the filters held back."""
        return self._owner._run(self._stream.close())
