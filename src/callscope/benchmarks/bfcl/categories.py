"""The one table of BFCL multi-turn categories: names, gold action classes, due turns.

Gold classes are the calibration paper's (section 3.1): ``base`` and ``long_context`` reward a
TOOL_CALL, ``miss_param`` an ASK, ``miss_func`` a REFUSE. Every reader of BFCL multi-turn data
(the simulator cases, BFCL's own result trees, the report) takes them from here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from callscope.records import DEFAULT_MAX_STEPS
from callscope.types import ASK, REFUSE, TOOL_CALL

#: short names in the order tables show them
CATEGORIES: tuple[str, ...] = ("base", "miss_param", "miss_func", "long_context")
#: short names in BFCL's own order (its data files and ``bfcl generate``): how cases load
FILE_ORDER: tuple[str, ...] = ("base", "long_context", "miss_param", "miss_func")
PREFIX = "multi_turn_"

GOLD_CLASS: dict[str, str] = {
    "base": TOOL_CALL,
    "miss_param": ASK,
    "miss_func": REFUSE,
    "long_context": TOOL_CALL,
}

#: ``bfcl_eval.constants.default_prompts.MAXIMUM_STEP_LIMIT``
MAXIMUM_STEP_LIMIT = DEFAULT_MAX_STEPS


def short_category(category: str) -> str:
    """``multi_turn_base`` -> ``base``; other names unchanged."""
    return category.strip().removeprefix(PREFIX)


def full_category(category: str) -> str:
    """``base`` -> ``multi_turn_base``; full names unchanged."""
    return PREFIX + short_category(category)


def category_key(category: str) -> tuple[int, str]:
    """Sort key: BFCL's categories in :data:`CATEGORIES` order, then any other name."""
    short = short_category(category)
    rank = CATEGORIES.index(short) if short in CATEGORIES else len(CATEGORIES)
    return rank, category


def gold_class(category: str) -> str:
    """Gold class of a multi-turn category (with or without the ``multi_turn_`` prefix);
    ``ValueError`` naming the known ones otherwise."""
    try:
        return GOLD_CLASS[short_category(category)]
    except KeyError:
        raise ValueError(
            f"no gold action class known for category {category!r}; known: {sorted(GOLD_CLASS)}"
        ) from None


def due_turns(
    category: str,
    ground_truth: Sequence[Sequence[Any]],
    missed_function: Mapping[Any, Any] | None = None,
) -> list[int]:
    """0-based turns at which the category's gold class is due.

    TOOL_CALL (``base``, ``long_context``): every turn with non-empty gold calls. ASK
    (``miss_param``): the turns whose gold is ``[]``. REFUSE (``miss_func``): the turn before
    each re-injection turn ``k`` listed in ``missed_function`` (the turn asked while the
    function was held out); without ``missed_function``, the empty-gold turns.
    """
    cls = gold_class(category)
    empty = [t for t, gold in enumerate(ground_truth) if not gold]
    if cls == TOOL_CALL:
        return [t for t, gold in enumerate(ground_truth) if gold]
    if cls == REFUSE and missed_function:
        turns = sorted({int(k) - 1 for k in missed_function if str(k).isdigit() and int(k) >= 1})
        if turns:
            return turns
    return empty
