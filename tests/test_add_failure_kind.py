"""docs/architecture.md's claim "a failure kind: its record entry, its cascade check and its
message, nothing else" (issue 41), tested by doing it: in a copy of ``src/`` a throwaway
stage-3 kind ``placeholder`` (a value written as a template placeholder, ``<city>``) is added
by editing exactly ``records.py``, ``saag/cascade.py`` and ``saag/messages.py``; then, with
that copy first on the path, ``callscope score`` reports the kind with its message, the guard
gives its reason, and the correction's rank counts it, with no other file touched."""

from __future__ import annotations

import filecmp
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

EDITS: dict[str, list[tuple[str, str]]] = {
    "callscope/records.py": [
        ('    SOFT = "soft"\n', '    SOFT = "soft"\n    PLACEHOLDER = "placeholder"\n'),
        (
            '"{name}={value} is only loosely related to the user\'s text",\n    ),\n',
            '"{name}={value} is only loosely related to the user\'s text",\n    ),\n'
            '    "placeholder": (3, "placeholder value", "{name}={value} is a template placeholder"),\n',
        ),
        (
            "    soft: list[str] = field(default_factory=list)\n",
            "    soft: list[str] = field(default_factory=list)\n"
            "    placeholder: list[str] = field(default_factory=list)\n",
        ),
    ],
    "callscope/saag/cascade.py": [
        (
            "    for p, v in arguments.items():\n        if isinstance(v, _CONTAINERS) and _too_deep(v):",
            "    for p, v in arguments.items():\n"
            "        if isinstance(v, str) and v.startswith('<') and v.endswith('>'):\n"
            "            d.placeholder.append(p)\n"
            "            continue\n"
            "        if isinstance(v, _CONTAINERS) and _too_deep(v):",
        )
    ],
    "callscope/saag/messages.py": [
        (
            "    FailureKind.SOFT: SOFT,\n",
            "    FailureKind.SOFT: SOFT,\n"
            '    FailureKind.PLACEHOLDER: "The values for {params} are placeholders: fill them in.",\n',
        )
    ],
}

WEATHER = {
    "name": "get_weather",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
        "required": ["city"],
    },
}

PROBE = """
import json, sys
from callscope.guard.check import check
from callscope.records import FailureKind
tools = [{"type": "function", "function": json.loads(sys.argv[1])}]
v = check({"role": "assistant", "content": None, "tool_calls": [{"id": "1", "type": "function",
    "function": {"name": "get_weather", "arguments": json.dumps({"city": "<city>"})}}]},
    tools, [{"role": "user", "content": "Weather in Paris?"}])
print(json.dumps({"reasons": v.calls[0].reasons, "stage": v.stage,
                  "label": FailureKind("placeholder").label}))
"""


def test_a_new_failure_kind_is_three_files(tmp_path: Path) -> None:
    copy = tmp_path / "src"
    shutil.copytree(SRC, copy, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for rel, edits in EDITS.items():
        path = copy / rel
        text = path.read_text(encoding="utf-8")
        for old, new in edits:
            assert text.count(old) == 1, (rel, old)
            text = text.replace(old, new)
        path.write_text(text, encoding="utf-8")
    changed = sorted(
        str(p.relative_to(copy))
        for p in copy.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and ".egg-info" not in str(p)
        if not filecmp.cmp(p, SRC / p.relative_to(copy), shallow=False)
    )
    assert changed == sorted(EDITS)

    env = {**os.environ, "PYTHONPATH": str(copy)}
    row = {
        "id": "p",
        "query": "Weather in Paris in celsius?",
        "functions": [WEATHER],
        "output": {"name": "get_weather", "arguments": {"city": "<city>", "unit": "celsius"}},
    }
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps(row) + "\n", encoding="utf-8")
    cmd = [sys.executable, "-c", "from callscope.cli.main import main; main()", "score", str(rows)]
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout.splitlines()[0])
    assert (out["stage"], out["calls"][0]["kinds"]) == (3, ["placeholder"])
    assert out["fix"] == "The values for city are placeholders: fill them in."

    probe = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(WEATHER)],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert probe.returncode == 0, probe.stderr
    seen = json.loads(probe.stdout)
    assert seen == {
        "reasons": ["placeholder: city='<city>' is a template placeholder"],
        "stage": 3,
        "label": "placeholder value",
    }
