"""Finding hookd's socket the way hookd and hookctl do, and checking it before anything is sent."""

from __future__ import annotations

import os
import socket
import stat
import struct
from collections.abc import Mapping


class UntrustedSocketError(Exception):
    """The socket, its directory or the process listening on it is not the user's own."""


class NoDaemonError(ConnectionError):
    """No daemon listens at the socket path (it or its directory does not exist)."""


def resolve_socket_path(env: Mapping[str, str] | None = None) -> str:
    """The socket path: ``$HOOKD_SOCKET`` when set and not empty, else
    ``$XDG_RUNTIME_DIR/hookd/hookd.sock`` when that variable is an absolute path, else
    ``/tmp/hookd-<uid>/hookd.sock``."""
    env = os.environ if env is None else env
    explicit = env.get("HOOKD_SOCKET", "")
    if explicit:
        return explicit
    runtime_dir = env.get("XDG_RUNTIME_DIR", "")
    if runtime_dir.startswith("/"):
        return os.path.join(runtime_dir, "hookd", "hookd.sock")
    return f"/tmp/hookd-{os.getuid()}/hookd.sock"


def check_socket_path(path: str) -> None:
    """Checks the socket's directory (the user's own, writable by nobody else) and the socket
    (a socket owned by the user) without following symbolic links."""
    uid = os.getuid()
    directory = os.path.dirname(path) or "."
    try:
        dir_stat = os.lstat(directory)
    except FileNotFoundError as error:
        raise NoDaemonError(f"no hookd socket directory at {directory}") from error
    except OSError as error:
        raise UntrustedSocketError(f"cannot examine {directory}: {error}") from error
    if not stat.S_ISDIR(dir_stat.st_mode):
        raise UntrustedSocketError(f"{directory} is not a directory (a symbolic link?)")
    if dir_stat.st_uid != uid:
        raise UntrustedSocketError(f"{directory} belongs to user {dir_stat.st_uid}, not to {uid}")
    if dir_stat.st_mode & 0o022:
        raise UntrustedSocketError(
            f"{directory} can be written by other users (mode {dir_stat.st_mode & 0o777:o})"
        )
    try:
        sock_stat = os.lstat(path)
    except FileNotFoundError as error:
        raise NoDaemonError(f"no hookd socket at {path}") from error
    except OSError as error:
        raise UntrustedSocketError(f"cannot examine {path}: {error}") from error
    if not stat.S_ISSOCK(sock_stat.st_mode):
        raise UntrustedSocketError(f"{path} is not a socket")
    if sock_stat.st_uid != uid:
        raise UntrustedSocketError(f"{path} belongs to user {sock_stat.st_uid}, not to {uid}")


def check_peer(sock: socket.socket) -> None:
    """Checks that the process listening on a connected socket runs as this user
    (``SO_PEERCRED``, on Linux)."""
    peercred = getattr(socket, "SO_PEERCRED", None)
    if peercred is None:
        return
    credentials = sock.getsockopt(socket.SOL_SOCKET, peercred, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", credentials)
    if uid != os.getuid():
        raise UntrustedSocketError(f"the process listening on the socket runs as user {uid}")
