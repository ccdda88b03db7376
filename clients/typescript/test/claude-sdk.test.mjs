// An agent built on the Claude Agent SDK, against a fake model on 127.0.0.1, runs the user's
// hookd hooks through the adapter: one denies a tool call, another adds context the model
// then sees.

import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import { answerForClaude, claudeInputToEvent, hookdHooks } from "../dist/claude.js";
import { Daemon, commandHook, settings } from "./daemon.mjs";
import { claudeEnv, startFakeModel } from "./fakemodel.mjs";

const table = JSON.parse(readFileSync(new URL("../../../tests/protocol/claude-adapter.json", import.meta.url), "utf8"));

test("SDK inputs and answers are translated like the relay's (tests/protocol/claude-adapter.json)", () => {
  for (const [input, expected] of table.inputs) {
    assert.deepEqual(claudeInputToEvent(input), expected, JSON.stringify(input));
  }
  for (const [input, merged, expected] of table.answers) {
    assert.deepEqual(answerForClaude(input, { final_output: merged, errors: [] }), expected, JSON.stringify([input, merged]));
  }
  assert.equal(answerForClaude({ hook_event_name: "SessionEnd" }, { final_output: null, errors: ["boom"] }).systemMessage, "hookd: boom");
});

/** Claude Code's binary: `$HOOKD_CLAUDE_CODE`, else the SDK's own platform package. */
function claudeCode() {
  return process.env.HOOKD_CLAUDE_CODE || undefined;
}

async function loadSdk() {
  try {
    return await import("@anthropic-ai/claude-agent-sdk");
  } catch {
    return null;
  }
}

test("an SDK agent is denied a tool call by a hookd hook and gets context from another", async (t) => {
  const sdk = await loadSdk();
  if (!sdk) {
    t.skip("@anthropic-ai/claude-agent-sdk is not installed (npm ci installs it)");
    return;
  }
  const daemon = await Daemon.start({});
  const guard = daemon.script("guard.sh", `input=$(cat)\ncase "$input" in *'rm -rf'*) echo '{"decision":"deny","reason":"hookd guard: rm -rf is not allowed"}' ;; esac`);
  daemon.writeSettings(
    settings([
      ["BeforeTool", "run_shell_command", [commandHook("guard", guard)]],
      ["AfterTool", "run_shell_command", [commandHook("context", `echo '{"hookSpecificOutput":{"additionalContext":"hookd-context-7f3a"}}'`)]],
    ]),
  );
  const home = join(daemon.dir, "agent-home");
  mkdirSync(home, { recursive: true });
  const model = await startFakeModel(daemon.dir, [{ tool: "rm -rf victim && touch marker-1" }, { tool: "touch marker-2" }, { text: ["all done"] }]);
  const hooks = await hookdHooks({ projectDir: daemon.project, connect: { socket: daemon.socket, env: null } });
  try {
    const messages = [];
    for await (const message of sdk.query({
      prompt: "clean up",
      options: {
        cwd: daemon.project,
        hooks,
        allowedTools: ["Bash"],
        settingSources: [],
        maxTurns: 6,
        env: claudeEnv(home, model.url),
        ...(claudeCode() ? { pathToClaudeCodeExecutable: claudeCode() } : {}),
      },
    })) {
      messages.push(message);
    }
    const result = messages.find((message) => message.type === "result");
    assert.ok(result, `a result message: ${JSON.stringify(messages.map((m) => m.type))}`);
    assert.equal(existsSync(join(daemon.project, "marker-1")), false, "the denied command did not run");
    assert.equal(existsSync(join(daemon.project, "marker-2")), true, "the allowed command ran");
    const sent = model.requests().map((request) => JSON.stringify(request.body ?? {}));
    assert.ok(
      sent.some((body) => body.includes("hookd guard: rm -rf is not allowed")),
      "the model was told why the call was denied",
    );
    assert.ok(
      sent.some((body) => body.includes("hookd-context-7f3a")),
      "the model got the context hook's text",
    );
  } finally {
    model.stop();
    await daemon.cleanup();
  }
});
