// Finding hookd's socket the way hookd and hookctl do, and checking it before anything is sent.

import { lstatSync } from "node:fs";
import { dirname } from "node:path";

/** Why a socket was not trusted. */
export class UntrustedSocketError extends Error {
  override name = "UntrustedSocketError";
}

/**
 * The socket path: `$HOOKD_SOCKET` when set and not empty, else
 * `$XDG_RUNTIME_DIR/hookd/hookd.sock` when that variable is an absolute path, else
 * `/tmp/hookd-<uid>/hookd.sock`.
 */
export function resolveSocketPath(env: NodeJS.ProcessEnv = process.env): string {
  const explicit = env.HOOKD_SOCKET;
  if (explicit) {
    return explicit;
  }
  const runtimeDir = env.XDG_RUNTIME_DIR;
  if (runtimeDir && runtimeDir.startsWith("/")) {
    return `${runtimeDir.replace(/\/+$/, "")}/hookd/hookd.sock`;
  }
  return `/tmp/hookd-${currentUid()}/hookd.sock`;
}

function currentUid(): number {
  return typeof process.getuid === "function" ? process.getuid() : 0;
}

/**
 * Checks the socket's directory and the socket itself without following symbolic links, as
 * docs/protocol.md asks before a client sends anything: the directory is the user's own and
 * writable by nobody else, and the socket is a socket owned by the user.
 *
 * The third check of the document, the listening process's user id (`SO_PEERCRED`), is not
 * available to Node.js without a native addon. The first two already keep another user out:
 * only the user can create a socket in a directory only the user can write to.
 */
export function checkSocketPath(path: string): void {
  const uid = currentUid();
  const dir = dirname(path) || ".";
  let dirStat;
  try {
    dirStat = lstatSync(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") {
      throw Object.assign(new Error(`no hookd socket directory at ${dir}`), { code: "ENOENT" });
    }
    throw new UntrustedSocketError(`cannot examine the socket's directory ${dir}: ${String(error)}`);
  }
  if (!dirStat.isDirectory()) {
    throw new UntrustedSocketError(`${dir} is not a directory (a symbolic link?)`);
  }
  if (dirStat.uid !== uid) {
    throw new UntrustedSocketError(`${dir} belongs to user ${dirStat.uid}, not to ${uid}`);
  }
  if ((dirStat.mode & 0o022) !== 0) {
    throw new UntrustedSocketError(`${dir} can be written by other users (mode ${(dirStat.mode & 0o777).toString(8)})`);
  }
  let socketStat;
  try {
    socketStat = lstatSync(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // A missing socket is not a trust problem: the daemon is not running.
    if (code === "ENOENT") {
      throw Object.assign(new Error(`no hookd socket at ${path}`), { code: "ENOENT" });
    }
    throw new UntrustedSocketError(`cannot examine ${path}: ${String(error)}`);
  }
  if (!socketStat.isSocket()) {
    throw new UntrustedSocketError(`${path} is not a socket`);
  }
  if (socketStat.uid !== uid) {
    throw new UntrustedSocketError(`${path} belongs to user ${socketStat.uid}, not to ${uid}`);
  }
}
