"""A scripted model API for driving Gemini CLI, Codex CLI and opencode offline. It speaks:

- Gemini's `POST /v1beta/models/{model}:streamGenerateContent?alt=sse` (and `:generateContent`):
  Gemini CLI with GOOGLE_GEMINI_BASE_URL=url;
- OpenAI's `POST /v1/responses`, streamed: Codex CLI with a custom model provider at url/v1;
- OpenAI's `POST /v1/chat/completions`, streamed or not: opencode's openai-compatible provider.

A request that declares tools (the agent loop) gets the next script step; any other (Gemini's
router, opencode's title request) a short text, or for a Gemini request with a response schema a
JSON object built from it. A step is a list of actions (`call(...)`, `say(...)`) or a callable
`step(request) -> list of actions`, to look at what the CLI sent. A call names a tool by the end
of its declared name (`memory_read` finds `mcp_mnemo_memory_read`, Codex's `memory_read` in its
`mcp__mnemo` namespace, opencode's `mnemo_memory_read`). Every request is kept in `requests`.

Stdlib only.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Action = dict[str, Any]
SIDE_TEXT = "Scripted session"
EXHAUSTED = "(the scripted endpoint has no step left)"
_ids = itertools.count(1)


def call(tool: str, **args: Any) -> Action:
    return {"call": tool, "args": args}


def say(text: str) -> Action:
    return {"text": text}


@dataclass
class Request:
    proto: str  # "gemini", "responses" or "chat"
    path: str
    body: dict[str, Any]
    tools: list[str]
    main: bool

    def text(self) -> str:
        """Every string in the request (messages, tool results, declarations), one per line."""
        return "\n".join(_strings(self.body))


def _strings(node: Any):
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for v in node.values():
            yield from _strings(v)
    elif isinstance(node, list):
        for v in node:
            yield from _strings(v)


def _tools(proto: str, body: dict[str, Any]) -> tuple[list[str], dict[str, str]]:
    """(declared tool names, namespace of each Codex namespace tool)."""
    names, spaces = [], {}
    for tool in body.get("tools") or []:
        if proto == "gemini":
            names += [d.get("name", "") for d in tool.get("functionDeclarations") or []]
        elif proto == "chat":
            names.append((tool.get("function") or {}).get("name", ""))
        elif tool.get("type") == "namespace":
            for sub in tool.get("tools") or []:
                names.append(sub.get("name", ""))
                spaces[sub.get("name", "")] = tool.get("name", "")
        else:
            names.append(tool.get("name") or tool.get("type") or "")
    return names, spaces


def _resolve(pattern: str, names: list[str]) -> str:
    return next((n for n in names if n == pattern), None) or next((n for n in names if n.endswith(pattern)), pattern)


class AgentEndpoint:
    """`with AgentEndpoint([...]) as ep:` serves on 127.0.0.1 at `ep.url` until the block ends."""

    def __init__(self, script: list[list[Action] | Callable[[Request], list[Action]]]):
        self.script = list(script)
        self.requests: list[Request] = []
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def main_requests(self) -> list[Request]:
        return [r for r in self.requests if r.main]

    @property
    def remaining(self) -> int:
        return len(self.script)

    def push(self, *steps: Any) -> None:
        with self._lock:
            self.script.extend(steps)

    def __enter__(self) -> AgentEndpoint:
        endpoint = self

        class Handler(_Handler):
            ep = endpoint

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()

    def answer(self, req: Request) -> list[Action]:
        with self._lock:
            self.requests.append(req)
            step = self.script.pop(0) if req.main and self.script else None
        if not req.main:
            return [say(json.dumps(_side_json(req.body)))] if _wants_json(req.body) else [say(SIDE_TEXT)]
        if step is None:
            self.errors.append(f"request {len(self.requests)} had no step left")
            return [say(EXHAUSTED)]
        try:
            actions = step(req) if callable(step) else step
        except Exception as err:  # an assertion in a step: report it, end the turn
            self.errors.append(f"step failed: {err!r}")
            return [say(EXHAUSTED)]
        return [dict(a, call=_resolve(a["call"], req.tools)) if "call" in a else a for a in actions]


def _wants_json(body: dict[str, Any]) -> bool:
    config = body.get("generationConfig") or {}
    return config.get("responseMimeType") == "application/json" or bool(config.get("responseJsonSchema"))


def _side_json(body: dict[str, Any]) -> dict[str, Any]:
    """A plausible answer to Gemini CLI's structured side requests (its model router)."""
    config = body.get("generationConfig") or {}
    schema = config.get("responseJsonSchema") or config.get("responseSchema") or {}
    out: dict[str, Any] = {}
    for key, spec in (schema.get("properties") or {}).items():
        kind = str(spec.get("type", "string")).lower()
        out[key] = (
            spec["enum"][0]
            if spec.get("enum")
            else {"boolean": False, "number": 0, "integer": 0, "array": [], "object": {}}.get(kind, "ok")
        )
    return out


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    ep: AgentEndpoint

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if self.path.startswith("/npm/"):
            # An npm registry that has nothing: opencode's install of its plugin package fails at
            # once, where an unreachable registry costs a minute of retries.
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        models = {"object": "list", "data": [{"id": "mock-model", "object": "model", "owned_by": "mock"}]}
        self._json(models if self.path.startswith("/v1/models") else {})

    def do_POST(self) -> None:
        n = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(n) or b"{}")
        except ValueError:
            body = {}
        path = self.path
        proto = (
            "gemini"
            if ":generateContent" in path or ":streamGenerateContent" in path
            else "responses"
            if path.rstrip("/").endswith("/responses")
            else "chat"
            if "/chat/completions" in path
            else None
        )
        if proto is None:
            self._json({"totalTokens": 10} if ":countTokens" in path else {})
            return
        names, spaces = _tools(proto, body)
        actions = self.ep.answer(Request(proto, path, body, names, bool(names)))
        getattr(self, f"_{proto}")(body, actions, spaces)

    def _json(self, obj: Any) -> None:
        data = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _events(self, events: list[tuple[str | None, Any]]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        for name, data in events:
            head = f"event: {name}\n" if name else ""
            self.wfile.write(
                (head + "data: " + (data if isinstance(data, str) else json.dumps(data)) + "\n\n").encode()
            )
        self.wfile.flush()

    def _gemini(self, body: dict[str, Any], actions: list[Action], _spaces: dict[str, str]) -> None:
        parts = [{"functionCall": {"name": a["call"], "args": a["args"]}} if "call" in a else a for a in actions]
        answer = {
            "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
        }
        if ":streamGenerateContent" in self.path:
            self._events([(None, answer)])
        else:
            self._json(answer)

    def _responses(self, body: dict[str, Any], actions: list[Action], spaces: dict[str, str]) -> None:
        items = []
        for a in actions:
            n = next(_ids)
            if "call" in a:
                item = {"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n:05d}", "name": a["call"]}
                item |= {"arguments": json.dumps(a["args"]), "status": "completed"}
                if a["call"] in spaces:
                    item["namespace"] = spaces[a["call"]]
            else:
                content = [{"type": "output_text", "text": a["text"], "annotations": []}]
                item = {"type": "message", "id": f"msg_{n}", "role": "assistant", "status": "completed"}
                item["content"] = content
            items.append(item)
        usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5}
        usage |= {"output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}
        base = {"id": f"resp_{next(_ids)}", "object": "response", "model": body.get("model"), "output": []}
        events: list[tuple[str | None, Any]] = [("response.created", {"type": "response.created", "response": base})]
        for i, item in enumerate(items):
            events.append(("response.output_item.added", {"type": "response.output_item.added", "output_index": i}))
            events[-1][1]["item"] = {**item, "status": "in_progress"}
            events.append(("response.output_item.done", {"type": "response.output_item.done", "output_index": i}))
            events[-1][1]["item"] = item
        done = {**base, "status": "completed", "output": items, "usage": usage}
        events.append(("response.completed", {"type": "response.completed", "response": done}))
        self._events(events)

    def _chat(self, body: dict[str, Any], actions: list[Action], _spaces: dict[str, str]) -> None:
        text = "".join(a["text"] for a in actions if "text" in a)
        calls = [
            {"id": f"call_{next(_ids):05d}", "type": "function"}
            | {"function": {"name": a["call"], "arguments": json.dumps(a["args"])}}
            for a in actions
            if "call" in a
        ]
        finish = "tool_calls" if calls else "stop"
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        head = {"id": f"chatcmpl-{next(_ids)}", "object": "chat.completion.chunk", "model": body.get("model")}
        if not body.get("stream"):
            message = {"role": "assistant", "content": text or None, **({"tool_calls": calls} if calls else {})}
            choice = {"index": 0, "message": message, "finish_reason": finish}
            self._json({**head, "object": "chat.completion", "choices": [choice], "usage": usage})
            return
        deltas = [{"role": "assistant", "content": text}]
        deltas += [{"tool_calls": [{"index": i, **c}]} for i, c in enumerate(calls)]
        chunks: list[tuple[str | None, Any]] = [
            (None, {**head, "choices": [{"index": 0, "delta": d, "finish_reason": None}]}) for d in deltas
        ]
        chunks.append((None, {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}))
        chunks += [(None, {**head, "choices": [], "usage": usage}), (None, "[DONE]")]
        self._events(chunks)
