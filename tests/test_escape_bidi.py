"""Bidirectional and other invisible format characters (U+202E, U+2066, U+200E, U+061C,
U+2028, U+FEFF, ...) from a data file or a model are shown as ``\\u202e`` on the terminal, in
the table files, the Markdown and ``report.html``, and a model name reaches ``run.log`` with
no control character (``calibrate leaderboard``), through the ``callscope`` command; the zero
width joiner of an emoji sequence is kept. Real files (``../shared/external``) are copied
under ``tmp_path`` and made hostile there (skipped when absent)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from test_calibrate_exit_codes import LEADERBOARD, TAU2, callscope

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "score_example.jsonl"

#: reorders text (RLO, LRI, LRM, ALM), breaks a line unseen (LS) or hides (BOM, ZWSP)
FORMAT = "\u202e\u2066\u200e\u061c\u2028\ufeff\u200b"
HOSTILE = "\x1b]0;pwn\x07\x9b31m\r" + FORMAT + "<script>alert(1)</script>"
#: a family emoji: its zero width joiners are text, not an attack
EMOJI = "\U0001f469\u200d\U0001f467"


def raw_controls(text: str) -> set[str]:
    """The control and format characters of :data:`FORMAT` (and CR, C0, C1) in ``text``."""
    return {
        f"U+{ord(c):04X}"
        for c in text
        if c in FORMAT or (ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) < 0xA0
    }


def test_score_shows_format_characters_escaped_on_the_terminal(tmp_path: Path) -> None:
    row = json.loads(EXAMPLE.read_text(encoding="utf-8").splitlines()[0])
    rows = tmp_path / "rows.jsonl"
    with rows.open("w", encoding="utf-8") as fh:
        for rid in ("a" + HOSTILE, "b" + EMOJI):  # malformed: the terminal names each id
            fh.write(json.dumps({**row, "id": rid, "functions": 5}) + "\n")
    done = callscope("score", str(rows), "-o", str(tmp_path / "out.jsonl"))
    terminal = done.stdout + done.stderr
    assert done.returncode == 1 and "Traceback" not in terminal
    assert raw_controls(terminal) == set()
    assert "\\u202e\\u2066\\u200e\\u061c\\u2028\\ufeff\\u200b" in terminal
    assert "b" + EMOJI in terminal  # the joiner kept: the emoji is still one picture


@pytest.fixture
def hostile_tau2(tmp_path: Path) -> Path:
    if not TAU2.exists():
        pytest.skip(f"{TAU2} absent")
    data = json.loads(TAU2.read_text(encoding="utf-8"))
    data["info"]["agent_info"]["llm"] = "m" + HOSTILE
    for sim in data["simulations"]:
        sim["task_id"] += HOSTILE
    for task in data["tasks"]:
        task["id"] += HOSTILE
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_from_tau2_escapes_format_characters_and_markup_everywhere(
    hostile_tau2: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    done = callscope("calibrate", "from-tau2", str(hostile_tau2), "-o", str(out))
    terminal = done.stdout + done.stderr
    assert done.returncode == 0, done.stderr[-2000:]
    assert raw_controls(terminal) == set() and "\\u202e" in terminal  # the GAR table's title
    written = sorted(p for p in out.rglob("*") if p.is_file())
    assert {p.name for p in written} >= {"report.html", "tau2-diagnostics.md"}
    for path in written:
        assert raw_controls(path.read_bytes().decode("utf-8")) == set(), path.name
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "\\u202e" in page and "<script>alert" not in page
    md = (out / "tau2-diagnostics.md").read_text(encoding="utf-8")
    assert "<script>" not in md  # the heading, the ASK candidates, the problems: as text
    heading = next(line for line in md.splitlines() if line.startswith("**GAR and Acc: m"))
    assert "\\\\x0d\\\\u202e" in heading and "&lt;script&gt;" in heading
    assert any(
        line.startswith("- airline task ") and "&lt;script&gt;" in line for line in md.splitlines()
    )


def test_leaderboard_writes_the_model_name_escaped_in_run_log(tmp_path: Path) -> None:
    if not LEADERBOARD.exists():
        pytest.skip(f"{LEADERBOARD} absent")
    pytest.importorskip("bfcl_eval")
    name = "m\x9b31m\u202eevil"
    tree = tmp_path / "tree"
    for kind in ("result", "score"):
        shutil.copytree(LEADERBOARD / kind / "gorilla-openfunctions-v2", tree / kind / name)
    out = tmp_path / "out"
    done = callscope(
        "calibrate", "leaderboard", str(tree), "-o", str(out), "--no-cases", "--no-checker",
        "--jobs", "1", "--quiet",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    log = (out / "run.log").read_bytes().decode("utf-8")
    assert "m\\x9b31m\\u202eevil: " in log and raw_controls(log) == set()
    for path in out.rglob("*"):
        if path.suffix in (".md", ".csv", ".tex", ".html", ".log"):
            assert raw_controls(path.read_bytes().decode("utf-8")) == set(), path.name
