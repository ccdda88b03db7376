#!/usr/bin/env python3
# A persistent hookd worker ("mode": "persistent"). hookd starts it once and writes each
# event's payload to its stdin as one line of JSON; it answers every line with one line of
# JSON on stdout, the same JSON a one-shot hook would print. stderr is for logs.
import json
import sys

BLOCKED = ["rm -rf /", "git push --force"]
served = 0

for line in sys.stdin:
    served += 1
    event = json.loads(line)
    command = event.get("tool_input", {}).get("command", "")
    answer = {}  # no objection: the tool runs
    for pattern in BLOCKED:
        if pattern in command:
            reason = f"{pattern} is not allowed (request {served} of this worker)"
            answer = {"decision": "deny", "reason": reason}
            break
    # Log first: stderr that arrives after the answer belongs to no request.
    print(f"policy worker: answered request {served}", file=sys.stderr, flush=True)
    print(json.dumps(answer), flush=True)  # one line per event, flushed at once
