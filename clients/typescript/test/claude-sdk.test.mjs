// An agent built on the Claude Agent SDK, against a fake model on 127.0.0.1, runs the user's
// hookd hooks through the adapter: one denies a tool call, another adds context the model
// then sees.

import assert from "node:assert/strict";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import { answerForClaude, claudeInputToEvent, hookdHooks } from "../dist/claude.js";
import { Daemon, commandHook, settings } from "./daemon.mjs";
import { claudeEnv, startFakeModel } from "./fakemodel.mjs";

test("SDK inputs and answers are translated like the relay's", () => {
  const cases = [
    [
      { hook_event_name: "PreToolUse", session_id: "s", cwd: "/p", tool_name: "Bash", tool_input: { command: "ls", run_in_background: true } },
      { event: "BeforeTool", input: { claude_event: "PreToolUse", tool_name: "run_shell_command", claude_tool_name: "Bash", tool_input: { command: "ls", is_background: true }, claude_tool_input: { command: "ls", run_in_background: true } } },
    ],
    [
      { hook_event_name: "PostToolUse", tool_name: "mcp__gh__create_issue", tool_input: {}, tool_response: { ok: 1 } },
      { event: "AfterTool", input: { claude_event: "PostToolUse", tool_name: "mcp_gh_create_issue", claude_tool_name: "mcp__gh__create_issue", tool_input: {}, claude_tool_input: {}, tool_response: { llmContent: '{"ok":1}', returnDisplay: '{"ok":1}' }, claude_tool_response: { ok: 1 } } },
    ],
    [{ hook_event_name: "Stop", last_assistant_message: "bye", stop_hook_active: false }, { event: "AfterAgent", input: { claude_event: "Stop", prompt_response: "bye", stop_hook_active: false } }],
    [{ hook_event_name: "PermissionRequest" }, null],
  ];
  for (const [input, expected] of cases) {
    assert.deepEqual(claudeInputToEvent(input), expected);
  }
  const answers = [
    [{ hook_event_name: "PreToolUse", tool_name: "Bash" }, { decision: "deny", reason: "no" }, { hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: "deny", permissionDecisionReason: "no" } }],
    [{ hook_event_name: "PreToolUse", tool_name: "Bash" }, { hookSpecificOutput: { tool_input: { command: "ls", is_background: false } } }, { hookSpecificOutput: { hookEventName: "PreToolUse", updatedInput: { command: "ls", run_in_background: false } } }],
    [{ hook_event_name: "PostToolUse" }, { hookSpecificOutput: { additionalContext: "ctx" } }, { hookSpecificOutput: { hookEventName: "PostToolUse", additionalContext: "ctx" } }],
    [{ hook_event_name: "Stop" }, { decision: "block", reason: "go on" }, { decision: "block", reason: "go on" }],
    [{ hook_event_name: "UserPromptSubmit" }, { continue: false, stopReason: "halt", systemMessage: "m" }, { continue: false, stopReason: "halt", systemMessage: "m" }],
    [{ hook_event_name: "SessionEnd" }, null, {}],
  ];
  for (const [input, merged, expected] of answers) {
    assert.deepEqual(answerForClaude(input, { final_output: merged, errors: [] }), expected);
  }
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
