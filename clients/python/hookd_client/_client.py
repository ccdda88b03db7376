"""The asyncio client: one Unix-socket connection, requests multiplexed over it by id, and a
reconnect that carries pending requests over to the next daemon."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypedDict

from ._socket import NoDaemonError, check_peer, check_socket_path, resolve_socket_path

PROTOCOL_VERSION = 1
"""The protocol version this client speaks."""

DEFAULT_MAX_FRAME_BYTES = 64 * 1024 * 1024
"""The largest frame read before the daemon's ``hello`` says otherwise."""

_HELLO_FRAME_BYTES = 1024 * 1024

Message = dict[str, Any]
"""A protocol message (a JSON object)."""

_NON_FINAL = {"hook_result", "subscribed", "registry_changed", "stream_opened", "chunk_result"}


class HookdError(Exception):
    """An ``error`` answer from the daemon."""

    def __init__(self, code: str, message: str, request_id: Any = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.id = request_id


class ConnectionLost(ConnectionError):
    """The connection was lost and the request could not be carried over."""

    code = "connection_lost"


class EventResult(TypedDict, total=False):
    """The aggregate of an event's hooks; ``final_output`` is what the agent acts on."""

    success: bool
    final_output: dict[str, Any] | None
    all_outputs: list[Any]
    errors: list[str]
    total_duration_ms: float
    hooks: list[dict[str, Any]]
    generation: int
    skipped: bool


class ChunkResult(TypedDict, total=False):
    """One chunk's answer: ``content`` is the text to emit in place of the chunk's, when a
    hook or filter changed it."""

    seq: int
    content: str
    result: EventResult


def _error_of(message: Message) -> HookdError:
    return HookdError(str(message.get("code")), str(message.get("message", "")), message.get("id"))


def _result_of(message: Message) -> EventResult:
    result: EventResult = {
        "success": bool(message.get("success")),
        "final_output": message.get("final_output"),
        "all_outputs": message.get("all_outputs") or [],
        "errors": message.get("errors") or [],
        "total_duration_ms": float(message.get("total_duration_ms") or 0),
        "hooks": message.get("hooks") or [],
    }
    if isinstance(message.get("generation"), int):
        result["generation"] = message["generation"]
    return result


def encode_frame(message: Message) -> bytes:
    """One message as a frame: a 4-byte big-endian length, then the JSON body."""
    body = json.dumps(message, separators=(",", ":")).encode("utf-8")
    return struct.pack(">I", len(body)) + body


class _Connection:
    """One live connection."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, hello: Message):
        self.reader = reader
        self.writer = writer
        self.hello = hello
        self.max_frame_bytes = int(hello.get("max_frame_bytes") or DEFAULT_MAX_FRAME_BYTES)
        self.task: asyncio.Task[None] | None = None

    def write(self, message: Message) -> None:
        self.writer.write(encode_frame(message))

    async def read_frame(self, limit: int) -> Message | None:
        try:
            prefix = await self.reader.readexactly(4)
        except (asyncio.IncompleteReadError, ConnectionError):
            return None
        (length,) = struct.unpack(">I", prefix)
        if length > limit:
            raise ConnectionLost(f"the daemon sent a {length}-byte frame, over the limit {limit}")
        try:
            body = await self.reader.readexactly(length)
        except (asyncio.IncompleteReadError, ConnectionError):
            return None
        message = json.loads(body)
        if not isinstance(message, dict):
            raise ConnectionLost("the daemon sent a frame that is not a JSON object")
        return message


@dataclass
class _Pending:
    message: Message
    resend: bool
    on_message: Callable[[Message], None]
    on_lost: Callable[[BaseException], None]
    sent_on: _Connection | None = None


class Client:
    """A client of hookd. Create it with :meth:`connect`; any number of requests may be in
    flight at once, and each answer is routed to its request by id."""

    def __init__(
        self,
        socket_path: str | None = None,
        *,
        env: dict[str, str] | None = None,
        send_env: bool = True,
        client_name: str = "hookd-client-py/0.1.0",
        reconnect: bool = True,
        reconnect_timeout: float = 10.0,
        handshake_timeout: float = 5.0,
    ) -> None:
        self.socket_path = socket_path or resolve_socket_path()
        self._env = (dict(os.environ) if env is None else env) if send_env else None
        self._client_name = client_name
        self._reconnect = reconnect
        self._reconnect_timeout = reconnect_timeout
        self._handshake_timeout = handshake_timeout
        self._connection: _Connection | None = None
        self._connecting: asyncio.Task[_Connection] | None = None
        self._pending: dict[int, _Pending] = {}
        self._watches: dict[str, HookedEventsWatch] = {}
        self._taps: list[Callable[[Message], None]] = []
        self._next_id = 1
        self._closed = False

    @classmethod
    async def connect(
        cls, socket_path: str | None = None, *, connect_timeout: float = 0.0, **options: Any
    ) -> Client:
        """Connects and completes the handshake; waits up to ``connect_timeout`` seconds for a
        daemon that is not listening yet. ``options`` are those of the constructor."""
        client = cls(socket_path, **options)
        await client._ensure_connected(retry=connect_timeout > 0, timeout=connect_timeout)
        return client

    @property
    def server_hello(self) -> Message | None:
        """The daemon's ``hello`` on the current connection."""
        return self._connection.hello if self._connection else None

    async def close(self) -> None:
        """Closes the connection; pending requests fail."""
        self._closed = True
        connection, self._connection = self._connection, None
        if connection:
            connection.writer.close()
            if connection.task:
                connection.task.cancel()
        self._fail_all(ConnectionLost("the client was closed"))

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ---- requests ----------------------------------------------------------------------

    async def ping(self) -> None:
        """Sends ``ping`` and waits for ``pong``."""
        await self.call({"type": "ping"})

    async def status(self) -> Message:
        """The daemon's state."""
        return await self.call({"type": "status"})

    async def list(self, cwd: str) -> Message:
        """The hooks configured for a project."""
        return await self.call({"type": "list", "cwd": cwd})

    async def hooked_events(self, cwd: str) -> Message:
        """The events that have at least one enabled hook for a project."""
        return await self.call({"type": "hooked_events", "cwd": cwd})

    async def call(
        self, request: Message, on_message: Callable[[Message], None] | None = None
    ) -> Message:
        """Sends any request (an id is assigned) and returns its final answer; an ``error``
        answer raises :class:`HookdError`. ``on_message`` sees the non-final answers."""
        future: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        request_id = self._allocate_id()

        def handle(message: Message) -> None:
            if message.get("type") in _NON_FINAL:
                if on_message:
                    on_message(message)
                return
            self.finish(request_id)
            if future.done():
                return
            if message.get("type") == "error":
                future.set_exception(_error_of(message))
            else:
                future.set_result(message)

        self._start(_Pending({**request, "id": request_id}, True, handle, _failer(future)))
        return await future

    async def raw(
        self,
        message: Message,
        is_final: Callable[[Message], bool],
        on_message: Callable[[Message], None] | None = None,
    ) -> Message:
        """Sends a message as it is, with the id it carries, and returns the first answer
        with that id that ``is_final`` accepts (``on_message`` sees every one). For tests and
        tools that speak the protocol frame by frame; nothing is sent again on reconnect."""
        future: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        request_id = message["id"]

        def handle(answer: Message) -> None:
            if on_message:
                on_message(answer)
            if is_final(answer) and not future.done():
                self.finish(request_id)
                future.set_result(answer)

        self._start(_Pending(message, False, handle, _failer(future)))
        return await future

    def tap(self, listener: Callable[[Message], None]) -> Callable[[], None]:
        """Calls ``listener`` with every frame the daemon sends from now on, whatever request
        it answers; returns the function that removes it. With :meth:`send_raw`, for tests and
        tools that speak the protocol frame by frame."""
        self._taps.append(listener)
        return lambda: self._taps.remove(listener)

    def send_raw(self, message: Message) -> None:
        """Writes a message as it is on the current connection (no id is assigned, nothing
        waits for its answer: see :meth:`tap`)."""
        if self._connection is None:
            raise ConnectionLost("not connected to hookd")
        self._connection.write(message)

    async def event(
        self,
        request: Message,
        on_hook_result: Callable[[int, dict[str, Any]], None] | None = None,
    ) -> EventResult:
        """Fires an event (``request`` has ``event``, ``cwd`` and optionally ``input``,
        ``session_id``, ... as in docs/protocol.md) and returns the hooks' aggregate result.
        Cancelling the awaiting task cancels the event in the daemon."""
        future: asyncio.Future[EventResult] = asyncio.get_running_loop().create_future()
        request_id = self._allocate_id()

        def handle(message: Message) -> None:
            kind = message.get("type")
            if kind == "hook_result":
                if on_hook_result:
                    on_hook_result(int(message["index"]), message["hook"])
                return
            self.finish(request_id)
            if future.done():
                return
            if kind == "result":
                future.set_result(_result_of(message))
            elif kind == "error":
                future.set_exception(_error_of(message))

        message = {"type": "event", **request, "id": request_id, "stream_hooks": bool(on_hook_result)}
        self._start(_Pending(message, True, handle, _failer(future)))
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            if request_id in self._pending:
                asyncio.get_running_loop().create_task(self._cancel_quietly(request_id))
            raise

    async def fire(
        self,
        request: Message,
        on_hook_result: Callable[[int, dict[str, Any]], None] | None = None,
    ) -> EventResult:
        """Like :meth:`event`, but answered locally, without a round trip, when a
        :meth:`watch_hooked_events` watch of the project says no hook listens to the event.
        The result then has ``skipped``."""
        watch = self._watches.get(request.get("project_dir") or request["cwd"])
        if watch is not None and watch.ready and not watch.is_hooked(request["event"]):
            return {
                "success": True,
                "final_output": None,
                "all_outputs": [],
                "errors": [],
                "total_duration_ms": 0.0,
                "hooks": [],
                "generation": watch.generation,
                "skipped": True,
            }
        return await self.event(request, on_hook_result)

    async def cancel(self, target: Any) -> bool:
        """Cancels an in-flight event, stream or subscription; ``False`` when it was not."""
        try:
            await self.call({"type": "cancel", "target": target})
            return True
        except HookdError as error:
            if error.code == "unknown_id":
                return False
            raise

    async def _cancel_quietly(self, target: Any) -> None:
        try:
            await self.cancel(target)
        except (HookdError, ConnectionError):
            pass

    async def subscribe(
        self, cwd: str | None, on_change: Callable[[Message], None]
    ) -> Subscription:
        """Subscribes to registry changes (of one project, or of every loaded one);
        ``on_change`` gets each ``registry_changed`` frame. Renewed after a reconnect."""
        future: asyncio.Future[Subscription] = asyncio.get_running_loop().create_future()
        request_id = self._allocate_id()
        subscription = Subscription(self, request_id)

        def handle(message: Message) -> None:
            kind = message.get("type")
            if kind == "subscribed" and not future.done():
                future.set_result(subscription)
            elif kind == "registry_changed":
                on_change(message)
            elif kind == "error":
                self.finish(request_id)
                if not future.done():
                    future.set_exception(_error_of(message))

        message: Message = {"type": "subscribe", "id": request_id}
        if cwd is not None:
            message["cwd"] = cwd
        self._start(_Pending(message, True, handle, _failer(future)))
        return await future

    async def watch_hooked_events(self, cwd: str) -> HookedEventsWatch:
        """Keeps the list of a project's hooked events current (a ``hooked_events``
        subscription), so that :meth:`fire` answers events nobody listens to locally."""
        existing = self._watches.get(cwd)
        if existing is not None:
            await existing.wait_ready()
            return existing
        request_id = self._allocate_id()
        watch = HookedEventsWatch(self, request_id, cwd)
        self._watches[cwd] = watch

        def handle(message: Message) -> None:
            kind = message.get("type")
            if kind == "hooked_events":
                watch._update(message)
            elif kind == "error":
                self.finish(request_id)
                self._watches.pop(cwd, None)
                watch._fail(_error_of(message))

        def lost(error: BaseException) -> None:
            self._watches.pop(cwd, None)
            watch._fail(error)

        message = {"type": "hooked_events", "id": request_id, "cwd": cwd, "subscribe": True}
        self._start(_Pending(message, True, handle, lost))
        await watch.wait_ready()
        return watch

    async def open_stream(self, request: Message) -> Stream:
        """Opens an AfterModel stream (``request`` has ``cwd`` and optionally ``input``
        with the ``llm_request``, ``session_id``, ...): the plan is settled once, then chunks
        go one by one."""
        future: asyncio.Future[Stream] = asyncio.get_running_loop().create_future()
        request_id = self._allocate_id()
        stream = Stream(self, request_id)

        def handle(message: Message) -> None:
            kind = message.get("type")
            if kind == "stream_opened":
                stream.hooks = int(message.get("hooks", 0))
                stream.generation = int(message.get("generation", 0))
                stream.is_open = True
                if not future.done():
                    future.set_result(stream)
            elif kind == "error" and not stream.is_open:
                self.finish(request_id)
                if not future.done():
                    future.set_exception(_error_of(message))
            else:
                stream._handle(message)

        def lost(error: BaseException) -> None:
            if stream.is_open:
                stream._lost(error)
            elif not future.done():
                future.set_exception(error)

        message = {"type": "stream_open", "event": "AfterModel", **request, "id": request_id}
        self._start(_Pending(message, False, handle, lost))
        return await future

    # ---- plumbing ----------------------------------------------------------------------

    def _allocate_id(self) -> int:
        request_id = self._next_id
        self._next_id += 1
        return request_id

    def finish(self, request_id: Any) -> None:
        """Ends a request: its id is free again."""
        self._pending.pop(request_id, None)

    def _forget_watch(self, cwd: str, request_id: int) -> None:
        watch = self._watches.get(cwd)
        if watch is not None and watch.id == request_id:
            del self._watches[cwd]

    def _start(self, pending: _Pending) -> None:
        if self._closed:
            pending.on_lost(ConnectionLost("the client was closed"))
            return
        self._pending[pending.message["id"]] = pending
        connection = self._connection
        if connection is not None:
            pending.sent_on = connection
            connection.write(pending.message)
        elif self._reconnect:
            self._spawn_reconnect()
        else:
            self._pending.pop(pending.message["id"], None)
            pending.on_lost(ConnectionLost("not connected to hookd"))

    def _write_for(self, request_id: int, message: Message) -> _Connection | None:
        """Writes a frame of an in-flight request (a stream's chunk or close) on the
        connection the request went out on; ``None`` when that connection is gone."""
        pending = self._pending.get(request_id)
        connection = self._connection
        if pending is None or connection is None or pending.sent_on is not connection:
            return None
        connection.write(message)
        return connection

    def _fail_all(self, error: BaseException) -> None:
        lost = list(self._pending.values())
        self._pending.clear()
        for pending in lost:
            pending.on_lost(error)

    def _spawn_reconnect(self) -> None:
        if self._connecting is None:
            task = asyncio.get_running_loop().create_task(
                self._ensure_connected(retry=True, timeout=self._reconnect_timeout)
            )
            task.add_done_callback(lambda t: t.cancelled() or t.exception())

    async def _ensure_connected(self, *, retry: bool, timeout: float) -> _Connection:
        if self._connection is not None:
            return self._connection
        if self._connecting is None:
            self._connecting = asyncio.get_running_loop().create_task(
                self._connect_loop(retry, timeout)
            )
        connecting = self._connecting
        try:
            connection = await asyncio.shield(connecting)
        except BaseException as error:
            if self._connecting is connecting:
                self._connecting = None
                self._fail_all(error if isinstance(error, Exception) else ConnectionLost(str(error)))
            raise
        if self._connecting is connecting:
            self._connecting = None
            self._adopt(connection)
        return connection

    async def _connect_loop(self, retry: bool, timeout: float) -> _Connection:
        deadline = time.monotonic() + timeout
        delay = 0.01
        while True:
            try:
                return await self._open()
            except (NoDaemonError, ConnectionRefusedError, ConnectionResetError, BrokenPipeError,
                    FileNotFoundError, asyncio.TimeoutError) as error:
                if not retry or self._closed or time.monotonic() + delay >= deadline:
                    raise ConnectionLost(f"cannot reach hookd at {self.socket_path}: {error}") from error
                await asyncio.sleep(delay)
                delay = min(delay * 2, 0.25)

    async def _open(self) -> _Connection:
        check_socket_path(self.socket_path)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.setblocking(False)
            await asyncio.get_running_loop().sock_connect(sock, self.socket_path)
            check_peer(sock)
            reader, writer = await asyncio.open_unix_connection(sock=sock)
        except BaseException:
            sock.close()
            raise
        hello: Message = {"type": "hello", "protocol": PROTOCOL_VERSION, "client": self._client_name}
        if self._env is not None:
            hello["env"] = self._env
        connection = _Connection(reader, writer, {})
        connection.write(hello)
        try:
            answer = await asyncio.wait_for(
                connection.read_frame(_HELLO_FRAME_BYTES), self._handshake_timeout
            )
        except BaseException:
            writer.close()
            raise
        if answer is None:
            writer.close()
            raise ConnectionResetError("hookd closed the connection during the handshake")
        if answer.get("type") == "error":
            writer.close()
            raise _error_of(answer)
        if answer.get("type") != "hello" or answer.get("protocol") != PROTOCOL_VERSION:
            writer.close()
            raise HookdError("unsupported_version", f"unexpected handshake answer {answer}")
        return _Connection(reader, writer, answer)

    def _adopt(self, connection: _Connection) -> None:
        if self._closed:
            connection.writer.close()
            return
        self._connection = connection
        connection.task = asyncio.get_running_loop().create_task(self._read_loop(connection))
        for request_id, pending in list(self._pending.items()):
            if pending.sent_on is connection:
                continue
            if pending.sent_on is not None and not pending.resend:
                del self._pending[request_id]
                pending.on_lost(ConnectionLost("the connection to hookd was lost"))
                continue
            pending.sent_on = connection
            connection.write(pending.message)

    async def _read_loop(self, connection: _Connection) -> None:
        try:
            while True:
                message = await connection.read_frame(connection.max_frame_bytes)
                if message is None:
                    break
                self._dispatch(message)
        except (ConnectionLost, ValueError):
            pass
        finally:
            connection.writer.close()
            self._lost(connection)

    def _lost(self, connection: _Connection) -> None:
        if self._connection is not connection:
            return
        self._connection = None
        if self._closed:
            return
        if not self._reconnect:
            self._fail_all(ConnectionLost("the connection to hookd was lost"))
            return
        if self._pending:
            self._spawn_reconnect()

    def _dispatch(self, message: Message) -> None:
        for listener in list(self._taps):
            listener(message)
        request_id = message.get("id")
        if request_id is None or isinstance(request_id, bool):
            return
        pending = self._pending.get(request_id)
        if pending is None:
            return
        if (
            message.get("type") == "error"
            and message.get("code") == "shutting_down"
            and pending.resend
            and self._reconnect
        ):
            # Nothing of it ran: it goes to the next daemon once this connection closes.
            pending.sent_on = None
            return
        pending.on_message(message)


def _failer(future: asyncio.Future[Any]) -> Callable[[BaseException], None]:
    def fail(error: BaseException) -> None:
        if not future.done():
            future.set_exception(error)

    return fail


class Subscription:
    """A subscription to registry changes."""

    def __init__(self, client: Client, request_id: int) -> None:
        self._client = client
        self.id = request_id

    async def cancel(self) -> None:
        """Ends the subscription."""
        await self._client.cancel(self.id)
        self._client.finish(self.id)


class HookedEventsWatch:
    """The latest list of a project's hooked events, kept current by the daemon."""

    def __init__(self, client: Client, request_id: int, cwd: str) -> None:
        self._client = client
        self.id = request_id
        self.cwd = cwd
        self.events: set[str] = set()
        self.generation = 0
        self.ready = False
        self._ready = asyncio.get_running_loop().create_future()
        self._changed = asyncio.Event()

    def is_hooked(self, event: str) -> bool:
        """Whether any hook listens to ``event``."""
        return event in self.events

    async def wait_ready(self) -> None:
        """Waits for the first answer."""
        await asyncio.shield(self._ready)

    async def wait_changed(self) -> None:
        """Waits for the next update."""
        self._changed.clear()
        await self._changed.wait()

    async def close(self) -> None:
        """Stops watching."""
        self._client._forget_watch(self.cwd, self.id)
        await self._client.cancel(self.id)
        self._client.finish(self.id)

    def _update(self, answer: Message) -> None:
        self.events = set(answer.get("events") or [])
        self.generation = int(answer.get("generation") or 0)
        self.ready = True
        if not self._ready.done():
            self._ready.set_result(None)
        self._changed.set()

    def _fail(self, error: BaseException) -> None:
        if not self._ready.done():
            self._ready.set_exception(error)
            # Read here so that a watch nobody waits for leaves no unretrieved exception.
            self._ready.exception()


@dataclass
class StreamEnd:
    """A stream's end: ``flush`` is the text the filters held back, to emit last."""

    chunks: int
    flush: str


@dataclass
class _Waiting:
    seq: int
    future: asyncio.Future[ChunkResult]


@dataclass
class Stream:
    """An open AfterModel stream."""

    _client: Client
    id: int
    hooks: int = 0
    generation: int = 0
    is_open: bool = False
    _next_seq: int = 0
    _waiting: list[_Waiting] = field(default_factory=list)
    _ending: asyncio.Future[StreamEnd] | None = None
    _failure: BaseException | None = None

    async def send(self, llm_response: Message) -> ChunkResult:
        """Sends one chunk (in the hook format or as a Gemini API chunk) and returns its
        result. Chunks may be sent from several tasks at once; results come in order."""
        future = self.send_nowait(llm_response)
        connection = self._client._connection
        if connection is not None:
            # Bounded: wait while the socket's buffer is full before the caller sends more.
            try:
                await connection.writer.drain()
            except ConnectionError:
                pass  # the read loop notices the loss and fails the chunk
        return await future

    def send_nowait(self, llm_response: Message) -> asyncio.Future[ChunkResult]:
        """Sends one chunk and returns a future of its result, for pipelining."""
        if self._failure is not None:
            raise self._failure
        if self._ending is not None:
            raise RuntimeError("the stream is closing")
        seq = self._next_seq
        self._next_seq += 1
        future: asyncio.Future[ChunkResult] = asyncio.get_running_loop().create_future()
        self._waiting.append(_Waiting(seq, future))
        message = {"type": "chunk", "id": self.id, "seq": seq, "llm_response": llm_response}
        if self._client._write_for(self.id, message) is None:
            self._lost(ConnectionLost("the stream's connection was lost"))
        return future

    async def close(self) -> StreamEnd:
        """Ends the stream once its chunks are answered."""
        return await self._end({"type": "stream_close", "id": self.id})

    async def cancel(self) -> StreamEnd:
        """Cancels the stream: running hooks stop, the chunks sent are answered."""
        ending = asyncio.ensure_future(self._end(None))
        await self._client._cancel_quietly(self.id)
        return await ending

    async def _end(self, message: Message | None) -> StreamEnd:
        if self._failure is not None:
            raise self._failure
        if self._ending is not None:
            raise RuntimeError("the stream is already closing")
        self._ending = asyncio.get_running_loop().create_future()
        ending = self._ending
        if message is not None and self._client._write_for(self.id, message) is None:
            self._lost(ConnectionLost("the stream's connection was lost"))
        return await ending

    def _handle(self, message: Message) -> None:
        kind = message.get("type")
        if kind == "chunk_result":
            for index, waiting in enumerate(self._waiting):
                if waiting.seq == message.get("seq"):
                    del self._waiting[index]
                    result: ChunkResult = {
                        "seq": waiting.seq,
                        "result": _result_of(message.get("result") or {}),
                    }
                    if isinstance(message.get("content"), str):
                        result["content"] = message["content"]
                    if not waiting.future.done():
                        waiting.future.set_result(result)
                    break
        elif kind == "stream_closed":
            self._client.finish(self.id)
            for waiting in self._waiting:
                if not waiting.future.done():
                    waiting.future.set_exception(
                        ConnectionLost("the stream closed before this chunk was answered")
                    )
            self._waiting.clear()
            end = StreamEnd(int(message.get("chunks", 0)), str(message.get("flush", "")))
            if self._ending is None:
                self._ending = asyncio.get_running_loop().create_future()
                self._failure = RuntimeError("the daemon ended the stream")
            if not self._ending.done():
                self._ending.set_result(end)
        elif kind == "error" and self._waiting:
            waiting = self._waiting.pop(0)
            if not waiting.future.done():
                waiting.future.set_exception(_error_of(message))

    def _lost(self, error: BaseException) -> None:
        self._failure = error
        self._client.finish(self.id)
        for waiting in self._waiting:
            if not waiting.future.done():
                waiting.future.set_exception(error)
        self._waiting.clear()
        if self._ending is not None and not self._ending.done():
            self._ending.set_exception(error)
