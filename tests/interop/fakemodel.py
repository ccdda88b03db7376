#!/usr/bin/env python3
"""A scripted model server on 127.0.0.1 for the interop suite.

It speaks just enough of two APIs for the real CLIs to run a headless session:

- Gemini (`--api gemini`): `POST /v1beta/models/{model}:streamGenerateContent?alt=sse`
  (server-sent events), `:generateContent`, `:countTokens`, `:embedContent`, `GET .../models`.
- Anthropic (`--api anthropic`): `POST /v1/messages` (streamed with `"stream": true`, else one
  JSON message) and `POST /v1/messages/count_tokens`.
- OpenAI Responses (`--api openai`), as Codex CLI calls it: `POST /v1/responses`, always
  streamed (`response.created`, `response.output_item.added`/`done`, `response.completed`);
  a tool turn is a call of Codex's shell tool `exec_command` with `{"cmd": ...}`.

What the model answers comes from a script, a JSON file:

    {"turns": [
        {"tool": "rm -rf victim"},                  # a shell tool call with this command
        {"text": ["first half ", "second half"]}    # final text, one stream chunk per item
    ]}

A turn may also have `"touch": PATH`: the file is created just before the answer is sent, a
cue the suite uses to act at that moment (restart the daemon while the CLI gets a tool call).
And `"wait_for": PATH`: the answer waits (at most a minute) until that file exists, so the suite
can finish an action before the session goes on.

The turn answered is chosen by the request itself, not by a counter: the number of model
(assistant) messages already in the request's history. A retried request, or a second CLI
run against the same server, gets the same answer. Requests that carry no tools (the CLIs'
side calls: titles, routing, next-speaker checks) get a short plain text answer and do not
consume a turn. Past the last turn the answer is the text "done".

Every request is appended to the log file as one JSON line: method, path, headers that are not
secrets, the parsed body, the turn answered. A scenario reads it to see what the CLI sent the
model after a hook ran (the tool result, a deny reason, a toolConfig).

The server writes its port to `--port-file` once it listens, and exits on SIGTERM or after
`--max-seconds`, so a forgotten server never outlives its run.
"""

import argparse
import json
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MAX_BODY = 64 * 1024 * 1024


def gemini_turn_index(body):
    """How many model turns the request's history already has."""
    contents = body.get("contents") or []
    return sum(1 for c in contents if isinstance(c, dict) and c.get("role") == "model")


def anthropic_turn_index(body):
    messages = body.get("messages") or []
    return sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant")


def openai_turn_index(body):
    """How many answers of the model (tool calls, assistant messages) the input already has."""
    items = body.get("input") or []
    return sum(
        1
        for i in items
        if isinstance(i, dict)
        and (i.get("type") == "function_call" or (i.get("type") == "message" and i.get("role") == "assistant"))
    )


def openai_events(turn, index):
    """The server-sent events of one Responses API answer."""
    rid = "resp_%d" % index
    if "tool" in turn:
        item = {
            "type": "function_call",
            "id": "fc_%d" % index,
            "call_id": "call_%d" % index,
            "name": "exec_command",
            # "tool_args": more arguments of Codex's shell tool (`sandbox_permissions`, ...).
            "arguments": json.dumps(dict({"cmd": turn["tool"]}, **(turn.get("tool_args") or {}))),
            "status": "completed",
        }
    else:
        text = "".join(turn.get("text") or ["done"])
        item = {
            "type": "message",
            "id": "msg_%d" % index,
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 15,
    }
    return [
        {"type": "response.created", "response": {"id": rid}},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": {"id": rid, "usage": usage}},
    ]


def gemini_has_tools(body):
    tools = body.get("tools") or (body.get("config") or {}).get("tools") or []
    return any(t.get("functionDeclarations") for t in tools if isinstance(t, dict))


def fill_schema(schema):
    """A small value that satisfies a JSON schema (the CLIs' side calls ask for JSON)."""
    if not isinstance(schema, dict):
        return "ok"
    enum = schema.get("enum")
    if enum:
        return "user" if "user" in enum else enum[0]
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        props = schema.get("properties") or {}
        return {name: fill_schema(sub) for name, sub in props.items()}
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return 10
    if kind == "boolean":
        return False
    return "simple"


def gemini_side_text(body):
    config = body.get("generationConfig") or {}
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    if schema is not None or config.get("responseMimeType") == "application/json":
        return json.dumps(fill_schema(schema or {}))
    return "ok"


class Script:
    def __init__(self, path):
        with open(path, encoding="utf-8") as f:
            self.turns = json.load(f).get("turns", [])
        self.shell_tool = {"gemini": "run_shell_command", "anthropic": "Bash"}

    def turn(self, index):
        if index < len(self.turns):
            return self.turns[index]
        return {"text": ["done"]}


def gemini_chunk(parts, finish=None):
    candidate = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    chunk = {"candidates": [candidate], "modelVersion": "fake-model"}
    if finish:
        chunk["usageMetadata"] = {
            "promptTokenCount": 10,
            "candidatesTokenCount": 5,
            "totalTokenCount": 15,
        }
    return chunk


def gemini_chunks(turn, index):
    if "tool" in turn:
        call = {
            "name": "run_shell_command",
            "args": {"command": turn["tool"]},
            "id": "call-%d" % index,
        }
        return [gemini_chunk([{"functionCall": call}], "STOP")]
    texts = turn.get("text") or ["done"]
    chunks = [gemini_chunk([{"text": t}]) for t in texts[:-1]]
    chunks.append(gemini_chunk([{"text": texts[-1]}], "STOP"))
    return chunks


def anthropic_shell_tool(body):
    """The name of the shell tool the request offers: Claude Code's `Bash`, Copilot CLI's `bash`."""
    names = [t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)]
    for name in ("Bash", "bash"):
        if name in names:
            return name
    return "Bash"


def anthropic_events(turn, index, model, tool_name="Bash"):
    """The SSE events of one streamed message, and the equivalent whole message."""
    msg_id = "msg_fake_%d" % index
    events = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": msg_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 10, "output_tokens": 1},
                },
            },
        )
    ]
    if "call" in turn:
        # Any tool by name: {"call": {"name": "view", "input": {"path": "..."}}}.
        tool_name = turn["call"]["name"]
        turn = dict(turn, tool=None)
    if "tool" in turn:
        tool_id = "toolu_fake_%d" % index
        tool_input = (turn.get("call") or {}).get("input") or {
            "command": turn["tool"],
            "description": "scripted command",
        }
        events.append(
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "tool_use", "id": tool_id, "name": tool_name, "input": {}},
                },
            )
        )
        events.append(
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": json.dumps(tool_input)},
                },
            )
        )
        stop = "tool_use"
        content = [{"type": "tool_use", "id": tool_id, "name": tool_name, "input": tool_input}]
    else:
        texts = turn.get("text") or ["done"]
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            )
        )
        for t in texts:
            events.append(
                (
                    "content_block_delta",
                    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}},
                )
            )
        stop = "end_turn"
        content = [{"type": "text", "text": "".join(texts)}]
    events.append(("content_block_stop", {"type": "content_block_stop", "index": 0}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 5},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    whole = {
        "id": msg_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }
    return events, whole


def touch(turn):
    """A turn may name a file to create as it is answered: a cue for the suite; and a file to
    wait for before it is answered (at most a minute), which the suite creates when it is done."""
    waited = turn.get("wait_for")
    deadline = time.monotonic() + 60
    while waited and not os.path.exists(waited) and time.monotonic() < deadline:
        time.sleep(0.01)
    path = turn.get("touch")
    if path and not os.path.exists(path):
        open(path, "w").close()


SECRET_HEADERS = {"authorization", "x-api-key", "x-goog-api-key"}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fakemodel"

    def log_message(self, fmt, *args):  # quiet: the JSON log is the record
        pass

    def record(self, body, **extra):
        entry = {
            "time": time.time(),
            "method": self.command,
            "path": self.path,
            "headers": {
                k.lower(): v for k, v in self.headers.items() if k.lower() not in SECRET_HEADERS
            },
            "body": body,
        }
        entry.update(extra)
        line = json.dumps(entry) + "\n"
        with self.server.log_lock:
            with open(self.server.log_path, "a", encoding="utf-8") as f:
                f.write(line)

    def read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            return None
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw) if raw else {}
        except ValueError:
            return {"_unparsed": raw[:4096].decode("utf-8", "replace")}

    def send_json(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def start_sse(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def sse(self, data, event=None):
        out = ""
        if event:
            out += "event: %s\n" % event
        out += "data: %s\n\n" % json.dumps(data)
        self.wfile.write(out.encode())
        self.wfile.flush()
        if self.server.chunk_delay:
            time.sleep(self.server.chunk_delay)

    def do_GET(self):
        self.record(None)
        if self.server.api == "gemini" and "/models" in self.path:
            self.send_json(200, {"models": []})
        else:
            self.send_json(404, {"error": {"message": "not found", "code": 404}})

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self):
        body = self.read_body()
        if body is None:
            self.record(None, error="body too large")
            self.send_json(413, {"error": {"message": "too large"}})
            return
        if self.server.api == "gemini":
            self.gemini(body)
        elif self.server.api == "openai":
            self.openai(body)
        else:
            self.anthropic(body)

    def gemini(self, body):
        path = self.path.split("?")[0]
        if path.endswith(":countTokens"):
            self.record(body, kind="countTokens")
            self.send_json(200, {"totalTokens": 10})
            return
        if path.endswith(":embedContent") or path.endswith(":batchEmbedContents"):
            self.record(body, kind="embed")
            self.send_json(200, {"embeddings": [{"values": [0.0] * 8}]})
            return
        stream = path.endswith(":streamGenerateContent")
        if not (stream or path.endswith(":generateContent")):
            self.record(body, kind="unknown")
            self.send_json(404, {"error": {"message": "not found", "code": 404}})
            return
        if not gemini_has_tools(body):
            # A side call: routing, next-speaker or loop checks, titles. Plain JSON-ish text.
            self.record(body, kind="side", stream=stream)
            chunks = [gemini_chunk([{"text": gemini_side_text(body)}], "STOP")]
        else:
            index = gemini_turn_index(body)
            turn = self.server.script.turn(index)
            self.record(body, kind="turn", turn=index, stream=stream)
            touch(turn)
            chunks = gemini_chunks(turn, index)
        if stream:
            self.start_sse()
            for chunk in chunks:
                self.sse(chunk)
        else:
            merged = chunks[-1]
            text = "".join(
                p.get("text", "") for c in chunks for p in c["candidates"][0]["content"]["parts"]
            )
            if text and "text" in merged["candidates"][0]["content"]["parts"][0]:
                merged["candidates"][0]["content"]["parts"] = [{"text": text}]
            self.send_json(200, merged)

    def openai(self, body):
        path = self.path.split("?")[0]
        if not path.endswith("/responses"):
            self.record(body, kind="unknown")
            self.send_json(404, {"error": {"message": "not found"}})
            return
        index = openai_turn_index(body)
        turn = self.server.script.turn(index)
        self.record(body, kind="turn", turn=index, stream=True)
        touch(turn)
        self.start_sse()
        for event in openai_events(turn, index):
            self.sse(event, event=event["type"])

    def anthropic(self, body):
        path = self.path.split("?")[0]
        if path.endswith("/count_tokens"):
            self.record(body, kind="countTokens")
            self.send_json(200, {"input_tokens": 10})
            return
        if not path.endswith("/v1/messages"):
            self.record(body, kind="unknown")
            self.send_json(404, {"type": "error", "error": {"type": "not_found_error", "message": "not found"}})
            return
        model = body.get("model") or "claude-fake"
        stream = bool(body.get("stream"))
        if not body.get("tools"):
            self.record(body, kind="side", stream=stream)
            turn, index = {"text": ["ok"]}, 0
        else:
            index = anthropic_turn_index(body)
            turn = self.server.script.turn(index)
            self.record(body, kind="turn", turn=index, stream=stream)
            touch(turn)
            if "fail" in turn:
                # A refused model call: {"fail": 400} (not retried by the CLIs).
                self.send_json(
                    turn["fail"],
                    {"type": "error", "error": {"type": "invalid_request_error", "message": "scripted failure"}},
                )
                return
        events, whole = anthropic_events(turn, index, model, anthropic_shell_tool(body))
        if not stream:
            self.send_json(200, whole)
            return
        self.start_sse()
        for name, data in events:
            self.sse(data, event=name)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--api", choices=["gemini", "anthropic", "openai"], required=True)
    parser.add_argument("--script", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--max-seconds", type=float, default=900)
    parser.add_argument("--chunk-delay", type=float, default=0.0)
    args = parser.parse_args()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.api = args.api
    server.script = Script(args.script)
    server.log_path = args.log
    server.log_lock = threading.Lock()
    server.chunk_delay = args.chunk_delay
    tmp = args.port_file + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(str(server.server_address[1]))
    os.replace(tmp, args.port_file)

    def stop(*_):
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    timer = threading.Timer(args.max_seconds, stop)
    timer.daemon = True
    timer.start()
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
