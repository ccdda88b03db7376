// Starts the real hookd binary on a socket in a temp directory, for the client's tests.

import { spawn } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { HookdClient } from "../dist/index.js";

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "../../..");

/** The daemon binary: `$HOOKD_BIN`, else the workspace's debug build. */
export function hookdBinary() {
  if (process.env.HOOKD_BIN) {
    return process.env.HOOKD_BIN;
  }
  const target = process.env.CARGO_TARGET_DIR || join(repo, "target");
  return join(target, "debug", "hookd");
}

/** Writes a file, creating its directories. */
export function write(path, contents) {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, contents);
}

/** Settings with one definition per `[event, matcher, hooks]`. */
export function settings(definitions) {
  const hooks = {};
  for (const [event, matcher, entries] of definitions) {
    const definition = matcher ? { matcher, hooks: entries } : { hooks: entries };
    (hooks[event] ??= []).push(definition);
  }
  return { hooks };
}

/** A command hook entry. */
export function commandHook(name, command) {
  return { name, type: "command", command };
}

/** A running daemon with its own home, project and socket. */
export class Daemon {
  static async start(projectSettings = {}, args = []) {
    const daemon = new Daemon(projectSettings, args);
    await daemon.launch();
    return daemon;
  }

  constructor(projectSettings, args = []) {
    this.args = args;
    this.dir = mkdtempSync(join(tmpdir(), "hookd-client-test-"));
    this.home = join(this.dir, "home");
    this.project = join(this.dir, "project");
    this.socket = join(this.dir, "run", "hookd.sock");
    mkdirSync(join(this.home, ".gemini"), { recursive: true });
    mkdirSync(join(this.project, ".gemini", "hooks"), { recursive: true });
    this.writeSettings(projectSettings);
    this.child = null;
  }

  /** Replaces the project's settings. */
  writeSettings(value) {
    write(join(this.project, ".gemini", "settings.json"), JSON.stringify(value, null, 2));
  }

  /** Writes an executable bash script into the project's hooks and returns its path. */
  script(name, body) {
    const path = join(this.project, ".gemini", "hooks", name);
    write(path, `#!/usr/bin/env bash\n${body}\n`);
    chmodSync(path, 0o755);
    return path;
  }

  /** Starts the daemon process and waits until it completes a handshake. */
  async launch() {
    const env = {
      HOME: this.home,
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      XDG_CONFIG_HOME: join(this.home, ".config"),
      XDG_STATE_HOME: join(this.home, ".local", "state"),
      GEMINI_CLI_SYSTEM_SETTINGS_PATH: join(this.dir, "etc", "settings.json"),
      GEMINI_CLI_SYSTEM_DEFAULTS_PATH: join(this.dir, "etc", "system-defaults.json"),
    };
    this.child = spawn(hookdBinary(), ["--socket", this.socket, "--kill-grace-ms", "500", ...this.args], {
      env,
      stdio: ["ignore", "ignore", "ignore"],
    });
    this.exited = new Promise((resolve) => this.child.once("exit", resolve));
    // Ready when a client completes the handshake (the client retries while the socket is
    // not there yet).
    const client = await HookdClient.connect({ socket: this.socket, env: null, connectTimeoutMs: 20_000 });
    await client.ping();
    client.close();
  }

  /** A connected client. */
  client(options = {}) {
    return HookdClient.connect({ socket: this.socket, env: null, ...options });
  }

  /** Stops the daemon (SIGTERM) and waits for it to exit. */
  async stop() {
    if (this.child && this.child.exitCode === null && this.child.signalCode === null) {
      this.child.kill("SIGTERM");
      await this.exited;
    }
    this.child = null;
  }

  /** Stops the daemon and removes its directory. */
  async cleanup() {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
