// Runs tests/interop/fakemodel.py (the scripted Anthropic API on 127.0.0.1) for a test.

import { spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const fakemodel = resolve(dirname(fileURLToPath(import.meta.url)), "../../../tests/interop/fakemodel.py");

/** A running fake model: `url`, the requests it logged, `stop()`. */
export async function startFakeModel(dir, turns) {
  const script = join(dir, "model-script.json");
  const log = join(dir, "model-requests.jsonl");
  const portFile = join(dir, "model-port");
  writeFileSync(script, JSON.stringify({ turns }));
  const child = spawn("python3", [fakemodel, "--api", "anthropic", "--script", script, "--log", log, "--port-file", portFile, "--max-seconds", "300"], {
    stdio: "ignore",
  });
  const deadline = Date.now() + 20_000;
  while (!existsSync(portFile) || readFileSync(portFile, "utf8").trim() === "") {
    if (Date.now() > deadline || child.exitCode !== null) {
      child.kill();
      throw new Error("the fake model server did not start");
    }
    await new Promise((done) => setTimeout(done, 20));
  }
  return {
    url: `http://127.0.0.1:${readFileSync(portFile, "utf8").trim()}`,
    requests: () =>
      existsSync(log)
        ? readFileSync(log, "utf8")
            .split("\n")
            .filter((line) => line.trim())
            .map((line) => JSON.parse(line))
        : [],
    stop: () => child.kill(),
  };
}

/** Claude Code's environment for a run against the fake model, with nothing else reached. */
export function claudeEnv(home, modelUrl) {
  return {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: home,
    ANTHROPIC_API_KEY: "fake-key",
    ANTHROPIC_BASE_URL: modelUrl,
    DISABLE_AUTOUPDATER: "1",
    DISABLE_TELEMETRY: "1",
    DISABLE_ERROR_REPORTING: "1",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
  };
}
