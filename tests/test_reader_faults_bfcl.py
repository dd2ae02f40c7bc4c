"""BFCL's published result files made wrong on purpose (copies under tmp_path of the real
files in ``../shared/external``, never copied here): each fault is counted and said, never
read as other numbers with exit code 0 and no message. Run through the CLI as a user types
it; the expected numbers are worked out here from the files with json / gzip, not with
callscope's readers."""

from __future__ import annotations

import gzip
import importlib.util
import json
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[2] / "shared" / "external"
GLYPHH = SHARED / "bfcl" / "glyphh"
LEADERBOARD = SHARED / "bfcl-leaderboard-2024-08"
MODEL = "gorilla-openfunctions-v2"
MT = "glyphh-ada-1.1/multi_turn"

needs_bfcl = pytest.mark.skipif(
    importlib.util.find_spec("bfcl_eval") is None, reason="bfcl-eval not installed"
)
needs_glyphh = pytest.mark.skipif(not GLYPHH.is_dir(), reason="shared/external/bfcl absent")
needs_leaderboard = pytest.mark.skipif(
    not LEADERBOARD.is_dir(), reason="shared/external/bfcl-leaderboard-2024-08 absent"
)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("callscope")
    cmd = [exe] if exe else [sys.executable, "-m", "callscope.cli"]
    return subprocess.run(
        [*cmd, *args], capture_output=True, text=True, timeout=600, env=_env()
    )  # fmt: skip


def _env() -> dict[str, str]:
    import os

    return {**os.environ, "CALLSCOPE_PROGRESS": "off", "COLUMNS": "250"}


def _said(done: subprocess.CompletedProcess[str]) -> str:
    return " ".join((done.stdout + done.stderr).split())


# --------------------------------------------------------------------- multi-turn (from-bfcl)


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def _base_tree(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A copy of glyphh's base category (result and score file) under ``tmp_path``."""
    tree = tmp_path / "tree"
    for side, kind in (("result", "result"), ("score", "score")):
        name = f"BFCL_v4_multi_turn_base_{kind}.json"
        (tree / side / MT).mkdir(parents=True)
        shutil.copy(GLYPHH / side / MT / name, tree / side / MT / name)
    result = tree / "result" / MT / "BFCL_v4_multi_turn_base_result.json"
    return tree, result, tree / "score" / MT / "BFCL_v4_multi_turn_base_score.json"


def _base_row(out: Path) -> dict | None:
    rows = json.loads((out / "calibration-from-bfcl.json").read_text(encoding="utf-8"))["rows"]
    return next((r for r in rows if r.get("category") == "base"), None)


def _failed_ids(score: Path) -> set[str]:
    return {json.loads(x)["id"] for x in _lines(score)[1:]}


@needs_glyphh
@pytest.mark.parametrize("fault", ["empty", "utf16", "array"])
def test_an_unreadable_multi_turn_score_file_leaves_acc_unknown(tmp_path, fault):
    """F1: an empty, UTF-16 or one-JSON-array score file read as 200/200 passed."""
    tree, result, score = _base_tree(tmp_path)
    n = len(_lines(result))
    text = score.read_text(encoding="utf-8")
    if fault == "empty":
        score.write_text("", encoding="utf-8")
    elif fault == "utf16":
        score.write_bytes(text.encode("utf-16"))
    else:
        score.write_text(json.dumps([json.loads(x) for x in text.splitlines()]), "utf-8")
    done = _cli("calibrate", "from-bfcl", str(tree), "-o", str(tmp_path / "out"))
    assert "Traceback" not in done.stderr
    row = _base_row(tmp_path / "out")
    assert row is not None and row["n"] == n == 200
    assert row["acc_k"] is None and row["acc_n"] is None and row["acc_source"] is None
    assert "Acc unknown for base" in _said(done)


@needs_glyphh
@needs_bfcl
def test_multi_turn_lines_not_in_the_ground_truth_are_left_out(tmp_path):
    """F2: another category's lines appended, and an unknown id, counted in n and Acc."""
    tree, result, score = _base_tree(tmp_path)
    base = _lines(result)
    other = _lines(GLYPHH / "result" / MT / "BFCL_v4_multi_turn_miss_func_result.json")[:10]
    unknown = json.loads(base[0]) | {"id": "multi_turn_base_99999"}
    result.write_text("\n".join([*base, *other, json.dumps(unknown)]) + "\n", "utf-8")
    done = _cli("calibrate", "from-bfcl", str(tree), "-o", str(tmp_path / "out"))
    row = _base_row(tmp_path / "out")
    ids = {json.loads(x)["id"] for x in base}
    passed = len(ids - _failed_ids(score))
    assert (row["n"], row["acc_n"], row["acc_k"]) == (len(ids), len(ids), passed) == (200, 200, 121)
    assert row["gar_case_k"] <= 200
    said = _said(done)
    assert "11 lines whose id is not in the ground truth of base left out" in said
    assert "multi_turn_base_99999 not in ground truth" in said


@needs_glyphh
def test_one_turn_per_line_is_refused_in_one_message(tmp_path):
    """F12: ``{"id", "turn", "result": <one turn>}`` lines read as 534 duplicate ids."""
    tree, result, _ = _base_tree(tmp_path)
    out_lines = []
    for line in _lines(result):
        row = json.loads(line)
        for t, turn in enumerate(row["result"]):
            out_lines.append(json.dumps({"id": row["id"], "turn": t, "result": turn}))
    result.write_text("\n".join(out_lines) + "\n", encoding="utf-8")
    done = _cli("calibrate", "from-bfcl", str(tree), "-o", str(tmp_path / "out"))
    said = _said(done)
    assert "duplicate id" not in said
    assert said.count("one turn per line") == 1 and "category base skipped" in said
    out = tmp_path / "out" / "calibration-from-bfcl.json"
    assert not out.exists() or _base_row(tmp_path / "out") is None


# --------------------------------------------------------------- single-turn (leaderboard)

V2 = {
    "simple": "simple_python",
    "multiple_function": "multiple",
    "parallel_function": "parallel",
    "parallel_multiple_function": "parallel_multiple",
    "relevance": "irrelevance",
}


def _result_path(folder: Path, v2: str) -> Path:
    return folder / f"gorilla_openfunctions_v1_test_{v2}_result.json.gz"


def _gz_lines(path: Path) -> list[str]:
    return gzip.decompress(path.read_bytes()).decode("utf-8").splitlines()


def _write_gz(path: Path, lines: list[str]) -> None:
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode("utf-8")))


def _rejected(v2: str) -> set[str]:
    """Today's ids of the cases BFCL rejected in a category (``prompt_id``, else the 1-based
    index ``id``), read from the real score file."""
    out = set()
    for line in _gz_lines(LEADERBOARD / "score" / MODEL / f"{v2}_score.jsonl.gz")[1:]:
        row = json.loads(line)
        rid = row["prompt_id"] if isinstance(row.get("prompt_id"), str) else f"x_{row['id'] - 1}"
        out.add(f"{V2[v2]}_{rid.rpartition('_')[2]}")
    return out


def _model_copy(tmp_path: Path) -> tuple[Path, Path, Path]:
    tree = tmp_path / "tree"
    for side in ("result", "score"):
        shutil.copytree(LEADERBOARD / side / MODEL, tree / side / MODEL)
    return tree, tree / "result" / MODEL, tree / "score" / MODEL


def _answers(out: Path) -> list[dict]:
    page = (out / "cases" / f"{MODEL}.html").read_text(encoding="utf-8")
    return json.loads(page.split("id='answers'>", 1)[1].split("</script>", 1)[0])


@pytest.fixture(scope="module")
def faulty_leaderboard(tmp_path_factory):
    """One model, four of its five files made wrong (multiple_function left as it is):
    simple: its first 50 lines repeated and 20 lines of multiple_function appended;
    parallel_function: its score file a gzip of nothing; parallel_multiple_function: half
    its answers gone; relevance: its lines shuffled (its score lines name cases only by
    BFCL's 1-based index, as published)."""
    if not LEADERBOARD.is_dir() or importlib.util.find_spec("bfcl_eval") is None:
        pytest.skip("needs shared/external/bfcl-leaderboard-2024-08 and bfcl-eval")
    tmp = tmp_path_factory.mktemp("lb")
    tree, res, sco = _model_copy(tmp)
    simple = _gz_lines(_result_path(res, "simple"))
    multiple = _gz_lines(_result_path(res, "multiple_function"))
    _write_gz(_result_path(res, "simple"), simple + simple[:50] + multiple[:20])
    (sco / "parallel_function_score.jsonl.gz").write_bytes(gzip.compress(b""))
    pm = _gz_lines(_result_path(res, "parallel_multiple_function"))
    _write_gz(_result_path(res, "parallel_multiple_function"), pm[:100])
    rel = _gz_lines(_result_path(res, "relevance"))
    random.Random(0).shuffle(rel)
    _write_gz(_result_path(res, "relevance"), rel)
    out = tmp / "out"
    done = _cli("calibrate", "leaderboard", str(tree), "-o", str(out), "--jobs", "1")
    assert done.returncode in (0, 1) and "Traceback" not in done.stderr, done.stderr
    return done, _answers(out)


def _by_category(answers: list[dict], category: str) -> list[dict]:
    return [a for a in answers if a["id"].rpartition("_")[0] == category]


def test_repeated_and_other_category_lines_are_left_out_and_said(faulty_leaderboard):
    """F3: 50 repeated lines all counted; ``multiple_function_3`` in the simple file scored
    as ``simple_python_3`` against simple's gold."""
    done, answers = faulty_leaderboard
    simple = _by_category(answers, "simple_python")
    assert len(simple) == len({a["id"] for a in simple}) == 400
    rejected = _rejected("simple")
    assert {a["id"] for a in simple if a["bfcl"] == "rejected"} == rejected
    assert len(answers) == 400 + 200 + 200 + 100 + 240
    said = _said(done)
    assert "50 lines repeat a case already answered; left out (the first answer kept)" in said
    assert "20 lines of another category left out (an id not of simple_python)" in said


def test_an_empty_score_file_is_unreadable_not_all_accepted(faulty_leaderboard):
    """F3: a .gz holding nothing read as 'every answer accepted'."""
    done, answers = faulty_leaderboard
    parallel = _by_category(answers, "parallel")
    assert len(parallel) == 200 and {a["bfcl"] for a in parallel} == {"not scored"}
    said = _said(done)
    assert "parallel_function_score.jsonl.gz: unreadable as a score file" in said
    assert "BFCL's verdicts on parallel unknown" in said


def test_missing_answers_are_counted_and_said(faulty_leaderboard):
    done, answers = faulty_leaderboard
    assert len(_by_category(answers, "parallel_multiple")) == 100
    assert "100 of the 200 cases its score header counts have no answer" in _said(done)


def test_index_only_verdicts_follow_the_answer_not_its_line(faulty_leaderboard):
    """F4: a reordered file got other cases' verdicts by line position."""
    _, answers = faulty_leaderboard
    rel = _by_category(answers, "irrelevance")
    assert len(rel) == 240
    assert {a["id"] for a in rel if a["bfcl"] == "rejected"} == _rejected("relevance")


@needs_leaderboard
@needs_bfcl
def test_a_cut_off_gzip_file_is_said_and_left_out(tmp_path):
    """F11: 'cannot be read' said while the lines before the cut were scored."""
    tree, res, _ = _model_copy(tmp_path)
    path = _result_path(res, "simple")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    before_cut = 0
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        try:
            for _ in fh:
                before_cut += 1
        except EOFError:
            pass
    out = tmp_path / "out"
    done = _cli("calibrate", "leaderboard", str(tree), "-o", str(out), "--jobs", "1")
    said = _said(done)
    m = re.search(r"simple_result\.json\.gz: read (\d+) lines, then the file is cut off", said)
    assert m and 0 < int(m.group(1)) <= before_cut and "the file is left out" in said
    answers = _answers(out)
    assert not _by_category(answers, "simple_python") and len(answers) == 1240 - 400
