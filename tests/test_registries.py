"""The registries that replaced if-chains: model backends, benchmark sources, metric specs,
probes and multi-turn benchmarks."""

from __future__ import annotations

import pytest

from callscope.models.base import BackendOptions, ChatModel, Decoding, RequestContext
from callscope.models.registry import (
    BACKENDS,
    Backend,
    backend_forms,
    backend_help,
    load_model,
    register_backend,
)
from callscope.types import ModelReply

# ----------------------------------------------------------------------------- backends


class Echo(ChatModel):
    """A backend defined outside callscope: answers with its own spec and the context."""

    def __init__(self, spec: str) -> None:
        self.spec = spec
        self.supports_native_tools = False

    def chat(
        self,
        messages,
        tools=None,
        decoding: Decoding | None = None,
        context: RequestContext | None = None,
    ) -> ModelReply:
        return ModelReply(text=f"{self.spec} {context.case_id if context else '-'}")


def test_builtin_backends_in_help_order():
    assert list(BACKENDS) == ["local", "gguf", "ollama", "openai", "replay"]
    assert backend_help() == (
        "local:qwen2.5-coder-0.5b | local:qwen2.5-coder-1.5b | gguf:/path/to/model.gguf | "
        "ollama:<model> | openai:<model> | replay:<file.jsonl>"
    )
    assert backend_forms()[0][0] == "local:qwen2.5-coder-0.5b (default)"


def test_a_registered_backend_is_loadable_and_listed():
    seen: list[tuple[str, BackendOptions]] = []

    def factory(rest: str, options: BackendOptions) -> ChatModel:
        seen.append((rest, options))
        return Echo(options.spec)

    register_backend(Backend("echo", ("echo:<name>",), "test backend", factory))
    try:
        model = load_model("echo:abc", timeout=7, flavour="x")
        assert model.chat([], context=RequestContext(case_id="c1")).text == "echo:abc c1"
        rest, options = seen[0]
        assert (rest, options.timeout, dict(options.extra)) == ("abc", 7, {"flavour": "x"})
        assert "echo:<name>" in backend_help()
        with pytest.raises(ValueError, match="echo:<name>"):
            load_model("nope:x")
    finally:
        BACKENDS.unregister("echo")


def test_backend_prefix_is_checked():
    with pytest.raises(ValueError, match="without ':'"):
        register_backend(Backend("a:b", (), "", lambda r, o: Echo(r)))


# ----------------------------------------------------------------------------- sources


def test_sources_registry_and_error():
    from callscope.benchmarks.sources import SOURCES, load_source, source_forms

    assert list(SOURCES) == ["bfcl", "glaive"]
    assert [f for f, _ in source_forms()] == ["bfcl", "glaive:PATH"]
    for bad in ("x", "bfcl:extra", "glaive"):
        with pytest.raises(ValueError, match="use 'bfcl' or 'glaive:PATH'"):
            load_source(bad)


# ----------------------------------------------------------------------------- metrics


def test_metric_specs_feed_every_list():
    from callscope.report import aggregate as agg
    from callscope.report.compare import HEADLINE_METRICS
    from callscope.report.outcome import _EXTRINSIC_KEY, EXTRINSIC, INTRINSIC
    from callscope.saag import score
    from callscope.saag.metrics import METRIC_SPECS

    intrinsic = ("fnem", "ncs", "rpr", "pds", "spr", "avem", "qslo", "vhr")
    assert score.METRICS == INTRINSIC == intrinsic
    assert EXTRINSIC == ("name_acc", "arg_precision", "arg_recall", "arg_f1")
    assert score.GOLD_KEYS == ("name_match", "arg_precision", "arg_recall", "arg_f1", "solved")
    assert _EXTRINSIC_KEY == {"name_acc": "name_match"}
    outcomes = ("solve_rate", "attempts_to_solve")
    expected = intrinsic + EXTRINSIC + outcomes
    assert expected == agg.ACROSS_METRICS
    assert HEADLINE_METRICS == (
        ("solve_rate", "solve rate"),
        ("name_acc", "name acc"),
        ("arg_f1", "arg F1"),
        ("vhr", "VHR"),
        ("avem", "AVEM"),
    )
    assert [m.stage for m in METRIC_SPECS if m.kind == "intrinsic"] == [1, 1, 2, 2, 2, 3, 3, 3]
    assert all("SAAG section" in m.description for m in METRIC_SPECS)


def test_every_metric_has_its_label_in_the_aggregate_table_header():
    import pandas as pd

    from callscope.report.tables import aggregate_table
    from callscope.saag.metrics import METRIC_SPECS

    row: dict[str, object] = {"model": "m", "mode": "direct", "n_scales": 1}
    for spec in METRIC_SPECS:
        row |= {spec.key: 0.5, f"{spec.key}_std": 0.1}
    header = aggregate_table(pd.DataFrame([row])).columns
    assert header[:3] == ["model", "mode", "n_scales"]
    # issue 32: across scales the solve rate says it is the mean of the per-scale rates
    labels = {"solve_rate": "Solve rate (mean of scales)"}
    assert header[3:] == [labels.get(spec.key, spec.label) for spec in METRIC_SPECS]


# ----------------------------------------------------------------------------- probes


def test_probe_help_lists_the_registry():
    from callscope.calibration.probes import PROBES, probe_help, probe_names

    assert probe_names() == tuple(PROBES)
    assert probe_help() == " | ".join(PROBES)
    assert probe_help().startswith("sri | sri-no-history")


# ----------------------------------------------------------------------------- multi-turn


def test_bfcl_implements_the_multi_turn_protocol():
    pytest.importorskip("bfcl_eval")
    from callscope.benchmarks.bfcl.multi_turn import load_multi_turn
    from callscope.benchmarks.protocol import (
        Environment,
        MultiTurnBenchmark,
        MultiTurnCase,
        benchmark_names,
        get_benchmark,
    )
    from callscope.types import ASK

    assert "bfcl" in benchmark_names()
    bench = get_benchmark("bfcl")
    assert isinstance(bench, MultiTurnBenchmark)
    [case] = bench.cases(["miss_param"])[:1]
    direct = load_multi_turn(("multi_turn_miss_param",))[0]
    assert isinstance(case, MultiTurnCase)
    assert case.to_dict() == direct.to_dict()
    assert bench.gold_class(case) == ASK
    assert bench.due_turns(case) == direct.due_turns()
    assert bench.tools_at(case, 0) == direct.functions_at(0)
    assert isinstance(bench.environment(case), Environment)
    with pytest.raises(ValueError, match="registered: bfcl"):
        get_benchmark("nope")
