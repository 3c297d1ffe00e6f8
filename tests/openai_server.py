"""A real HTTP server on 127.0.0.1 that speaks the OpenAI chat-completions and embeddings
protocols, scripted per test (DESIGN.md §6: language models are never mocked in-process).

``server.chat`` is a queue of scripted answers consumed one per ``POST /chat/completions``;
when it is empty, ``server.chat_default`` answers. An answer is a ``str`` (the assistant's
content), a ``dict`` (JSON-encoded as the content), ``Status(code)`` (an HTTP error),
``Raw(body)`` (a 200 whose body is not the protocol), ``Hang(release)`` (hold the request until
``release`` is set) or a callable taking the request JSON and returning one of those.
Embeddings are deterministic vectors from ``server.embed_dimensions``; ``server.embed_status``
makes them fail. Every request is recorded in ``server.requests``.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import threading
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import yaml


@dataclass(frozen=True)
class Status:
    code: int
    body: str = '{"error": {"message": "scripted failure"}}'


@dataclass(frozen=True)
class Raw:
    body: str


@dataclass(frozen=True)
class Hang:
    release: threading.Event
    then: object = '{"score": 5}'
    max_wait_s: float = 60.0


@dataclass(frozen=True)
class Request:
    path: str
    body: dict
    headers: dict


def completion(content: str, model: str = "scripted-small") -> dict:
    return {"id": "chatcmpl-scripted", "object": "chat.completion", "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}


def scripted_vector(text: str, dimensions: int) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    return [(digest[i % len(digest)] - 127.5) / 127.5 for i in range(dimensions)]


class ScriptedOpenAIServer:
    def __init__(self):
        self.chat: deque = deque()
        self.chat_default: object = {"score": 5}
        self.embed_dimensions = 384
        self.embed_status: int | None = None
        self.requests: list[Request] = []
        self.hang_started = threading.Event()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def chat_requests(self) -> list[Request]:
        return [request for request in self.requests if request.path.endswith("/chat/completions")]

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()

    def _next_chat(self, body: dict):
        with self._lock:
            answer = self.chat.popleft() if self.chat else self.chat_default
        return answer(body) if callable(answer) else answer

    def _handler_class(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    server.requests.append(Request(self.path, body, dict(self.headers)))
                if self.path.endswith("/chat/completions"):
                    self._chat(body)
                elif self.path.endswith("/embeddings"):
                    self._embeddings(body)
                else:
                    self._send(404, '{"error": {"message": "no such route"}}')

            def _chat(self, body):
                answer = server._next_chat(body)
                if isinstance(answer, Hang):
                    server.hang_started.set()
                    answer.release.wait(answer.max_wait_s)
                    answer = answer.then
                if isinstance(answer, Status):
                    self._send(answer.code, answer.body)
                elif isinstance(answer, Raw):
                    self._send(200, answer.body)
                else:
                    content = answer if isinstance(answer, str) else json.dumps(answer)
                    self._send(200, json.dumps(completion(content, body.get("model", "scripted-small"))))

            def _embeddings(self, body):
                if server.embed_status is not None:
                    self._send(server.embed_status, '{"error": {"message": "scripted failure"}}')
                    return
                data = [{"object": "embedding", "index": i, "embedding": scripted_vector(text, server.embed_dimensions)}
                        for i, text in enumerate(body["input"])]
                self._send(200, json.dumps({"object": "list", "data": data, "model": body.get("model")}))

            def _send(self, status: int, text: str):
                payload = text.encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:
                    pass  # the client went away (killed worker, timeout)

        return Handler


def llm_catalog_dir(tmp_path, base_url: str):
    """A copy of ``fixtures/catalogs/llm_scoring`` whose ``scripted`` provider is ``base_url``."""
    source = Path(__file__).resolve().parent.parent / "fixtures" / "catalogs" / "llm_scoring"
    target = tmp_path / "llm_scoring"
    shutil.copytree(source, target)
    models_file = target / "conf" / "models.yaml"
    models = yaml.safe_load(models_file.read_text())
    models["providers"]["scripted"]["base_url"] = base_url
    models_file.write_text(yaml.safe_dump(models))
    return target
