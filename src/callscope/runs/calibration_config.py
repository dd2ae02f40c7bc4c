"""The settings a calibrate run directory keeps per model: those that change a conversation's
outcome, stored in the run's meta (``calibrate_config:<model>``) by the first run and checked
by every later one, as ``run`` keeps its own (:func:`callscope.runs.runner._check_config`).

Resuming a directory with other settings would add conversations of another configuration to
the ones stored and report them as one run (``0 ran, 12 already done`` under a new
``--max-steps``): it is refused, naming the settings that differ. The fixed settings
(:data:`FIXED`): the resolved prompt ``style`` (native or prompt), ``max_steps``, the
``decoding`` (temperature, seed, ``max_tokens``) and the ``benchmark`` the cases come from.
The probe, the cases asked for (``--categories``, ``--n``), the classifier preset and the
grounding mode are not among them: conversations are stored per probe, more cases may be
added on resume, and the diagnosis and the stage mix are recomputed from the stored
conversations. A directory written before the settings were stored (no meta key) is accepted
and its settings stored."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from callscope.models.base import Decoding
from callscope.store.run_store import RunStore

#: the settings of a calibrate run that change a conversation's outcome
FIXED: tuple[str, ...] = ("style", "max_steps", "decoding", "benchmark")

#: the prefix of the store meta key holding a model's calibrate settings
CONFIG_META_PREFIX = "calibrate_config:"

#: what each fixed setting is called on the command line, for the refusal's hint
OPTION_NAMES: dict[str, str] = {
    "style": "--style",
    "max_steps": "--max-steps",
    "decoding": "--max-tokens",
    "benchmark": "--benchmark",
}


def calibrate_config(
    style: str | None, max_steps: int, decoding: Decoding | None, benchmark: str
) -> dict[str, Any]:
    """The fixed settings of one calibrate run as stored (``style`` ``None``: not known yet,
    the backend's own; left out, so not compared)."""
    config: dict[str, Any] = {
        "max_steps": int(max_steps),
        "decoding": (decoding or Decoding()).to_dict(),
        "benchmark": benchmark,
    }
    if style is not None:
        config["style"] = style
    return config


def check_calibrate_config(
    store: RunStore, model: str, config: dict[str, Any], *, record: bool = True
) -> None:
    """``ValueError`` when the run directory of ``store`` holds ``model`` run with other
    values of the settings in ``config`` (only those it holds are compared); else, with
    ``record``, store ``config`` as the model's settings (merged over what is stored)."""
    key = CONFIG_META_PREFIX + model
    old = store.get_meta(key)
    if isinstance(old, dict):
        diffs = [k for k in FIXED if k in config and k in old and old[k] != config[k]]
        if diffs:
            raise ValueError(config_refusal(store.run_dir, model, old, diffs))
    if record:
        store.set_meta(key, {**(old if isinstance(old, dict) else {}), **config})


def config_refusal(run_dir: Path, model: str, old: dict[str, Any], diffs: list[str]) -> str:
    """The one line refusing a calibrate run of other settings: what differs, what the
    directory holds and what to do."""
    held = ", ".join(f"{k}={old.get(k)!r}" for k in diffs)
    options = ", ".join(dict.fromkeys(OPTION_NAMES[k] for k in diffs))
    return (
        f"run directory {run_dir} already holds model {model!r} calibrated with different "
        f"{', '.join(diffs)} ({held}); re-run with the same {options} to resume it, or use a "
        "new output directory"
    )
