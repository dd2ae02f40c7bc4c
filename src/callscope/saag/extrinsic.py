"""Extrinsic metrics against a gold call: name match and argument precision / recall / F1.

The SAAG paper's extrinsic metrics (section 3, "Metric classes"; Table 2): computed against the
ground truth after the cascade, never inside the correction loop, and independent of the
grounding mode (the cascade's verdict plays no part). For a call with predicted arguments
``P`` and the gold's relevant arguments ``G``, with ``C ⊆ P`` the arguments whose value the
gold accepts (none when the name is wrong)::

    name_match = (ŷ_name = y_name)
    precision = |C| / |P|      recall = |C| / |G|      F1 = 2 precision recall / (precision + recall)

When both ``P`` and ``G`` are empty, precision and recall are 1 if the name matches, else 0;
when only ``P`` is empty precision is 0, when only ``G`` is empty recall is 1 if the name
matches, else 0; F1 is 0 when precision + recall is 0.

Two kinds of gold are understood:

* ``{"name", "arguments"}`` (Glaive-style): one expected value per argument, compared
  leniently (strings case-insensitive after strip, numbers within 1e-6 relative, numeric
  strings equal to numbers, bools equal to "true"/"false", lists in order, objects key by key).
* ``{"name", "acceptable": {param: [values...]}}`` (BFCL-style): any acceptable value counts,
  ``""`` in a list means the parameter may be omitted, and values are compared with BFCL's
  semantics (exact types except int for float and tuple as list; strings normalised by
  lower-casing and removing spaces and ``,./-_*^``, ``'`` read as ``"``).
"""

from __future__ import annotations

import math
import re
import threading
from collections import OrderedDict
from typing import Any, NamedTuple, TypedDict

from callscope.core.memo import keeping, text_cache
from callscope.saag.cascade import registry_token, required_params
from callscope.saag.grounding import is_number
from callscope.types import ToolCall

_BFCL_STRIP = re.compile(r"[ ,./\-_*^]")


def _as_number(v: Any) -> float | None:
    if is_number(v):
        return float(v) if math.isfinite(float(v)) else None
    if isinstance(v, str):
        try:
            f = float(v.strip().replace(",", ""))
        except (ValueError, OverflowError):
            return None
        return f if math.isfinite(f) else None
    return None


def _num_eq(a: float, b: float, rel: float = 1e-6) -> bool:
    return a == b or abs(a - b) <= rel * max(abs(a), abs(b))


def values_equal(pred: Any, gold: Any) -> bool:
    """Lenient equality used for ``{"name","arguments"}`` gold."""
    try:
        if isinstance(pred, bool) or isinstance(gold, bool):
            other = gold if isinstance(pred, bool) else pred
            flag = pred if isinstance(pred, bool) else gold
            if isinstance(other, bool):
                return other == flag
            return isinstance(other, str) and other.strip().lower() == str(flag).lower()
        if pred is None or gold is None:
            return pred is None and gold is None
        if is_number(pred) or is_number(gold):
            a, b = _as_number(pred), _as_number(gold)
            return a is not None and b is not None and _num_eq(a, b)
        if isinstance(pred, str) and isinstance(gold, str):
            return pred.strip().lower() == gold.strip().lower()
        if isinstance(pred, list | tuple) and isinstance(gold, list | tuple):
            return len(pred) == len(gold) and all(
                values_equal(p, q) for p, q in zip(pred, gold, strict=True)
            )
        if isinstance(pred, dict) and isinstance(gold, dict):
            return set(pred) == set(gold) and all(values_equal(pred[k], gold[k]) for k in gold)
    except OverflowError:
        return False
    return False


def bfcl_string_form(s: str) -> str:
    """BFCL's comparison form of a string: lowercased, without spaces and ``,./-_*^``, single
    quotes as double (``bfcl_eval``'s AST checker ``standardize_string``). The forms of the
    last few thousand short strings are remembered (gold values are compared again and
    again)."""
    if type(s) is str and len(s) <= _FORM_MEMO_CHARS:
        return _string_form_memo(s)
    return _BFCL_STRIP.sub("", s.lower()).replace("'", '"')


#: strings up to this long have their BFCL form remembered (:func:`bfcl_string_form`)
_FORM_MEMO_CHARS = 256


@text_cache(8192)
def _string_form_memo(s: str) -> str:
    return _BFCL_STRIP.sub("", s.lower()).replace("'", '"')


def bfcl_values_equal(pred: Any, gold: Any) -> bool:
    """Equality with BFCL's AST-checker semantics (see module docstring)."""
    try:
        if isinstance(gold, bool) or isinstance(pred, bool):
            return isinstance(pred, bool) and isinstance(gold, bool) and pred == gold
        if isinstance(gold, float) and is_number(pred):
            return float(pred) == gold
        if isinstance(gold, int) and not isinstance(gold, bool):
            return isinstance(pred, int) and pred == gold
        if isinstance(gold, str):
            return isinstance(pred, str) and bfcl_string_form(pred) == bfcl_string_form(gold)
        if isinstance(gold, list | tuple):
            return (
                isinstance(pred, list | tuple)
                and len(pred) == len(gold)
                and all(bfcl_values_equal(p, q) for p, q in zip(pred, gold, strict=True))
            )
        if isinstance(gold, dict):
            # BFCL nests acceptable-value lists inside dict answers: {key: [acceptable...]}
            if not isinstance(pred, dict) or not set(pred) <= set(gold):
                return False
            return all(
                _bfcl_accepts(pred[k], v) if k in pred else "" in _as_list(v)
                for k, v in gold.items()
            )
        if gold is None:
            return pred is None
    except OverflowError:
        return False
    return False


def _as_list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else [v]


def _bfcl_accepts(pred: Any, acceptable: Any) -> bool:
    if type(pred) is str:
        # a string equals only a string gold (bfcl_values_equal's one branch for it): its
        # form is computed once, not once per acceptable value
        form = bfcl_string_form(pred)
        return any(isinstance(a, str) and bfcl_string_form(a) == form for a in _as_list(acceptable))
    return any(bfcl_values_equal(pred, a) for a in _as_list(acceptable))


class _GoldView:
    """What :func:`arg_counts` reads of one acceptable-set gold, worked out once per gold
    (issue 49: not once per call): its mandatory parameters and, per parameter, the BFCL
    string forms of its string values."""

    __slots__ = ("gold", "registry", "acceptable", "mandatory", "_forms")

    def __init__(
        self, gold: dict[str, Any], acceptable: dict[str, Any], functions: Any, registry: Any
    ) -> None:
        self.gold = gold
        self.registry = registry  # its token (:func:`_registry`): the view holds no registry
        self.acceptable = acceptable
        mandatory = {k for k, vals in acceptable.items() if "" not in vals}
        mandatory.update(required_params(functions, gold.get("name")))
        self.mandatory = frozenset(mandatory)
        self._forms: dict[str, frozenset[str]] = {}

    def accepts(self, key: str, value: Any) -> bool:
        """:func:`_bfcl_accepts` of ``value`` for parameter ``key``."""
        if type(value) is not str:
            return _bfcl_accepts(value, self.acceptable[key])
        forms = self._forms.get(key)
        if forms is None:
            forms = frozenset(
                bfcl_string_form(a) for a in _as_list(self.acceptable[key]) if isinstance(a, str)
            )
            self._forms[key] = forms
        return bfcl_string_form(value) in forms


#: acceptable-set golds whose view is kept (each entry holds its gold, so its ``id`` is not
#: reused; a gold is not edited once scored)
GOLD_CACHE_SIZE = 8192
_gold_views: OrderedDict[tuple[int, Any], _GoldView] = OrderedDict()
_gold_lock = threading.Lock()


def _gold_view(gold: dict[str, Any], acceptable: dict[str, Any], functions: Any) -> _GoldView:
    registry = _registry(functions)
    if registry is _UNKEYED:
        return _GoldView(gold, acceptable, functions, registry)
    key = (id(gold), registry)
    view = _gold_views.get(key)
    if (
        view is not None
        and view.gold is gold
        and view.registry == registry
        and view.acceptable is acceptable
    ):
        return view
    view = _GoldView(gold, acceptable, functions, registry)
    with _gold_lock:
        _gold_views[key] = view
        while len(_gold_views) > GOLD_CACHE_SIZE:
            _gold_views.popitem(last=False)
    return view


class ExtrinsicScores(TypedDict):
    """The extrinsic metrics of one call (the same keys in a ``score`` row)."""

    name_match: bool
    arg_precision: float
    arg_recall: float
    arg_f1: float


def _prf(correct: int, n_pred: int, n_gold: int, name_ok: bool) -> ExtrinsicScores:
    """Precision, recall and F1 from the counts (the formulas of the module docstring).

    >>> _prf(1, 2, 1, True)
    {'name_match': True, 'arg_precision': 0.5, 'arg_recall': 1.0, 'arg_f1': 0.6666666666666666}
    """
    if n_pred == 0 and n_gold == 0:
        p = r = 1.0 if name_ok else 0.0
    else:
        p = correct / n_pred if n_pred else 0.0
        r = correct / n_gold if n_gold else (1.0 if name_ok else 0.0)
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return {"name_match": name_ok, "arg_precision": p, "arg_recall": r, "arg_f1": f1}


def extrinsic(
    call: ToolCall | None, gold: dict[str, Any], functions: list[dict[str, Any]] | None = None
) -> ExtrinsicScores:
    """``name_match``, ``arg_precision``, ``arg_recall``, ``arg_f1`` of ``call`` against ``gold``
    (formulas in the module docstring; SAAG paper, section 3, extrinsic metrics).

    With ``{"name", "arguments"}`` gold, ``G`` is the gold's arguments and values compare by
    :func:`values_equal`. With acceptable-set gold, ``G`` is the mandatory parameters and the
    correctly given optional ones; a parameter is mandatory when ``""`` is not among its
    values or when the gold function's schema (looked up in ``functions``) lists it as
    required, as BFCL's checker does; values compare by :func:`bfcl_values_equal`. No call
    scores 0 everywhere.

    >>> gold = {"name": "tip", "arguments": {"bill": 84.5, "percent": 15}}
    >>> extrinsic(ToolCall("tip", {"bill": "84.50", "currency": "USD"}), gold)
    {'name_match': True, 'arg_precision': 0.5, 'arg_recall': 0.5, 'arg_f1': 0.5}
    >>> bfcl = {"name": "tip", "acceptable": {"bill": [84.5], "percent": [15, ""]}}
    >>> extrinsic(ToolCall("tip", {"bill": 84.5}), bfcl)["arg_recall"]
    1.0
    """
    if call is None:
        return {"name_match": False, "arg_precision": 0.0, "arg_recall": 0.0, "arg_f1": 0.0}
    key = _score_key(call, gold, functions)
    if key is not None:
        hit = _scores.get(key)
        if hit is not None and hit[0] is gold:
            return hit[1].copy()  # type: ignore[return-value]
    counts = arg_counts(call, gold, functions)
    scores = _prf(counts.correct, counts.predicted, counts.expected, counts.name_match)
    if key is not None:
        with _gold_lock:
            _scores[key] = (gold, scores.copy())  # type: ignore[arg-type]
            while len(_scores) > SCORE_CACHE_SIZE:
                _scores.popitem(last=False)
    return scores


#: scores kept for repeated requests (the same call against the same gold and registry
#: objects: a case set scored again, a correction loop), oldest out first
SCORE_CACHE_SIZE = 16384
#: key -> (gold, scores): a key names the registry by its token (:func:`_registry`)
_scores: OrderedDict[tuple[Any, ...], tuple[Any, dict[str, Any]]] = OrderedDict()
#: :func:`_registry` of a registry no memo may key (not indexable): nothing of it is kept
_UNKEYED = object()


def _registry(functions: Any) -> Any:
    """How the memos here name ``functions``: its index's token
    (:func:`~callscope.saag.cascade.registry_token`: a memo holds no registry), ``None`` for
    no registry, :data:`_UNKEYED` when it is kept by none (a registry no one keeps,
    :func:`~callscope.core.memo.transient`, or one whose entries are not specs)."""
    if functions is None:
        return None
    if not keeping():
        return _UNKEYED
    try:
        token = registry_token(functions)
    except (AttributeError, TypeError):  # entries that are not specs
        return _UNKEYED
    return _UNKEYED if token is None else token


def _score_key(call: ToolCall, gold: dict[str, Any], functions: Any) -> tuple[Any, ...] | None:
    """What a call's extrinsic scores depend on, or ``None`` when they are not kept (a name
    that is not a string, arguments that are not a plain dict or print long, a registry no
    memo keys)."""
    if type(call.name) is not str or type(call.arguments) is not dict or type(gold) is not dict:
        return None
    registry = _registry(functions)
    if registry is _UNKEYED:
        return None
    try:
        args = repr(call.arguments)  # types apart: 1, 1.0, True and "1" differ
    except (RecursionError, ValueError):
        return None
    if len(args) > 2048:
        return None
    return (id(gold), registry, call.name, args)


class ArgCounts(NamedTuple):
    """The counts behind :func:`extrinsic`: ``correct`` = |P ∩ G| (right values), ``predicted``
    = |P|, ``expected`` = |G| (module docstring), and whether the names match."""

    correct: int
    predicted: int
    expected: int
    name_match: bool


def arg_counts(
    call: ToolCall | None, gold: dict[str, Any], functions: list[dict[str, Any]] | None = None
) -> ArgCounts:
    """The argument counts of ``call`` against ``gold`` (:func:`extrinsic`'s definitions);
    without a call, nothing predicted and ``expected`` the gold's mandatory arguments (what a
    missing call leaves out). Answers of several calls add these counts over their matched
    pairs (:mod:`callscope.saag.answer`).

    >>> arg_counts(ToolCall("tip", {"bill": 84.5, "note": "x"}), {"name": "tip", "arguments": {"bill": 84.5}})
    ArgCounts(correct=1, predicted=2, expected=1, name_match=True)
    >>> arg_counts(None, {"name": "tip", "acceptable": {"bill": [84.5], "percent": [15, ""]}})
    ArgCounts(correct=0, predicted=0, expected=1, name_match=False)
    """
    pred = call.arguments if call is not None else {}
    name_ok = call is not None and call.name == gold.get("name")
    acceptable = gold.get("acceptable")
    if isinstance(acceptable, dict):
        view = _gold_view(gold, acceptable, functions)
        correct_keys = (
            {k for k, v in pred.items() if k in acceptable and view.accepts(k, v)}
            if name_ok
            else set()
        )
        relevant = view.mandatory | correct_keys
        return ArgCounts(len(correct_keys & relevant), len(pred), len(relevant), name_ok)
    gold_args = gold.get("arguments") or {}
    n_correct = sum(
        1 for k, v in pred.items() if name_ok and k in gold_args and values_equal(v, gold_args[k])
    )
    return ArgCounts(n_correct, len(pred), len(gold_args), name_ok)


def is_correct(
    call: ToolCall | None, gold: dict[str, Any], functions: list[dict[str, Any]] | None = None
) -> bool:
    """Name and every argument right, nothing missing, nothing extra: name match with
    precision and recall both 1.

    >>> is_correct(ToolCall("tip", {"bill": 84.5}), {"name": "tip", "arguments": {"bill": 84.5}})
    True
    """
    m = extrinsic(call, gold, functions)
    return bool(m["name_match"]) and m["arg_precision"] == 1.0 and m["arg_recall"] == 1.0
