#!/usr/bin/env python3
"""A scripted stand-in for an OpenAI-compatible chat endpoint, to try the
agent offline and to test it (tests/clients/test_codeact.py).

    python3 examples/codeact/fake_model.py examples/codeact/demo.json
    # fake model listening on http://127.0.0.1:PORT/v1

POST /v1/chat/completions answers with the script's replies in turn, then
with "exit". Each step may list what the request's last user message must
contain ("expect": substrings; "expect_image": an image part); a request
that misses is still answered, and the miss is kept in `problems` (and
printed). Standard library only.
"""
from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def last_user(messages: list) -> tuple[str, list]:
    """The text and the image URLs of the last user message."""
    for m in reversed(messages):
        if m.get("role") == "user":
            content = m.get("content")
            if isinstance(content, str):
                return content, []
            text = "".join(p.get("text", "") for p in content if p.get("type") == "text")
            return text, [p["image_url"]["url"] for p in content if p.get("type") == "image_url"]
    return "", []


class FakeModel:
    def __init__(self, script: dict, api_key: str | None = None, port: int = 0):
        self.steps = list(script["replies"])
        self.model = script.get("model")
        self.api_key = api_key
        self.requests: list[dict] = []
        self.problems: list[str] = []
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
                    return self.reply(404, {"error": {"message": f"no route {self.path}"}})
                try:
                    body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                except ValueError:
                    return self.reply(400, {"error": {"message": "the body is not JSON"}})
                if fake.api_key and self.headers.get("Authorization") != f"Bearer {fake.api_key}":
                    return self.reply(401, {"error": {"message": "wrong API key"}})
                self.reply(200, fake.answer(body))

            def reply(self, status: int, obj: dict) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def answer(self, body: dict) -> dict:
        with self.lock:
            n = len(self.requests)
            self.requests.append(body)
            step = self.steps[n] if n < len(self.steps) else {"reply": "exit"}
            text, image_urls = last_user(body.get("messages") or [])
            if self.model and body.get("model") != self.model:
                self.problem(n, f"model is {body.get('model')!r}, not {self.model!r}")
            for want in step.get("expect", []):
                if want not in text:
                    self.problem(n, f"the last user message lacks {want!r}: {text[:2000]!r}")
            if step.get("expect_image") and not any(u.startswith("data:image/png;base64,") for u in image_urls):
                self.problem(n, "no PNG image part in the last user message")
        return {"id": f"fake-{n}", "object": "chat.completion", "created": int(time.time()),
                "model": body.get("model", "fake"),
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": step["reply"]}}],
                "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}}

    def problem(self, n: int, what: str) -> None:
        self.problems.append(f"request {n + 1}: {what}")
        print(f"fake model: request {n + 1}: {what}", file=sys.stderr, flush=True)

    def start(self) -> "FakeModel":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("script", help="a JSON file: {\"replies\": [{\"reply\", \"expect\", \"expect_image\"}, ...]}")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--api-key", help="answer only requests with this bearer key")
    args = ap.parse_args()
    with open(args.script) as f:
        fake = FakeModel(json.load(f), args.api_key, args.port)
    print(f"fake model listening on {fake.url}", flush=True)
    try:
        fake.httpd.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
