"""Golden files: what the REST API and MCP answer today, pinned so that a
refactor can prove it changed nothing a client sees.

A test records its cases into a Golden (one per tests/golden/<kind>/<area>.json)
and calls check() at the end. With XB_GOLDEN_UPDATE=1 in the environment
check() writes the file; otherwise it compares and fails with a unified diff
of the JSON. Only what varies from run to run is normalised: ids, pids,
temporary paths and timings become placeholders such as <ID>, and the
values of volatile fields are replaced by their type."""
from __future__ import annotations

import difflib
import json
import os
import re
from typing import Any

import pytest

GOLDEN_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "golden")
UPDATE = os.environ.get("XB_GOLDEN_UPDATE") == "1"

# Reply fields whose values change from run to run (clocks, resource use,
# pids, sizes of things the kernel fills in): pinned by type only.
VOLATILE = {
        "created_at_ms", "expires_in_ms", "duration_ms", "cpu_ms", "peak_memory", "pid", "started_at_ms",
        "finished_at_ms", "started_ms_ago", "mtime", "mtime_ms", "elapsed_ms", "uptime_s",
}

# Where a pid stands in a text or a URL; a bare number is left alone (pids
# inside a sandbox are small and could match an offset or a size).
PID_CONTEXTS = ("/processes/", "process ", "pid ", "pid=", "pid: ", "\"pid\": ", "pid\": ")


def type_name(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "float"
    if isinstance(v, str):
        return "str"
    if isinstance(v, list):
        return "array"
    return "object"


def shape(v: Any) -> Any:
    """The key sets and value types of a JSON value: an object becomes
    {key: shape}, an array the sorted distinct shapes of its items, a
    scalar its type name."""
    if isinstance(v, dict):
        return {k: shape(v[k]) for k in sorted(v)}
    if isinstance(v, list):
        seen = {json.dumps(shape(x), sort_keys=True) for x in v}
        return [json.loads(s) for s in sorted(seen)]
    return type_name(v)


class Normaliser:
    """Replaces what differs between runs by placeholders. Literals are
    learnt as the test goes (sandbox ids, session ids, pids); the longest
    is replaced first so that one id inside another cannot leave a tail."""

    def __init__(self):
        self.literals: dict[str, str] = {}
        self.patterns: list[tuple[re.Pattern, str]] = []

    def learn(self, literal: Any, placeholder: str) -> None:
        if literal is None or literal == "":
            return
        self.literals.setdefault(str(literal), placeholder)

    def learn_pid(self, pid: int) -> None:
        for ctx in PID_CONTEXTS:
            self.pattern(rf"(?<={re.escape(ctx)}){pid}(?![0-9])", "<PID>")

    def pattern(self, regex: str, placeholder: str) -> None:
        self.patterns.append((re.compile(regex), placeholder))

    def text(self, s: str) -> str:
        for lit in sorted(self.literals, key=len, reverse=True):
            s = s.replace(lit, self.literals[lit])
        for rx, ph in self.patterns:
            s = rx.sub(ph, s)
        return s

    def value(self, v: Any, volatile: set[str] = VOLATILE, key: str | None = None) -> Any:
        """A JSON value with its strings normalised and the values of the
        volatile fields (but not objects) replaced by "<type>"."""
        if key in volatile and not isinstance(v, dict):
            return f"<{type_name(v)}>"
        if isinstance(v, dict):
            return {k: self.value(v[k], volatile, k) for k in sorted(v)}
        if isinstance(v, list):
            return [self.value(x, volatile) for x in v]
        if isinstance(v, str):
            return self.text(v)
        return v


class Golden:
    """The cases of one golden file."""

    def __init__(self, kind: str, area: str, norm: Normaliser):
        self.path = os.path.join(GOLDEN_DIR, kind, f"{area}.json")
        self.norm = norm
        self.cases: dict[str, Any] = {}

    def add(self, name: str, record: Any) -> None:
        assert name not in self.cases, f"golden case {name!r} recorded twice"
        self.cases[name] = record

    def dump(self, data: Any) -> str:
        return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"

    def check(self) -> int:
        """Write (XB_GOLDEN_UPDATE=1) or compare; the number of cases."""
        actual = self.norm.value(self.cases, volatile=set())
        text = self.dump(actual)
        rel = os.path.relpath(self.path, os.path.dirname(os.path.dirname(GOLDEN_DIR)))
        if UPDATE:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            with open(self.path, "w") as f:
                f.write(text)
            return len(actual)
        if not os.path.exists(self.path):
            pytest.fail(f"{rel} does not exist: generate it with XB_GOLDEN_UPDATE=1", pytrace=False)
        with open(self.path) as f:
            want_text = f.read()
        want = json.loads(want_text)
        if want != actual:
            changed = sorted(k for k in set(want) | set(actual) if want.get(k) != actual.get(k))
            diff = difflib.unified_diff(self.dump(want).splitlines(), text.splitlines(),
                                        f"{rel} (golden)", f"{rel} (this run)", n=3, lineterm="")
            pytest.fail(f"{rel}: {len(changed)} case(s) differ: {', '.join(changed)}\n" + "\n".join(diff)
                        + "\n(if the change is intended, regenerate with XB_GOLDEN_UPDATE=1)", pytrace=False)
        return len(actual)
