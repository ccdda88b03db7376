#!/usr/bin/env node
// A persistent hookd worker ("mode": "persistent"). hookd starts it once and writes each
// event's payload to its stdin as one line of JSON; it answers every line with one line of
// JSON on stdout, the same JSON a one-shot hook would print. stderr is for logs.
const readline = require("node:readline");

const BLOCKED = ["rm -rf /", "git push --force"];
let served = 0;

readline.createInterface({ input: process.stdin }).on("line", (line) => {
  served += 1;
  const event = JSON.parse(line);
  const command = (event.tool_input && event.tool_input.command) || "";
  const pattern = BLOCKED.find((blocked) => command.includes(blocked));
  const answer = pattern
    ? { decision: "deny", reason: `${pattern} is not allowed (request ${served} of this worker)` }
    : {}; // no objection: the tool runs
  // Log first: stderr that arrives after the answer belongs to no request.
  process.stderr.write(`policy worker: answered request ${served}\n`);
  process.stdout.write(JSON.stringify(answer) + "\n"); // one line per event
});
