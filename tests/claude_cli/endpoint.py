"""A scripted Anthropic Messages API server for driving the real Claude Code CLI offline.

Point the CLI at it with ANTHROPIC_BASE_URL=endpoint.url and any ANTHROPIC_API_KEY. It answers:

- POST /v1/messages: "main" requests (the ones whose `tools` include the Bash tool: the agent
  loop) from a script, one step per request; "side" requests (titles, summaries, anything
  without Bash) with a short canned text. Streamed (server-sent events, as the real API sends
  them) when the body says `"stream": true`, a plain JSON message otherwise.
- POST /v1/messages/count_tokens: a token estimate.
- anything else (HEAD / GET probes, other POSTs): 200 with `{}`.

A step is one of:
- a string: the final text answer (stop_reason end_turn);
- a dict block (`text(...)` or `tool_use(...)`) or a list of them: tool_use blocks end the
  message with stop_reason tool_use;
- a callable `step(request) -> step`: called with the `Request` being answered, to react to
  what the CLI sent (an id from the injected context, the result of the last tool call) or to
  act between two tool calls (flip a file). It may return another callable's value, not a
  callable.

Every request is recorded (`requests`, and appended to `record_path` as JSON lines when given),
so a test can assert what the CLI sent the model. When the script runs out, the endpoint answers
with a text saying so and notes it in `errors`, so the CLI ends its turn instead of waiting.

Stdlib only.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

Block = dict[str, Any]
Step = str | Block | list[Block] | Callable[["Request"], Any]

SIDE_TEXT = "Scripted session"
EXHAUSTED = "(the scripted endpoint has no step left for this request)"
MODEL = "claude-scripted-1"


def text(content: str) -> Block:
    return {"type": "text", "text": content}


_ids = itertools.count(1)
_id_lock = threading.Lock()


def _next_id() -> int:
    with _id_lock:
        return next(_ids)


def tool_use(name: str, input: dict[str, Any] | None = None, id: str | None = None, **kwargs: Any) -> Block:
    """A tool_use block: `tool_use("Bash", {"command": "make test"})` or `tool_use("Bash", command="make test")`."""
    return {
        "type": "tool_use",
        "id": id or f"toolu_{_next_id():04d}",
        "name": name,
        "input": {**(input or {}), **kwargs},
    }


def bash(command: str, description: str = "Run a command", **extra: Any) -> Block:
    return tool_use("Bash", {"command": command, "description": description, **extra})


@dataclass
class Request:
    """One request the CLI sent. `body` is the parsed JSON (None if it was not JSON)."""

    n: int
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    time: float
    kind: str = "other"  # "main", "side", "count_tokens" or "other"
    step: int | None = None  # index of the script step that answered a main request

    # What a test usually wants to look at -------------------------------------------------
    @property
    def messages(self) -> list[dict[str, Any]]:
        return (self.body or {}).get("messages") or [] if isinstance(self.body, dict) else []

    @property
    def tool_names(self) -> list[str]:
        tools = (self.body or {}).get("tools") if isinstance(self.body, dict) else None
        return [t.get("name", "") for t in tools or [] if isinstance(t, dict)]

    def tool(self, name: str) -> dict[str, Any] | None:
        for t in (self.body or {}).get("tools") or []:
            if isinstance(t, dict) and t.get("name") == name:
                return t
        return None

    @property
    def system_text(self) -> str:
        system = (self.body or {}).get("system") if isinstance(self.body, dict) else None
        return _flatten(system)

    def text(self) -> str:
        """All text the model is shown in the messages (text blocks, tool results), joined."""
        return "\n".join(_flatten(m.get("content")) for m in self.messages)

    def last_user_text(self) -> str:
        for m in reversed(self.messages):
            if m.get("role") == "user":
                return _flatten(m.get("content"))
        return ""

    def tool_results(self) -> list[dict[str, Any]]:
        """The tool_result blocks of the last user message, each {tool_use_id, content (str), is_error}."""
        for m in reversed(self.messages):
            if m.get("role") != "user":
                continue
            out = []
            for c in m.get("content") if isinstance(m.get("content"), list) else []:
                if isinstance(c, dict) and c.get("type") == "tool_result":
                    out.append(
                        {
                            "tool_use_id": c.get("tool_use_id"),
                            "content": _flatten(c.get("content")),
                            "is_error": bool(c.get("is_error")),
                        }
                    )
            return out
        return []

    def to_json(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "time": self.time,
            "method": self.method,
            "path": self.path,
            "kind": self.kind,
            "step": self.step,
            "headers": self.headers,
            "body": self.body,
        }


def _flatten(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_flatten(c) for c in content)
    if isinstance(content, dict):
        if content.get("type") == "text":
            return content.get("text", "")
        if content.get("type") == "tool_result":
            return _flatten(content.get("content"))
        if content.get("type") == "tool_use":
            return json.dumps(content.get("input"))
        if content.get("type") == "tool_reference":  # what ToolSearch returns: the tool is then in `tools`
            return str(content.get("tool_name", ""))
        if "text" in content:
            return str(content["text"])
        return ""
    return str(content)


def is_main(body: Any) -> bool:
    tools = body.get("tools") if isinstance(body, dict) else None
    return any(isinstance(t, dict) and t.get("name") == "Bash" for t in tools or [])


class ScriptedEndpoint:
    """`with ScriptedEndpoint([...]) as ep:` serves on 127.0.0.1 at `ep.url` until the block ends."""

    def __init__(
        self,
        script: list[Step] | None = None,
        side_text: str = SIDE_TEXT,
        record_path: str | Path | None = None,
        is_main: Callable[[Any], bool] = is_main,
    ) -> None:
        self.script: list[Step] = list(script or [])
        self.side_text = side_text
        self.record_path = Path(record_path) if record_path else None
        self.is_main = is_main
        self.requests: list[Request] = []
        self.errors: list[str] = []
        self._cursor = 0
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # Script ----------------------------------------------------------------------------------
    def push(self, *steps: Step) -> None:
        """Append steps (e.g. for the next prompt of the session)."""
        with self._lock:
            self.script.extend(steps)

    @property
    def remaining(self) -> int:
        return len(self.script) - self._cursor

    @property
    def main_requests(self) -> list[Request]:
        return [r for r in self.requests if r.kind == "main"]

    @property
    def side_requests(self) -> list[Request]:
        return [r for r in self.requests if r.kind == "side"]

    def _answer_main(self, req: Request) -> list[Block]:
        with self._lock:
            if self._cursor >= len(self.script):
                self.errors.append(f"request {req.n}: script exhausted")
                return [text(EXHAUSTED)]
            step, req.step = self.script[self._cursor], self._cursor
            self._cursor += 1
        try:
            while callable(step):
                step = step(req)
        except Exception as err:  # a broken script must end the turn, not hang the CLI
            self.errors.append(f"request {req.n}: step {req.step} raised {err!r}")
            return [text(f"(scripted step failed: {err!r})")]
        return _blocks(step)

    # HTTP ------------------------------------------------------------------------------------
    def _record(self, req: Request) -> None:
        with self._lock:
            self.requests.append(req)
            if self.record_path:
                with open(self.record_path, "a", encoding="utf-8") as f:
                    f.write(json.dumps(req.to_json(), ensure_ascii=False) + "\n")

    def start(self) -> ScriptedEndpoint:
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _read(self) -> Request:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                with endpoint._lock:
                    n = len(endpoint.requests) + 1
                return Request(
                    n, self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body, time.time()
                )

            def _json(self, status: int, obj: Any) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("request-id", f"req_scripted_{_next_id()}")
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            def do_HEAD(self) -> None:
                self._record(self._read())
                self._json(200, {})

            def do_GET(self) -> None:
                req = self._read()
                endpoint._record(req)
                self._json(200, {})

            def do_DELETE(self) -> None:
                self.do_GET()

            def do_PUT(self) -> None:
                self.do_GET()

            def _record(self, req: Request) -> None:
                endpoint._record(req)

            def do_POST(self) -> None:
                req = self._read()
                path = self.path.split("?", 1)[0].rstrip("/")
                if path.endswith("/v1/messages/count_tokens"):
                    req.kind = "count_tokens"
                    endpoint._record(req)
                    return self._json(200, {"input_tokens": max(1, len(json.dumps(req.body)) // 4)})
                if not path.endswith("/v1/messages") or not isinstance(req.body, dict):
                    endpoint._record(req)
                    return self._json(200, {})
                req.kind = "main" if endpoint.is_main(req.body) else "side"
                endpoint._record(req)
                blocks = endpoint._answer_main(req) if req.kind == "main" else [text(endpoint.side_text)]
                model = req.body.get("model") or MODEL
                if req.body.get("stream"):
                    self._stream(blocks, model)
                else:
                    self._json(200, _message(blocks, model, req.body))

            def _stream(self, blocks: list[Block], model: str) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.send_header("request-id", f"req_scripted_{_next_id()}")
                self.end_headers()
                self.close_connection = True
                try:
                    for event, data in sse_events(blocks, model):
                        self.wfile.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="scripted-endpoint", daemon=True)
        self._thread.start()
        return self

    @property
    def url(self) -> str:
        assert self._server, "not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def stop(self) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> ScriptedEndpoint:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def _blocks(step: Any) -> list[Block]:
    if isinstance(step, str):
        return [text(step)]
    if isinstance(step, dict):
        return [step]
    if isinstance(step, (list, tuple)) and step and all(isinstance(b, dict) for b in step):
        return [dict(b) for b in step]
    raise TypeError(f"a step must be a string, a block or a list of blocks, not {step!r}")


def _usage(output: int = 1) -> dict[str, int]:
    return {"input_tokens": 10, "output_tokens": output, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}


def _stop_reason(blocks: list[Block]) -> str:
    return "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"


def _message(blocks: list[Block], model: str, body: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": f"msg_scripted_{_next_id():06d}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": blocks,
        "stop_reason": _stop_reason(blocks),
        "stop_sequence": None,
        "usage": _usage(20),
    }


def sse_events(blocks: list[Block], model: str = MODEL) -> list[tuple[str, dict[str, Any]]]:
    """The server-sent events of one streamed message, as the Messages API sends them."""
    events: list[tuple[str, dict[str, Any]]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": f"msg_scripted_{_next_id():06d}",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": _usage(1),
                },
            },
        ),
        ("ping", {"type": "ping"}),
    ]

    def event(kind: str, **data: Any) -> None:
        events.append((kind, {"type": kind, **data}))

    for i, b in enumerate(blocks):
        if b["type"] == "text":
            event("content_block_start", index=i, content_block={"type": "text", "text": ""})
            # A few deltas, as a real stream splits text.
            for chunk in re.findall(r".{1,40}", b["text"], re.S) or [""]:
                event("content_block_delta", index=i, delta={"type": "text_delta", "text": chunk})
        elif b["type"] == "tool_use":
            event(
                "content_block_start",
                index=i,
                content_block={"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}},
            )
            raw = json.dumps(b.get("input") or {})
            for j in range(0, len(raw), 64):
                event(
                    "content_block_delta", index=i, delta={"type": "input_json_delta", "partial_json": raw[j : j + 64]}
                )
        else:
            raise ValueError(f"unsupported block type {b['type']!r}")
        event("content_block_stop", index=i)
    event(
        "message_delta", delta={"stop_reason": _stop_reason(blocks), "stop_sequence": None}, usage={"output_tokens": 20}
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events
