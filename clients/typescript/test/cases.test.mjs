// The shared protocol cases (tests/protocol/cases.json at the repository's root), sent
// through this client's connection (its socket checks, framing and handshake).

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";

import { Daemon } from "./daemon.mjs";

const casesPath = join(dirname(fileURLToPath(import.meta.url)), "../../../tests/protocol/cases.json");
const file = JSON.parse(readFileSync(casesPath, "utf8"));

/** Whether `actual` matches `expected` as the file's `about` describes. */
export function matches(expected, actual, present = true) {
  if (expected === "<absent>") {
    return !present;
  }
  if (!present) {
    return false;
  }
  if (expected === "<any>") {
    return true;
  }
  if (typeof expected === "string" && expected.startsWith("<contains:")) {
    return typeof actual === "string" && actual.includes(expected.slice("<contains:".length, -1));
  }
  if (Array.isArray(expected)) {
    return Array.isArray(actual) && actual.length === expected.length && expected.every((item, i) => matches(item, actual[i]));
  }
  if (expected !== null && typeof expected === "object") {
    return (
      actual !== null &&
      typeof actual === "object" &&
      !Array.isArray(actual) &&
      Object.entries(expected).every(([key, value]) => matches(value, actual[key], Object.hasOwn(actual, key)))
    );
  }
  return expected === actual;
}

function substitute(value, cwd) {
  if (typeof value === "string") {
    return value.replaceAll("$CWD", cwd);
  }
  if (Array.isArray(value)) {
    return value.map((item) => substitute(item, cwd));
  }
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, substitute(item, cwd)]));
  }
  return value;
}

/** Frames received on one connection, read in order. */
class Frames {
  constructor(client) {
    this.queue = [];
    this.waiter = null;
    client.tap((message) => {
      this.queue.push(message);
      this.waiter?.();
    });
  }

  async next() {
    const deadline = Date.now() + 20_000;
    while (this.queue.length === 0) {
      assert.ok(Date.now() < deadline, "a frame within 20 s");
      await new Promise((resolve) => {
        this.waiter = resolve;
        setTimeout(resolve, 1000);
      });
    }
    return this.queue.shift();
  }
}

let daemon;
before(async () => {
  daemon = await Daemon.start(file.settings);
});
after(async () => {
  await daemon?.cleanup();
});

test("the matcher reads the file format", () => {
  assert.ok(matches({ a: 1 }, { a: 1, b: 2 }));
  assert.ok(!matches({ a: "<any>" }, {}));
  assert.ok(matches({ a: "<absent>" }, {}));
  assert.ok(!matches({ id: 7 }, { id: "7" }));
  assert.ok(!matches([1], [1, 2]));
});

for (const testCase of file.cases) {
  test(testCase.name, async () => {
    const client = await daemon.client({ reconnect: false });
    try {
      const frames = new Frames(client);
      for (const rawStep of testCase.steps) {
        const step = substitute(rawStep, daemon.project);
        if (step.send) {
          client.sendRaw(step.send);
        } else if (step.expect) {
          for (const expected of step.expect) {
            const frame = await frames.next();
            assert.ok(matches(expected, frame), `expected ${JSON.stringify(expected)}, got ${JSON.stringify(frame)}`);
          }
        } else if (step.expect_unordered) {
          const left = [...step.expect_unordered];
          while (left.length > 0) {
            const frame = await frames.next();
            const index = left.findIndex((expected) => matches(expected, frame));
            assert.ok(index >= 0, `got ${JSON.stringify(frame)}, expected one of ${JSON.stringify(left)}`);
            left.splice(index, 1);
          }
        } else {
          assert.fail(`a step that neither sends nor expects: ${JSON.stringify(step)}`);
        }
      }
    } finally {
      client.close();
    }
  });
}
