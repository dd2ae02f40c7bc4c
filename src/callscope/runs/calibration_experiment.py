"""Calibration experiments: a panel of models x probes on a multi-turn benchmark, from one
TOML file, into one run store (``callscope calibrate experiment FILE``).

Example ``panel.toml``::

    output = "runs/panel"
    models = [
        "local:qwen2.5-coder-0.5b",
        "local:qwen2.5-coder-1.5b",
        { spec = "openai:my-model", base_url = "http://127.0.0.1:8000/v1", style = "native" },
    ]
    categories = ["base", "miss_param"]
    n = 10                   # cases per category (all when omitted)
    probes = ["baseline"]    # then e.g. "sri"
    benchmark = "bfcl"
    classifier = "default"

    [run]
    style = "auto"           # native | prompt | auto (a model's own `style` wins)
    concurrency = 1
    max_steps = 20
    max_tokens = 512
    timeout = 120
    use_cache = true

Unknown keys are rejected with the nearest valid one (the SAAG experiment's
:func:`~callscope.runs.experiment.check_keys`). Re-running the file resumes every model and
probe where it stopped.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from callscope.runs.experiment import check_keys, read_toml, unknown_key_message

#: the keys a calibration experiment file may hold, per table (``""`` = the top level)
CALIBRATION_KEYS: dict[str, tuple[str, ...]] = {
    "": ("output", "models", "categories", "n", "probes", "benchmark", "classifier", "run"),
    "run": (
        "style",
        "concurrency",
        "max_steps",
        "max_tokens",
        "base_url",
        "api_key",
        "timeout",
        "cache",
        "use_cache",
    ),
}
#: the keys of one model given as a table
MODEL_KEYS: tuple[str, ...] = ("spec", "base_url", "style", "api_key")
STYLES = ("auto", "native", "prompt")


@dataclass(frozen=True)
class PanelModel:
    """One model of the panel: its spec and, when given, its own server and style."""

    spec: str
    base_url: str | None = None
    style: str | None = None
    api_key: str | None = None


def _style(value: Any, where: str) -> str | None:
    if value is None or value == "auto":
        return None
    if value not in STYLES:
        raise ValueError(f"{where}: style must be one of {', '.join(STYLES)}, not {value!r}")
    return str(value)


def _model(entry: Any, i: int) -> PanelModel:
    if isinstance(entry, str) and entry:
        return PanelModel(entry)
    if not isinstance(entry, Mapping):
        raise ValueError(f"models[{i}] must be a spec string or a table with 'spec'")
    for key in sorted(entry):
        if key not in MODEL_KEYS:
            raise ValueError(unknown_key_message(key, f"models[{i}]", MODEL_KEYS))
    if not isinstance(entry.get("spec"), str) or not entry["spec"]:
        raise ValueError(f"models[{i}] has no 'spec' (e.g. spec = \"openai:my-model\")")
    return PanelModel(
        spec=entry["spec"],
        base_url=entry.get("base_url") or None,
        style=_style(entry.get("style"), f"models[{i}]"),
        api_key=entry.get("api_key") or None,
    )


@dataclass
class CalibrationExperiment:
    """A parsed calibration experiment file (see the module docstring)."""

    output: Path
    models: list[PanelModel]
    #: the categories to run; ``None``: every category of the benchmark, in its order
    categories: list[str] | None = None
    n: int | None = None
    probes: list[str] = field(default_factory=lambda: ["baseline"])
    benchmark: str = "bfcl"
    classifier: str = "default"
    style: str | None = None
    concurrency: int = 1
    max_steps: int = 20
    max_tokens: int = 512
    base_url: str | None = None
    api_key: str | None = None
    timeout: float = 120.0
    cache: Path | None = None
    use_cache: bool = True

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], base: Path = Path(".")) -> CalibrationExperiment:
        """An experiment from a parsed TOML file; ``ValueError`` on an unknown key at any level,
        no models, a duplicate model, a bad style, ``n`` or ``concurrency`` below 1."""
        check_keys(d, CALIBRATION_KEYS)
        raw = d.get("models")
        if not raw or not isinstance(raw, list):
            raise ValueError("the experiment names no models (models = [...])")
        models = [_model(m, i) for i, m in enumerate(raw)]
        specs = [m.spec for m in models]
        if len(set(specs)) != len(specs):
            dup = next(s for s in specs if specs.count(s) > 1)
            raise ValueError(f"model {dup!r} is listed twice")
        run = d.get("run", {})
        n = d.get("n")
        if n is not None and (not isinstance(n, int) or n < 1):
            raise ValueError(f"n must be a whole number >= 1, not {n!r}")
        concurrency = int(run.get("concurrency", 1))
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, not {concurrency}")
        cats = d.get("categories")
        probes = d.get("probes", ["baseline"])
        return cls(
            output=base / d.get("output", "runs/calibrate-panel"),
            models=models,
            categories=None
            if cats is None
            else [str(c) for c in ([cats] if isinstance(cats, str) else cats)],
            n=n,
            probes=[str(p) for p in ([probes] if isinstance(probes, str) else probes)],
            benchmark=str(d.get("benchmark", "bfcl")),
            classifier=str(d.get("classifier", "default")),
            style=_style(run.get("style"), "[run]"),
            concurrency=concurrency,
            max_steps=int(run.get("max_steps", 20)),
            max_tokens=int(run.get("max_tokens", 512)),
            base_url=run.get("base_url") or None,
            api_key=run.get("api_key") or None,
            timeout=float(run.get("timeout", 120)),
            cache=base / run["cache"] if run.get("cache") else None,
            use_cache=bool(run.get("use_cache", True)),
        )

    @classmethod
    def load(cls, path: str | Path) -> CalibrationExperiment:
        """Read a calibration experiment TOML file (``ValueError`` on TOML syntax errors too)."""
        path = Path(path)
        return cls.from_dict(read_toml(path), base=path.parent)
