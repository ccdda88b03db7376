// An SDK agent's per-tool-call hook overhead: the same guard hook run by hookd through the
// adapter (one-shot, and as a persistent worker) and run by the SDK itself as a command hook
// (Claude Code's settings), against a session with no hook and one with an empty in-process
// callback (the SDK's own cost), on the fake model (tests/interop/fakemodel.py). Rounds
// interleave the variants; medians are reported.
//
//   node clients/typescript/bench/sdk-overhead.mjs [--calls 20] [--rounds 9]

import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import { query } from "@anthropic-ai/claude-agent-sdk";

import { hookdHooks } from "../dist/claude.js";
import { Daemon, commandHook, settings } from "../test/daemon.mjs";
import { claudeEnv, startFakeModel } from "../test/fakemodel.mjs";

function arg(name, fallback) {
  const index = process.argv.indexOf(name);
  return index > 0 ? Number(process.argv[index + 1]) : fallback;
}
const calls = arg("--calls", 10);
const rounds = arg("--rounds", 3);

const daemon = await Daemon.start({});
// Each run of the guard leaves a line, so every variant is checked to run it once per call.
const runs = join(daemon.dir, "guard-runs");
const guardBody = `input=$(cat)\necho >> '${runs}'\ncase "$input" in *'rm -rf'*) echo '{"decision":"deny","reason":"no"}' ;; esac`;
const guard = daemon.script("guard.sh", guardBody);
daemon.writeSettings(settings([["BeforeTool", "run_shell_command", [commandHook("guard", guard)]]]));
// The same guard as a persistent worker in a second project: one process for all calls.
const workerProject = join(daemon.dir, "worker-project");
mkdirSync(join(workerProject, ".gemini"), { recursive: true });
const workerScript = join(daemon.dir, "guard-worker.sh");
writeFileSync(
  workerScript,
  `while IFS= read -r line; do\n  echo >> '${runs}'\n  case "$line" in *'rm -rf'*) echo '{"decision":"deny","reason":"no"}' ;; *) echo '{}' ;; esac\ndone\n`,
);
writeFileSync(
  join(workerProject, ".gemini", "settings.json"),
  JSON.stringify({
    hooks: { BeforeTool: [{ matcher: "run_shell_command", hooks: [{ name: "guard", type: "command", mode: "persistent", command: `bash ${workerScript}` }] }] },
  }),
);
// The same script as Claude Code's own command hook, for the SDK to run.
const claudeProject = join(daemon.dir, "claude-project");
mkdirSync(join(claudeProject, ".claude"), { recursive: true });
writeFileSync(
  join(claudeProject, ".claude", "settings.json"),
  JSON.stringify({ hooks: { PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command: `bash ${guard}` }] }] } }),
);
const home = join(daemon.dir, "agent-home");
mkdirSync(home, { recursive: true });
const turns = [...Array.from({ length: calls }, (_, i) => ({ tool: `true ${i}` })), { text: ["done"] }];
const model = await startFakeModel(daemon.dir, turns);
const hooks = await hookdHooks({ projectDir: daemon.project, connect: { socket: daemon.socket, env: null } });
const workerHooks = await hookdHooks({ projectDir: workerProject, connect: { socket: daemon.socket, env: null } });
const claudeCode = process.env.HOOKD_CLAUDE_CODE ? { pathToClaudeCodeExecutable: process.env.HOOKD_CLAUDE_CODE } : {};

function guardRuns() {
  return existsSync(runs) ? readFileSync(runs, "utf8").length : 0;
}

async function session(variant) {
  const options = {
    allowedTools: ["Bash"],
    maxTurns: calls + 2,
    env: claudeEnv(home, model.url),
    ...claudeCode,
    ...(variant === "adapter" ? { cwd: daemon.project, hooks, settingSources: [] } : {}),
    ...(variant === "adapter, worker" ? { cwd: workerProject, hooks: workerHooks, settingSources: [] } : {}),
    ...(variant === "empty callback" ? { cwd: daemon.project, hooks: emptyCallback, settingSources: [] } : {}),
    ...(variant === "command" ? { cwd: claudeProject, settingSources: ["project"] } : {}),
    ...(variant === "none" ? { cwd: daemon.project, settingSources: [] } : {}),
  };
  const before = guardRuns();
  const start = performance.now();
  let toolResults = 0;
  for await (const message of query({ prompt: "go", options })) {
    if (message.type === "user") {
      toolResults += 1;
    }
  }
  const elapsed = performance.now() - start;
  const ran = guardRuns() - before;
  if (ran !== (variant === "none" || variant === "empty callback" ? 0 : calls)) {
    throw new Error(`${variant}: the guard ran ${ran} times for ${calls} calls`);
  }
  if (toolResults < calls) {
    throw new Error(`${variant}: ${toolResults} tool results, expected ${calls}`);
  }
  return elapsed;
}

// The SDK's own cost of an in-process hook callback, with nothing behind it.
const emptyCallback = { PreToolUse: [{ hooks: [async () => ({})] }] };
const times = { none: [], "empty callback": [], adapter: [], "adapter, worker": [], command: [] };
try {
  await session("none"); // warm-up
  for (let round = 0; round < rounds; round++) {
    for (const variant of Object.keys(times)) {
      times[variant].push(await session(variant));
    }
  }
} finally {
  model.stop();
  await daemon.cleanup();
}
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const base = median(times.none);
console.log(`SDK sessions of ${calls} tool calls, median of ${rounds} rounds`);
console.log("| variant | session | per tool call over no hook |");
console.log("|---|---|---|");
for (const [variant, values] of Object.entries(times)) {
  const m = median(values);
  console.log(`| ${variant} | ${(m / 1000).toFixed(2)} s | ${variant === "none" ? "" : `${((m - base) / calls).toFixed(1)} ms`} |`);
}
process.exit(0);
