"""Named experiment presets (``callscope experiment --preset NAME``).

``paper``: the SAAG paper's comparison (section 2.4, Table 2) beside callscope's gated mode:
direct / binary / structured / gated feedback at registry scales S = 5/10/15, a budget of
D_max = 15 attempts, greedy decoding (temperature 0, :class:`callscope.models.base.Decoding`'s
default), the embedded 0.5B model on 30 BFCL queries per scale. ``experiments/paper.toml``
holds the same settings as a file (``tests/test_gated_preset.py`` keeps the two equal).

:data:`EXPERIMENT_PRESETS` (old name ``PRESETS``, kept importable) is a read-only :class:`~callscope.core.registry.Registry`; another installed
package adds a preset with an entry point in the ``callscope.experiment_presets`` group whose
object is the experiment file's contents (a dict).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from callscope.core.registry import Registry
from callscope.runs.experiment import Experiment
from callscope.types import MODES

#: preset name -> the experiment file's contents (as ``tomllib`` would read them)
EXPERIMENT_PRESETS: Registry[dict[str, Any]] = Registry(
    "preset",
    entries={
        "paper": {
            "output": "runs/paper",
            "models": ["local:qwen2.5-coder-0.5b"],
            "modes": list(MODES),
            "max_attempts": 15,
            "grounding": "registry",
            "benchmark": {"source": "bfcl", "scales": [5, 10, 15], "n": 30, "seed": 0},
            "run": {"style": "auto", "max_tokens": 256},
        },
    },
    entry_point_group="callscope.experiment_presets",
    unknown="unknown {what} {name!r}; choose from {choices}",
    read_only=True,
)
#: the old name of :data:`EXPERIMENT_PRESETS` (the classifier presets are
#: :data:`callscope.calibration.classify.CLASSIFIER_PRESETS`)
PRESETS = EXPERIMENT_PRESETS


def preset_experiment(name: str, output: Path | None = None) -> Experiment:
    """The :class:`Experiment` of preset ``name`` (``ConfigError`` naming the presets when
    there is no such one), written to ``output`` when given."""
    data = {**EXPERIMENT_PRESETS[name]}
    if output is not None:
        data["output"] = str(output)
    return Experiment.from_dict(data)
