"""A model BFCL's handler map does not name (issue 49): ``calibrate leaderboard`` tries every
decoder on a sample of its answers and reads it with the one that reads the most, named in
the formats table with the alternatives' counts; a model whose answers mostly fail every
decoder is named first on the screen and left out of the leaderboard.

The tree is written here (BFCL v3 names, plain JSON), four answers a model to the first four
``simple`` cases, each the call its question asks for (worked out from the question text:
"the area of a triangle with a base of 10 units and height of 5 units", "the factorial of
5", "the hypotenuse ... (4, 5)", "roots of ... a=1, b=-3, c=2"), written in the model's own
format.
"""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("bfcl_eval")

CALLS = [
    ("simple_0", "calculate_triangle_area", {"base": 10, "height": 5}),
    ("simple_1", "math.factorial", {"number": 5}),
    ("simple_2", "math.hypot", {"x": 4, "y": 5}),
    ("simple_3", "algebra.quadratic_roots", {"a": 1, "b": -3, "c": 2}),
]


def _python(name: str, args: dict) -> str:
    return f"{name}({', '.join(f'{k}={v!r}' for k, v in args.items())})"


def _obj(name: str, args: dict) -> str:
    return json.dumps({"name": name, "arguments": args})


#: model -> how it writes one call (no model name here is in BFCL's handler map)
FORMATS = {
    "acme_granite-like-fc": lambda n, a: f"<function_call> {_obj(n, a)}",
    "acme_inline-tool-call": lambda n, a: f"Calling it now. <tool_call>{_obj(n, a)}</tool_call>",
    "acme_json-fence": lambda n, a: f"```json\n{_obj(n, a)}\n```",
    "acme_python-list": lambda n, a: f"[{_python(n, a)}]",
}
#: the decoder each should be read with
EXPECTED = {
    "acme_granite-like-fc": "function_call_tag",
    "acme_inline-tool-call": "tool_call_tag",
    "acme_json-fence": "fenced",
    "acme_python-list": "wrap",
}
GARBLED = "acme_garbled"


def _write(tree: Path, model: str, results: list[str]) -> None:
    folder = tree / "result" / model
    folder.mkdir(parents=True)
    lines = [{"id": cid, "result": r} for (cid, _, _), r in zip(CALLS, results, strict=True)]
    (folder / "BFCL_v3_simple_result.json").write_text(
        "".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8"
    )


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def test_unlisted_formats_decode_and_the_undecodable_model_is_named_first(tmp_path):
    tree = tmp_path / "tree"
    for model, write in FORMATS.items():
        _write(tree, model, [write(n, a) for _, n, a in CALLS])
    # one call readable, three answers in a format nothing reads: mostly fails every decoder
    _write(
        tree,
        GARBLED,
        [f"[{_python(CALLS[0][1], CALLS[0][2])}]"]
        + [f"<<CALL {n} :: {json.dumps(a)} >>" for _, n, a in CALLS[1:]],
    )
    exe = shutil.which("callscope")
    cmd = [exe] if exe else [sys.executable, "-m", "callscope.cli"]
    out = tmp_path / "out"
    done = subprocess.run(
        [*cmd, "calibrate", "leaderboard", str(tree), "-o", str(out), "--no-cases", "--quiet"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    screen = " ".join(done.stdout.split())
    first = screen.split("BFCL leaderboard through callscope", 1)[0]  # before the table
    assert first.startswith("1 model(s) left out of the leaderboard"), screen[:300]
    assert GARBLED in first and "reads 1 of 4 sampled answers" in first

    board = _csv(out / "leaderboard.csv")
    assert sorted(r["model"] for r in board) == sorted(FORMATS)
    for row in board:  # every answer decodes, and BFCL's checker accepts every one
        assert (row["answers"], row["checker_accepted"]) == ("4", "4"), row

    formats = {r["decoder"]: r for r in _csv(out / "formats.csv")}
    for model, decoder in EXPECTED.items():
        row = formats[decoder]
        assert (row["models"], row["to calls"], row["chosen by"]) == ("1", "4", "sample of 4")
        reads = row["sample reads (chosen, then the next decoders)"]
        assert reads.startswith(f"{model}: {decoder} 4/4, then "), reads
    # the granite-like format: no 2024 decoder reads any of it
    assert (
        "function_call_tag 4/4, then wrap 0/4"
        in formats["function_call_tag"]["sample reads (chosen, then the next decoders)"]
    )
    garbled = [r for r in _csv(out / "formats.csv") if r["chosen by"].endswith("(undecodable)")]
    assert [r["sample reads (chosen, then the next decoders)"].split(":")[0] for r in garbled] == [
        GARBLED
    ]
    facts = json.loads((out / "leaderboard.json").read_text(encoding="utf-8"))
    assert facts["undecodable"] == [GARBLED]
    page = (out / "report.html").read_text(encoding="utf-8")
    assert page.index(GARBLED) < page.index("data:image/png;base64,")  # before the figure
