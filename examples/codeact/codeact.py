#!/usr/bin/env python3
"""A CodeAct agent on execbox: the loop of the OpenDevin seed's CodeActAgent
(the model acts by writing code, we run it and answer with what it printed,
until it says exit), against any OpenAI-compatible chat endpoint.

    OPENAI_BASE_URL=http://127.0.0.1:11434/v1 MODEL=qwen2.5-coder \\
    EXECBOX_URL=http://127.0.0.1:8000 EXECBOX_TOKEN=... \\
        python3 examples/codeact/codeact.py "Plot sin(x) and save it as sin.png"

The model's ```python blocks run in one stateful Python session of a fresh
sandbox (figures come back as PNG files), its ```bash blocks (and the
seed's <execute>...</execute>) through exec. A reply that is `exit`, or
holds `<exit>` or an `exit` block, ends the run. Standard library only,
plus clients/python/execbox_client.py.
"""
from __future__ import annotations

import argparse
import base64
import json
import os
import re
import sys
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))
from execbox_client import Client, ExecboxError, RunResult  # noqa: E402

SYSTEM_MESSAGE = """You are a helpful assistant with a Linux computer: a sandbox where you work as an \
unprivileged user in /home/user. You complete the user's task by running code there and reading its output.

Run code by writing it in a fenced block. Shell commands go in a bash block:
```bash
ls -la
```
Python goes in a python block:
```python
import math
print(math.pi)
```
Python blocks share one interpreter: variables and imports carry over, the value of the last line is shown, \
and matplotlib figures (plt.show()) come back to you as images. Each bash block starts a fresh shell in \
/home/user. I run every block of your reply, in order, and answer with what it printed.

Go one step at a time and look at the output before the next. When the task is done, reply with exit \
on its own line.
"""

INVALID_INPUT_MESSAGE = ("I don't understand your reply: it has no ```python or ```bash block to run.\n"
                         "If you want to run code, put it in a ```python or ```bash block.\n"
                         "If you already completed the task, reply with: exit")

BLOCK_RE = re.compile(r"```[ \t]*(python3?|py|bash|sh|shell)[ \t]*\n(.*?)(?:```|\Z)|<execute>(.*?)(?:</execute>|\Z)",
                      re.DOTALL | re.IGNORECASE)
ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
OBS_MAX = 8000


def blocks(reply: str) -> list[tuple[str, str]]:
    """The code blocks of a reply, in order: (python or bash, code)."""
    found = []
    for m in BLOCK_RE.finditer(reply):
        if m.group(3) is not None:
            found.append(("bash", m.group(3).strip()))
        else:
            found.append(("python" if m.group(1).lower().startswith("py") else "bash", m.group(2).rstrip()))
    return [(lang, code) for lang, code in found if code.strip()]


def wants_exit(reply: str, code_blocks: list[tuple[str, str]]) -> bool:
    """exit alone, <exit>, an exit block (the seed's <execute> exit </execute>),
    or exit as the reply's last line."""
    text = reply.strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return (text.lower().strip("`. ") == "exit" or "<exit>" in text.lower()
            or any(code.strip() == "exit" for _, code in code_blocks)
            or (bool(lines) and lines[-1].lower().strip("`.*") == "exit"))


def clip(text: str, limit: int = OBS_MAX) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters left out ...]\n{text[-half:]}"


class ChatModel:
    """POST {base_url}/chat/completions, the OpenAI Chat Completions shape."""

    def __init__(self, base_url: str, api_key: str | None, model: str, timeout: float = 300):
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.api_key, self.model, self.timeout = api_key, model, timeout

    def complete(self, messages: list[dict]) -> str:
        body = json.dumps({"model": self.model, "messages": messages, "temperature": 0}).encode()
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        req = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                reply = json.load(r)
        except urllib.error.HTTPError as e:
            detail = e.read()[:1000].decode(errors="replace")
            raise SystemExit(f"codeact: the model endpoint answered {e.code}: {detail}")
        except (urllib.error.URLError, OSError) as e:
            raise SystemExit(f"codeact: cannot reach the model endpoint {self.url}: {getattr(e, 'reason', e)}")
        return reply["choices"][0]["message"].get("content") or ""


class Agent:
    """One task: a sandbox, a Python session made on first use, the chat."""

    def __init__(self, model: ChatModel, xb: Client, images_dir: str, vision: bool = False,
                 out=sys.stdout, sandbox_id: str | None = None):
        self.model, self.xb, self.images_dir, self.vision, self.out = model, xb, images_dir, vision, out
        self.sandbox_id = sandbox_id
        self.sbx = None
        self.session = None
        self.messages: list[dict] = []
        self.images: list[str] = []

    def show(self, title: str, text: str) -> None:
        print(f"=== {title} ===\n{text.rstrip()}\n", file=self.out, flush=True)

    # ---- acting ----

    def run_bash(self, code: str) -> tuple[str, list]:
        r = self.sbx.exec(code, timeout_s=120)
        if r["status"] in ("ok", "exit_nonzero"):
            parts = [f"exit code: {r['exit_code']}"]
        else:  # timeout, a limit, a signal
            parts = [f"status: {r['status']}" + (f", signal {r['signal']}" if r.get("signal") else "")]
        if r["stdout"]:
            parts.append("stdout:\n" + r["stdout"].rstrip("\n"))
        if r["stderr"]:
            parts.append("stderr:\n" + r["stderr"].rstrip("\n"))
        return "\n".join(parts), []

    def run_python(self, code: str, step: int) -> tuple[str, list]:
        if self.session is None:
            self.session = self.sbx.create_session("python")
        r: RunResult = self.session.run(code, timeout_s=120)
        parts = [f"status: {r['status']}"]
        if r.stdout:
            parts.append("stdout:\n" + r.stdout.rstrip("\n"))
        if r.stderr:
            parts.append("stderr:\n" + r.stderr.rstrip("\n"))
        if r.text is not None:
            parts.append("result: " + r.text)
        pictures = []
        for mime, data, _url in r.images():
            os.makedirs(self.images_dir, exist_ok=True)
            ext = "png" if mime == "image/png" else mime.split("/")[-1]
            path = os.path.join(self.images_dir, f"step{step}-{len(self.images) + 1}.{ext}")
            with open(path, "wb") as f:
                f.write(data)
            self.images.append(path)
            pictures.append((mime, data))
            parts.append(f"[{mime} image, {len(data)} bytes, saved as {path}]")
        if r.error:
            tb = ANSI_RE.sub("", "\n".join(r.error.get("traceback") or []))
            parts.append(f"error: {r.error.get('name')}: {r.error.get('value')}" + (f"\n{tb}" if tb else ""))
        if r.get("hint"):
            parts.append("hint: " + r["hint"])
        return "\n".join(parts), pictures

    def act(self, lang: str, code: str, step: int) -> tuple[str, list]:
        try:
            return self.run_python(code, step) if lang == "python" else self.run_bash(code)
        except ExecboxError as e:
            # The model sees the error and its hint, as it would a failing command.
            return f"execbox error {e.code}: {e.message}\nhint: {e.hint}", []

    # ---- the loop ----

    def observation(self, results: list[tuple[str, str, list]]) -> dict:
        text = "\n\n".join(f"Observation ({lang}):\n{clip(obs)}" for lang, obs, _ in results)
        pictures = [p for _, _, pics in results for p in pics]
        if not (self.vision and pictures):
            return {"role": "user", "content": text}
        content = [{"type": "text", "text": text}]
        for mime, data in pictures:
            content.append({"type": "image_url",
                            "image_url": {"url": f"data:{mime};base64,{base64.b64encode(data).decode()}"}})
        return {"role": "user", "content": content}

    def run(self, task: str, max_steps: int = 10, keep: bool = False) -> int:
        """0 when the model said exit, 3 when it ran out of steps."""
        self.messages = [{"role": "system", "content": SYSTEM_MESSAGE}, {"role": "user", "content": task}]
        self.show("task", task)
        if self.sandbox_id:
            self.sbx = self.xb.get_sandbox(self.sandbox_id)
        else:
            self.sbx = self.xb.create_sandbox(metadata={"client": "codeact"})
        self.show("sandbox", self.sbx.id)
        try:
            for step in range(1, max_steps + 1):
                reply = self.model.complete(self.messages)
                self.messages.append({"role": "assistant", "content": reply})
                self.show(f"model (step {step})", reply)
                code_blocks = blocks(reply)
                done = wants_exit(reply, code_blocks)
                code_blocks = [(lang, code) for lang, code in code_blocks if code.strip() != "exit"]
                if not code_blocks:
                    if done:
                        self.show("exit", f"the model said exit after {step} steps")
                        return 0
                    self.messages.append({"role": "user", "content": INVALID_INPUT_MESSAGE})
                    self.show(f"user (step {step})", INVALID_INPUT_MESSAGE)
                    continue
                results = []
                for i, (lang, code) in enumerate(code_blocks, 1):
                    obs, pictures = self.act(lang, code, step)
                    results.append((lang, obs, pictures))
                    self.show(f"{lang} (step {step}, block {i})", obs)
                if done:
                    self.show("exit", f"the model said exit after {step} steps")
                    return 0
                self.messages.append(self.observation(results))
            self.show("stopped", f"no exit after {max_steps} steps")
            return 3
        finally:
            if not keep and not self.sandbox_id:
                try:
                    self.sbx.delete()
                except ExecboxError:
                    pass


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="A CodeAct agent that runs the model's code in an execbox sandbox.",
                                 epilog="env: OPENAI_BASE_URL, OPENAI_API_KEY, MODEL (the chat endpoint); "
                                        "EXECBOX_URL, EXECBOX_TOKEN (the execbox server)")
    ap.add_argument("task", nargs="+", help="what the agent should do")
    ap.add_argument("--max-steps", type=int, default=10, help="model turns at most (default 10)")
    ap.add_argument("--images", default="codeact-images", help="where figures are saved (default ./codeact-images)")
    ap.add_argument("--vision", action="store_true", help="also send figures to the model as images")
    ap.add_argument("--sandbox", help="work in this existing sandbox (kept afterwards)")
    ap.add_argument("--keep", action="store_true", help="do not delete the sandbox at the end")
    ap.add_argument("--transcript", help="write the chat messages here as JSON")
    args = ap.parse_args(argv)

    base_url, model = os.environ.get("OPENAI_BASE_URL"), os.environ.get("MODEL")
    if not base_url or not model:
        ap.error("set OPENAI_BASE_URL (e.g. http://127.0.0.1:11434/v1) and MODEL")
    agent = Agent(ChatModel(base_url, os.environ.get("OPENAI_API_KEY"), model), Client(), args.images,
                  vision=args.vision, sandbox_id=args.sandbox)
    try:
        return agent.run(" ".join(args.task), max_steps=args.max_steps, keep=args.keep)
    except ExecboxError as e:
        print(f"codeact: execbox: {e}", file=sys.stderr)
        return 1
    finally:
        if args.transcript:
            with open(args.transcript, "w") as f:
                json.dump(agent.messages, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
