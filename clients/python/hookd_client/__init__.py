"""hookd's Python client: an asyncio :class:`Client`, a blocking :class:`SyncClient`, and
(in :mod:`hookd_client.claude_agent_sdk`) hooks for the Claude Agent SDK.

See docs/clients.md and docs/protocol.md.
"""

from ._client import (
    DEFAULT_MAX_FRAME_BYTES,
    PROTOCOL_VERSION,
    ChunkResult,
    Client,
    ConnectionLost,
    EventResult,
    HookdError,
    HookedEventsWatch,
    Message,
    Stream,
    StreamEnd,
    Subscription,
    encode_frame,
)
from ._socket import NoDaemonError, UntrustedSocketError, check_peer, check_socket_path, resolve_socket_path
from .sync import SyncClient, SyncStream

EVENTS = (
    "BeforeTool",
    "AfterTool",
    "BeforeAgent",
    "Notification",
    "AfterAgent",
    "SessionStart",
    "SessionEnd",
    "PreCompress",
    "BeforeModel",
    "AfterModel",
    "BeforeToolSelection",
)
"""The events hookd knows, in the order of the protocol's event table."""

__all__ = [
    "DEFAULT_MAX_FRAME_BYTES",
    "EVENTS",
    "PROTOCOL_VERSION",
    "ChunkResult",
    "Client",
    "ConnectionLost",
    "EventResult",
    "HookdError",
    "HookedEventsWatch",
    "Message",
    "NoDaemonError",
    "Stream",
    "StreamEnd",
    "Subscription",
    "SyncClient",
    "SyncStream",
    "UntrustedSocketError",
    "check_peer",
    "check_socket_path",
    "encode_frame",
    "resolve_socket_path",
]
