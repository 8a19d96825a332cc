"""examples/codeact against the real server and a scripted fake model
(examples/codeact/fake_model.py with demo.json): the model asks for a file
write, a matplotlib plot and a failing command, then exits. The agent runs
as its users run it, a subprocess configured by the environment; the test
reads its transcript, the figure it saved, and what the model was sent."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from execbox_client import Client

EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "codeact")
sys.path.insert(0, EXAMPLE)

import codeact  # noqa: E402
from fake_model import FakeModel  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
API_KEY = "sk-fake-codeact-test"


def demo() -> dict:
    with open(os.path.join(EXAMPLE, "demo.json")) as f:
        return json.load(f)


@pytest.fixture
def fake():
    fm = FakeModel(demo(), api_key=API_KEY).start()
    yield fm
    fm.stop()


def run_agent(xbserver, token, fake, tmp_path, *args, model="fake-codeact") -> tuple[subprocess.CompletedProcess, str]:
    env = dict(os.environ, OPENAI_BASE_URL=fake.url, OPENAI_API_KEY=API_KEY, MODEL=model,
               EXECBOX_URL=xbserver.url, EXECBOX_TOKEN=token)
    transcript = str(tmp_path / "transcript.json")
    p = subprocess.run([sys.executable, os.path.join(EXAMPLE, "codeact.py"), "--images", str(tmp_path / "img"),
                        "--transcript", transcript, *args, demo()["task"]],
                       env=env, capture_output=True, text=True, timeout=300)
    return p, transcript


def sections(out: str) -> list[tuple[str, str]]:
    """(title, body) for each `=== title ===` section of the transcript."""
    parts = re.split(r"^=== (.+) ===$", out, flags=re.M)
    return [(parts[i], parts[i + 1].strip()) for i in range(1, len(parts), 2)]


def test_demo_run(xbserver, token, fake, tmp_path):
    p, transcript = run_agent(xbserver, token, fake, tmp_path, "--vision")
    assert p.returncode == 0, p.stdout + p.stderr
    assert fake.problems == [], "\n".join(fake.problems) + "\n" + p.stdout
    assert len(fake.requests) == 5

    secs = sections(p.stdout)
    titles = [t for t, _ in secs]
    assert titles == ["task", "sandbox",
                      "model (step 1)", "python (step 1, block 1)",
                      "model (step 2)", "python (step 2, block 1)",
                      "model (step 3)", "bash (step 3, block 1)", "bash (step 3, block 2)",
                      "model (step 4)", "user (step 4)",
                      "model (step 5)", "exit"], p.stdout
    body = dict(secs)
    # the file write, read back in the same session and by bash
    assert "hello from execbox" in body["python (step 1, block 1)"]
    assert "result: 19" in body["python (step 1, block 1)"]
    assert body["bash (step 3, block 1)"].startswith("exit code: 0") and "hello from execbox" in body[
        "bash (step 3, block 1)"]
    # the plot arrived as a PNG, saved where the transcript says
    m = re.search(r"\[image/png image, (\d+) bytes, saved as (\S+)\]", body["python (step 2, block 1)"])
    assert m, body["python (step 2, block 1)"]
    with open(m.group(2), "rb") as f:
        png = f.read()
    assert png.startswith(PNG_MAGIC) and len(png) == int(m.group(1)) > 1000
    # the failing command, the seed's <execute> form
    assert body["bash (step 3, block 2)"].startswith("exit code: 2")
    assert "No such file or directory" in body["bash (step 3, block 2)"]
    assert body["exit"] == "the model said exit after 5 steps"

    # what the model was sent: the system prompt, the task, each observation
    sent = fake.requests[-1]
    assert sent["model"] == "fake-codeact" and sent["messages"][0]["role"] == "system"
    assert "```python" in sent["messages"][0]["content"] and "exit" in sent["messages"][0]["content"]
    assert sent["messages"][1] == {"role": "user", "content": demo()["task"]}
    with open(transcript) as f:
        messages = json.load(f)
    assert [m["role"] for m in messages] == ["system", "user"] + ["assistant", "user"] * 4 + ["assistant"]
    assert messages[-1]["content"].endswith("exit")

    # the sandbox is gone
    sid = body["sandbox"]
    assert sid not in [s["id"] for s in Client(xbserver.url, token=token).list_sandboxes()]


def test_out_of_steps_and_keep(xbserver, token, fake, tmp_path):
    p, _ = run_agent(xbserver, token, fake, tmp_path, "--max-steps", "2", "--keep")
    assert p.returncode == 3, p.stdout + p.stderr
    secs = dict(sections(p.stdout))
    assert secs["stopped"] == "no exit after 2 steps"
    assert "saved as" in secs["python (step 2, block 1)"]
    xb = Client(xbserver.url, token=token)
    sbx = xb.sandbox(secs["sandbox"])
    assert sbx.read_text("hello.txt") == "hello from execbox\n"   # kept, as asked
    sbx.delete()


def test_model_endpoint_errors(xbserver, token, fake):
    env = dict(os.environ, OPENAI_BASE_URL=fake.url, OPENAI_API_KEY="sk-wrong", MODEL="m",
               EXECBOX_URL=xbserver.url, EXECBOX_TOKEN=token)
    p = subprocess.run([sys.executable, os.path.join(EXAMPLE, "codeact.py"), "do it"], env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "answered 401" in p.stderr, p.stderr
    sid = dict(sections(p.stdout))["sandbox"]
    assert sid not in [s["id"] for s in Client(xbserver.url, token=token).list_sandboxes()]
    env.pop("MODEL")
    p = subprocess.run([sys.executable, os.path.join(EXAMPLE, "codeact.py"), "do it"], env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "OPENAI_BASE_URL" in p.stderr


@pytest.mark.parametrize("reply,want,exits", [
    ("```python\nprint(1)\n```", [("python", "print(1)")], False),
    ("```py\n1\n```\ntext\n```bash\nls\n```", [("python", "1"), ("bash", "ls")], False),
    ("```sh\necho hi\n```", [("bash", "echo hi")], False),
    ("<execute> ls -la </execute>", [("bash", "ls -la")], False),
    ("<execute>echo cut off", [("bash", "echo cut off")], False),      # the seed closes an unclosed block
    ("```python\nprint(2)", [("python", "print(2)")], False),
    ("```\nplain text, not run\n```", [], False),
    ("```json\n{}\n```", [], False),
    ("exit", [], True),
    ("Done. <exit>", [], True),
    ("<execute> exit </execute>", [("bash", "exit")], True),
    ("All done.\n\nexit", [], True),
    ("I will exit the loop when finished.", [], False),
])
def test_reply_parsing(reply, want, exits):
    got = codeact.blocks(reply)
    assert got == want
    assert codeact.wants_exit(reply, got) is exits
