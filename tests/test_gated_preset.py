"""The paper preset (``callscope experiment --preset paper``) and its file form agree."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from callscope.models.base import Decoding
from callscope.runs.presets import PRESETS, preset_experiment

ROOT = Path(__file__).resolve().parents[1]


def test_the_preset_and_experiments_paper_toml_hold_the_same_settings() -> None:
    with (ROOT / "experiments" / "paper.toml").open("rb") as fh:
        data = tomllib.load(fh)
    preset = PRESETS["paper"]
    assert {k: v for k, v in data.items() if k != "output"} == {
        k: v for k, v in preset.items() if k != "output"
    }
    exp = preset_experiment("paper", Path("out/p"))
    assert exp.modes == ["direct", "binary", "structured", "gated"]
    assert (exp.scales, exp.max_attempts, exp.n, exp.output) == ([5, 10, 15], 15, 30, Path("out/p"))
    assert Decoding().temperature == 0.0  # the experiment decodes with the default


def test_the_comparison_files_share_the_presets_cases() -> None:
    bench = PRESETS["paper"]["benchmark"]
    files = sorted((ROOT / "experiments" / "results").glob("paper-*.toml"))
    assert len(files) == 4
    for path in files:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
        assert data["benchmark"] == bench, path.name
        assert data["max_attempts"] == 15 and data["run"]["max_tokens"] == 256


def test_an_unknown_preset_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="choose from paper"):
        preset_experiment("papr")


def test_the_cli_takes_a_preset_or_a_file_not_both(tmp_path) -> None:
    from typer.testing import CliRunner

    from callscope.cli import app
    from callscope.cli.common import EXIT_USAGE

    def invoke(*args: str):
        return CliRunner().invoke(app, list(args))

    r = invoke("experiment", "--preset", "nope")
    assert r.exit_code == EXIT_USAGE and "unknown preset 'nope'" in r.output
    r = invoke("experiment")
    assert r.exit_code == EXIT_USAGE and "--preset" in r.output
    toml = tmp_path / "e.toml"
    toml.write_text('models = ["replay:x"]\n', encoding="utf-8")
    r = invoke("experiment", str(toml), "--preset", "paper")
    assert r.exit_code == EXIT_USAGE and "one of them" in r.output


def test_run_accepts_the_gated_modes_and_names_them_when_wrong(tmp_path) -> None:
    from scripted import Scripted

    from callscope.runs.runner import run_cases
    from callscope.store.run_store import RunStore
    from callscope.types import Case

    store = RunStore(tmp_path / "run")
    c = Case(id="c", query="q", functions=[{"name": "f", "parameters": {}}])
    with pytest.raises(ValueError, match="gated-nobest"):
        run_cases(Scripted(["{}"]), [c], store, modes=["gatd"], show_progress=False)
    s = run_cases(
        Scripted(['{"name": "f", "arguments": {}}'], repeat_last=True, native=False),
        [c],
        store,
        modes=["gated-nokeep"],
        show_progress=False,
    )
    store.close()
    assert s.n == {"gated-nokeep": 1}
