// Round-trip latencies of the TypeScript client against a real daemon, for docs/benchmarks.md:
// a no-hook event, and one chunk of an AfterModel stream (builtin redact filter; no hook).
//
//   HOOKD_BIN=target/release/hookd node clients/typescript/bench/bench.mjs [--count N]

import { Daemon } from "../test/daemon.mjs";

const countArg = process.argv.indexOf("--count");
const count = countArg > 0 ? Number(process.argv[countArg + 1]) : 5000;
const warmup = Math.min(1000, count);

/** p50 and p99 in microseconds of `count` sequential runs of `step` (`untimed` runs first). */
async function measure(step, untimed = async () => {}) {
  for (let i = 0; i < warmup; i++) {
    await untimed();
    await step(i);
  }
  const times = new Float64Array(count);
  for (let i = 0; i < count; i++) {
    await untimed();
    const start = process.hrtime.bigint();
    await step(i);
    times[i] = Number(process.hrtime.bigint() - start) / 1000;
  }
  times.sort();
  return { p50: times[Math.floor(count * 0.5)], p99: times[Math.floor(count * 0.99)] };
}

// About 200 bytes of text per chunk, as hookd-bench's stream rows.
const text = "The quick brown fox jumps over the lazy dog; foo bar baz. ".repeat(4).slice(0, 200);
const chunk = { candidates: [{ content: { role: "model", parts: [text] } }] };

const filtered = await Daemon.start({
  hooks: { AfterModel: [{ hooks: [{ name: "redact", type: "builtin", builtin: "redact" }] }] },
});
const plain = await Daemon.start({});
const rows = [];
try {
  const client = await plain.client();
  const event = { event: "BeforeTool", cwd: plain.project, input: { tool_name: "run_shell_command", tool_input: { command: "ls" } } };
  rows.push(["no-hook event, 1 connection", await measure(() => client.event(event))]);
  const plainStream = await client.openStream({ cwd: plain.project, input: { llm_request: { model: "m" } } });
  rows.push(["stream chunk, no hook", await measure(() => plainStream.send(chunk))]);
  await plainStream.close();
  client.close();

  const filterClient = await filtered.client();
  let stream = await filterClient.openStream({ cwd: filtered.project, input: { llm_request: { model: "m" } } });
  let sent = 0;
  rows.push([
    "stream chunk, builtin redact filter",
    await measure(
      () => stream.send(chunk),
      async () => {
        // 100 chunks per model response, as hookd-bench does; the reopening is not timed.
        if (sent === 100) {
          await stream.close();
          stream = await filterClient.openStream({ cwd: filtered.project, input: { llm_request: { model: "m" } } });
          sent = 0;
        }
        sent += 1;
      },
    ),
  ]);
  filterClient.close();
} finally {
  await plain.cleanup();
  await filtered.cleanup();
}
console.log(`TypeScript client (node ${process.version}), ${count} sequential round trips per row`);
console.log("| row | p50 | p99 |");
console.log("|---|---|---|");
for (const [name, { p50, p99 }] of rows) {
  console.log(`| ${name} | ${p50.toFixed(1)} µs | ${p99.toFixed(1)} µs |`);
}
