"""The exit codes of ``callscope calibrate from-bfcl``, ``leaderboard`` and ``from-tau2`` on
real result files (``../shared/external``, copied under ``tmp_path`` and made wrong there;
skipped when absent): 1 when a file, a category or lines were lost (the report still
written), 2 when nothing could be read (docs/reference/cli.md, "Exit codes")."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXTERNAL = Path(__file__).resolve().parents[2] / "shared" / "external"
GLYPHH = EXTERNAL / "bfcl" / "glyphh"
LEADERBOARD = EXTERNAL / "bfcl-leaderboard-2024-08"
TAU2 = EXTERNAL / "tau2" / "blakeelias_grok3_airline.json"
MODEL = "gorilla-openfunctions-v2"


def callscope(*args: str) -> subprocess.CompletedProcess[str]:
    """``callscope ARGS`` as a user types it (stdout and stderr captured as text)."""
    exe = shutil.which("callscope")
    cmd = [exe] if exe else [sys.executable, "-m", "callscope.cli"]
    env = {**os.environ, "CALLSCOPE_PROGRESS": "off"}
    return subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=300, env=env)


def _needs(path: Path) -> None:
    if not path.exists():
        pytest.skip(f"{path} absent")


# ------------------------------------------------------------------ from-bfcl

BASE = "result/glyphh-ada-1.1/multi_turn/BFCL_v4_multi_turn_base_result.json"


def _spoil(path: Path, how: str) -> None:
    """Make one BFCL result file unreadable in the way ``how`` names."""
    text = path.read_text(encoding="utf-8")
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    if how == "json_array":
        path.write_text(json.dumps(rows), encoding="utf-8")
    elif how == "utf16":
        path.write_bytes(text.encode("utf-16"))
    elif how == "gzip_no_gz":
        path.write_bytes(gzip.compress(text.encode("utf-8")))
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "cut_in_half":
        path.write_bytes(text.encode("utf-8")[: len(text) // 2])


@pytest.fixture
def glyphh(tmp_path: Path) -> Path:
    _needs(GLYPHH)
    pytest.importorskip("bfcl_eval")
    tree = tmp_path / "glyphh"
    shutil.copytree(GLYPHH, tree)
    return tree


@pytest.mark.parametrize("how", ["json_array", "utf16", "gzip_no_gz", "empty", "cut_in_half"])
def test_from_bfcl_exits_1_when_a_category_file_is_lost(glyphh: Path, tmp_path: Path, how: str):
    _spoil(glyphh / BASE, how)
    out = tmp_path / "out"
    done = callscope("calibrate", "from-bfcl", str(glyphh), "-o", str(out))
    assert "Traceback" not in done.stderr
    assert done.returncode == 1, done.stderr[-2000:]
    assert "not all of the input was read" in " ".join(done.stderr.split())
    assert (out / "report.html").is_file() and (out / "calibration-from-bfcl.md").is_file()
    rows = json.loads((out / "calibration-from-bfcl.json").read_text(encoding="utf-8"))["rows"]
    assert {r["category"] for r in rows} >= {"miss_param", "miss_func", "long_context"}


def test_from_bfcl_exits_0_on_the_real_tree_1_when_a_file_is_lost_2_when_none_is_read(
    glyphh: Path, tmp_path: Path
):
    done = callscope("calibrate", "from-bfcl", str(glyphh), "-o", str(tmp_path / "ok"))
    assert done.returncode == 0, done.stderr[-2000:]
    results = sorted((glyphh / "result").rglob("*_result.json"))
    for n, path in enumerate(results, 1):
        _spoil(path, "utf16")
        done = callscope("calibrate", "from-bfcl", str(glyphh), "-o", str(tmp_path / f"o{n}"))
        if n < len(results):  # some categories still read
            assert done.returncode == 1, done.stderr[-2000:]
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.startswith("error:") and "Traceback" not in done.stderr


# ------------------------------------------------------------------ leaderboard


@pytest.fixture
def one_model(tmp_path: Path) -> Path:
    _needs(LEADERBOARD)
    pytest.importorskip("bfcl_eval")
    tree = tmp_path / "tree"
    for kind in ("result", "score"):
        shutil.copytree(LEADERBOARD / kind / MODEL, tree / kind / MODEL)
    return tree


def _leaderboard(tree: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return callscope(
        "calibrate", "leaderboard", str(tree), "-o", str(out), "--no-cases", "--no-checker",
        "--jobs", "1", "--quiet",
    )  # fmt: skip


@pytest.mark.parametrize("how", ["truncated", "garbage"])
def test_leaderboard_exits_1_when_a_gz_file_cannot_be_read(
    one_model: Path, tmp_path: Path, how: str
):
    path = one_model / "result" / MODEL / "gorilla_openfunctions_v1_test_simple_result.json.gz"
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2] if how == "truncated" else b"not gzip at all\n")
    out = tmp_path / "out"
    done = _leaderboard(one_model, out)
    assert "Traceback" not in done.stderr
    assert done.returncode == 1, done.stderr[-2000:]
    assert (out / "report.html").is_file() and (out / "leaderboard.csv").is_file()


def test_leaderboard_exits_2_when_no_answer_can_be_read(one_model: Path, tmp_path: Path):
    for path in (one_model / "result").rglob("*.gz"):
        path.write_bytes(b"not gzip at all\n")
    done = _leaderboard(one_model, tmp_path / "out")
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.startswith("error:") and "no answer read" in " ".join(done.stderr.split())


# ------------------------------------------------------------------ from-tau2


@pytest.fixture
def tau2(tmp_path: Path) -> dict:
    _needs(TAU2)
    return json.loads(TAU2.read_text(encoding="utf-8"))


def test_from_tau2_exits_2_on_an_empty_simulations_list(tau2: dict, tmp_path: Path):
    tau2["simulations"] = []
    path = tmp_path / "results.json"
    path.write_text(json.dumps(tau2), encoding="utf-8")
    done = callscope("calibrate", "from-tau2", str(path), "-o", str(tmp_path / "out"))
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.startswith("error:") and "no τ²-bench simulation read" in done.stderr


def test_from_tau2_exits_1_when_a_simulation_is_lost(tau2: dict, tmp_path: Path):
    tau2["simulations"][0] = [1, 2]  # not a simulation object: skipped by the reader
    path = tmp_path / "results.json"
    path.write_text(json.dumps(tau2), encoding="utf-8")
    out = tmp_path / "out"
    done = callscope("calibrate", "from-tau2", str(path), "-o", str(out))
    assert "Traceback" not in done.stderr
    assert done.returncode == 1, done.stderr[-2000:]
    assert (out / "report.html").is_file() and (out / "tau2-diagnostics.md").is_file()
    assert "Problems" in (out / "tau2-diagnostics.md").read_text(encoding="utf-8")
    plain = callscope("calibrate", "from-tau2", str(TAU2), "-o", str(tmp_path / "plain"))
    assert plain.returncode == 0, plain.stderr[-2000:]


def test_from_tau2_exits_1_when_a_simulations_task_is_not_found(tau2: dict, tmp_path: Path):
    """A simulation whose task is in neither the run nor a tasks file is left out of the GAR
    rows, said, and the command exits 1 (it exited 0: the loss was only a line among the
    notes); the first GAR row counts one simulation fewer than the real file's run does (17), and
    Acc still all 20 (it reads rewards, not tasks)."""
    tau2["simulations"][0]["task_id"] = "no-such-task"
    path = tmp_path / "results.json"
    path.write_text(json.dumps(tau2), encoding="utf-8")
    out = tmp_path / "out"
    done = callscope("calibrate", "from-tau2", str(path), "-o", str(out))
    assert done.returncode == 1, done.stderr[-2000:]
    data = json.loads((out / "tau2-diagnostics.json").read_text(encoding="utf-8"))
    assert data["left_out"] == 1
    assert any("'no-such-task' not found" in p for p in data["problems"])
    assert data["rows"][0]["gold_class"] == "TOOL_CALL" and data["rows"][0]["n"] == 16
    assert data["acc_rows"][0]["acc_n"] == 20
