// The TypeScript client against the real daemon: handshake, multiplexed requests, events,
// cancel, streams, subscriptions, hooked_events skipping, and a daemon restart mid-request.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { HookdClient, HookdError, UntrustedSocketError, checkSocketPath, resolveSocketPath } from "../dist/index.js";
import { Daemon, commandHook, settings } from "./daemon.mjs";

describe("socket resolution", () => {
  test("follows hookctl's order", () => {
    const uid = process.getuid();
    const cases = [
      [{ HOOKD_SOCKET: "/x/s.sock", XDG_RUNTIME_DIR: "/run/user/1" }, "/x/s.sock"],
      [{ HOOKD_SOCKET: "", XDG_RUNTIME_DIR: "/run/user/1" }, "/run/user/1/hookd/hookd.sock"],
      [{ XDG_RUNTIME_DIR: "relative/dir" }, `/tmp/hookd-${uid}/hookd.sock`],
      [{}, `/tmp/hookd-${uid}/hookd.sock`],
    ];
    for (const [env, expected] of cases) {
      assert.equal(resolveSocketPath(env), expected, JSON.stringify(env));
    }
  });

  test("refuses a directory others can write to", () => {
    assert.throws(() => checkSocketPath("/tmp/hookd.sock"), UntrustedSocketError);
  });
});

describe("against the daemon", () => {
  /** @type {Daemon} */
  let daemon;
  /** @type {HookdClient} */
  let client;

  before(async () => {
    daemon = await Daemon.start({});
    const guard = daemon.script(
      "guard.sh",
      `input=$(cat)
case "$input" in
  *'rm -rf'*) echo '{"decision":"deny","reason":"rm -rf is not allowed"}' ;;
  *) echo '{}' ;;
esac`,
    );
    const upper = daemon.script(
      "upper.sh",
      `python3 -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps({"content": d["content"].upper()}))'`,
    );
    daemon.writeSettings(
      settings([
        ["BeforeTool", "run_shell_command", [commandHook("guard", guard)]],
        ["BeforeTool", "slow_tool", [commandHook("slow", "sleep 30")]],
        ["BeforeTool", "nap_tool", [commandHook("nap", "sleep 0.3")]],
        ["AfterModel", null, [commandHook("upper", upper)]],
      ]),
    );
    client = await daemon.client();
  });

  after(async () => {
    client?.close();
    await daemon?.cleanup();
  });

  test("hello, ping, status and list", async () => {
    assert.equal(client.serverHello.protocol, 1);
    assert.match(client.serverHello.server, /^hookd\//);
    await client.ping();
    const status = await client.status();
    assert.equal(status.pid, client.serverHello.pid);
    const list = await client.list(daemon.project);
    assert.deepEqual(
      list.hooks.map((hook) => hook.name),
      ["guard", "slow", "nap", "upper"],
    );
  });

  test("an event is denied by a hook, with per-hook results", async () => {
    const seen = [];
    const result = await client.event(
      { event: "BeforeTool", cwd: daemon.project, input: { tool_name: "run_shell_command", tool_input: { command: "rm -rf /" } } },
      { onHookResult: (index, hook) => seen.push([index, hook.name]) },
    );
    assert.equal(result.final_output.decision, "deny");
    assert.equal(result.final_output.reason, "rm -rf is not allowed");
    assert.deepEqual(seen, [[0, "guard"]]);
    const allowed = await client.event({ event: "BeforeTool", cwd: daemon.project, input: { tool_name: "run_shell_command", tool_input: { command: "ls" } } });
    assert.notEqual(allowed.final_output?.decision, "deny");
  });

  test("requests are multiplexed: a ping overtakes a slow event", async () => {
    const order = [];
    const slow = client.event({ event: "BeforeTool", cwd: daemon.project, input: { tool_name: "nap_tool" } }).then(() => order.push("event"));
    await client.ping().then(() => order.push("ping"));
    await slow;
    assert.deepEqual(order, ["ping", "event"]);
  });

  test("an aborted event is cancelled and still answered", async () => {
    const controller = new AbortController();
    const pending = client.event({ event: "BeforeTool", cwd: daemon.project, input: { tool_name: "slow_tool" } }, { signal: controller.signal });
    // Cancelled once it runs: a listing in between makes sure the event was read first.
    await client.ping();
    controller.abort();
    const result = await pending;
    assert.equal(result.hooks[0].outcome.kind, "cancelled");
    assert.equal(await client.cancel(987654), false);
  });

  test("a stream answers each chunk in order, in both part forms", async () => {
    const stream = await client.openStream({ cwd: daemon.project, input: { llm_request: { model: "m" } } });
    assert.equal(stream.hooks, 1);
    const chunks = [
      { candidates: [{ content: { role: "model", parts: ["hello "] } }] },
      { candidates: [{ content: { role: "model", parts: [{ text: "api " }, { text: "parts" }] } }] },
    ];
    const results = await Promise.all(chunks.map((chunk) => stream.send(chunk)));
    assert.deepEqual(
      results.map((result) => [result.seq, result.content]),
      [
        [0, "HELLO "],
        [1, "API PARTS"],
      ],
    );
    const end = await stream.close();
    assert.deepEqual(end, { chunks: 2, flush: "" });
  });

  test("errors carry the daemon's code", async () => {
    await assert.rejects(client.event({ event: "NoSuchEvent", cwd: daemon.project }), (error) => error instanceof HookdError && error.code === "unknown_event");
    await assert.rejects(client.openStream({ cwd: daemon.project, event: "BeforeTool" }), (error) => error.code === "unsupported_event");
  });
});

describe("subscriptions and hooked events", () => {
  test("a watch skips unhooked events locally and follows settings changes", async () => {
    const daemon = await Daemon.start(settings([["BeforeTool", null, [commandHook("t", "true")]]]));
    const client = await daemon.client();
    try {
      const changes = [];
      const subscription = await client.subscribe(daemon.project, (change) => changes.push(change));
      const watch = await client.watchHookedEvents(daemon.project);
      assert.deepEqual([...watch.events], ["BeforeTool"]);
      const skipped = await client.fire({ event: "SessionEnd", cwd: daemon.project, input: { reason: "exit" } });
      assert.equal(skipped.skipped, true);
      assert.equal(skipped.final_output, null);
      const ran = await client.fire({ event: "BeforeTool", cwd: daemon.project, input: { tool_name: "x" } });
      assert.equal(ran.skipped, undefined);
      assert.equal(ran.hooks.length, 1);

      const updated = new Promise((resolve) => watch.onChange((w) => w.isHooked("SessionEnd") && resolve(w)));
      daemon.writeSettings(
        settings([
          ["BeforeTool", null, [commandHook("t", "true")]],
          ["SessionEnd", null, [commandHook("bye", "true")]],
        ]),
      );
      await updated;
      const now = await client.fire({ event: "SessionEnd", cwd: daemon.project, input: { reason: "exit" } });
      assert.equal(now.skipped, undefined);
      assert.equal(now.hooks[0].name, "bye");
      assert.ok(changes.some((change) => change.hooks === 2), JSON.stringify(changes));
      await subscription.cancel();
      await watch.close();
    } finally {
      client.close();
      await daemon.cleanup();
    }
  });
});

describe("reconnect", () => {
  test("requests survive a daemon restart", async () => {
    const daemon = await Daemon.start(settings([["BeforeTool", "nap_tool", [commandHook("nap", "sleep 0.3")]]]));
    const client = await daemon.client({ reconnectTimeoutMs: 20_000 });
    try {
      // In flight while the daemon stops: it finishes and is answered.
      const inflight = client.event({ event: "BeforeTool", cwd: daemon.project, input: { tool_name: "nap_tool" } });
      await client.ping();
      await daemon.stop();
      // Sent while no daemon listens: carried to the next one.
      const during = client.event({ event: "BeforeTool", cwd: daemon.project, input: { tool_name: "nap_tool" } });
      const ping = client.ping();
      await daemon.launch();
      const [first, second] = await Promise.all([inflight, during, ping]);
      assert.equal(first.hooks[0].name, "nap");
      assert.equal(second.hooks[0].name, "nap");
      assert.equal(second.hooks[0].success, true);
      // The client is connected to the new daemon.
      const status = await client.status();
      assert.equal(status.pid, daemon.child.pid);
    } finally {
      client.close();
      await daemon.cleanup();
    }
  });

  test("without reconnect, a lost connection fails what is pending", async () => {
    const daemon = await Daemon.start(settings([["BeforeTool", null, [commandHook("slow", "sleep 30")]]]), ["--shutdown-grace-ms", "200"]);
    const client = await daemon.client({ reconnect: false });
    try {
      const pending = client.event({ event: "BeforeTool", cwd: daemon.project, input: { tool_name: "x" } });
      await client.ping();
      // After the daemon's shutdown grace the hook is killed; the result still comes.
      const stopped = daemon.stop();
      const result = await pending;
      assert.equal(result.hooks[0].outcome.kind, "cancelled");
      await stopped;
      await assert.rejects(client.ping(), (error) => error.code === "connection_lost");
    } finally {
      client.close();
      await daemon.cleanup();
    }
  });
});

