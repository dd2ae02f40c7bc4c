"""Safe execution of model tool calls against fresh BFCL simulator instances.

Guarantees a user relies on:

* **Nothing the model wrote is evaluated.** A call reaches a simulator only when its name
  matches ``\\A[A-Za-z_][A-Za-z0-9_]*\\Z``, is among the tools available at that turn and is a
  public method of an involved simulator; every argument name is a Python identifier (not a
  keyword) and every value is a literal of an exact built-in type (``str``, ``int``, finite
  ``float``, ``bool``, ``None``, ``list``, ``dict`` with scalar keys), nested at most
  :data:`~callscope.parse.MAX_ARGUMENT_DEPTH` deep. The method is then called directly with keyword arguments (no
  ``eval``). The call string kept for BFCL's checker (:attr:`ExecResult.call`) is rebuilt from
  the validated values with ``repr`` (the way BFCL's own decoders write them), never copied
  from model text.
* **Rejected calls** get an error text the model can read (``Error: function 'x' is not
  available``, ``Error: argument 'a' is not a literal``...) and a machine-readable ``reason``.
* **Bounded executions.** Arguments are size-capped (:data:`MAX_ITEMS` values,
  :data:`MAX_INT_BITS`-bit integers, :data:`MAX_CALL_TEXT_CHARS` of rebuilt text) and calls
  whose cost grows with an argument's value (``power`` of two integers, ``logarithm`` /
  ``square_root`` precision, ``round_number`` places) are refused beyond their bound
  (:data:`COST_GUARDS`) with ``Error: call to 'f' exceeds the execution bounds (...)``, reason
  ``too_costly``. The precision such calls set (``mpmath.mp``, the ``decimal`` context) is
  restored after every call and every sandbox (:func:`numeric_state`).
* **Fresh state per environment.** :class:`SafeEnv` builds its own instances with BFCL's
  ``_load_scenario(deepcopy(config), long_context=...)`` (as ``execute_multi_turn_func_call``
  does) and then deep-copies them, so that no instance shares objects with simulator module
  globals (long-context TravelAPI instances otherwise hold the module's own credit-card and
  booking dicts). Nothing is put in BFCL's module globals.
* **Module globals are restored.** :func:`bfcl_sandbox` (used around every execution here and
  around every checker call in :mod:`callscope.benchmarks.bfcl.grade`) compares every module-level
  ``dict``/``list`` of the simulator modules with a pristine copy afterwards and restores, in
  place, any that changed (VehicleControlAPI writes into ``LONG_WEATHER_EXTENSION``); it also
  deletes the instances BFCL's executor left in ``multi_turn_utils`` globals under a given
  model-name prefix.

Results are formatted as BFCL's executor formats them: strings as they are, dicts with
``json.dumps`` (``str`` when that fails), anything else with ``str``; an exception becomes
``"Error during execution: <message>"``.
"""

from __future__ import annotations

import copy
import decimal
import importlib
import inspect
import json
import keyword
import math
import re
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from callscope.benchmarks.bfcl.multi_turn import SIMULATOR_MODULES, SIMULATOR_PACKAGE, MTCase
from callscope.core.registry import Registry
from callscope.parse import MAX_ARGUMENT_DEPTH
from callscope.records import ExecResult
from callscope.types import ToolCall

#: a function or argument name: the WHOLE string (``\Z``, not ``$``, which also matches before
#: a final newline, so ``"folder\n"`` would pass and BFCL's checker would read ``folder``)
NAME_RE = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]*\Z")
MAX_ITEMS = 100_000
#: the largest integer argument, in bits (about 4,200 digits: under Python's 4,300-digit
#: ``int``/``str`` conversion limit, so every accepted value can be rebuilt with ``repr`` and
#: read back by BFCL's checker)
MAX_INT_BITS = 14_000
#: execution bounds of the simulators' value-driven costs (see :data:`COST_GUARDS`): the
#: largest exact integer power, in bits, and the largest precision or rounding position, in
#: digits, a call may ask for (BFCL's own data asks for at most a few dozen)
MAX_POWER_RESULT_BITS = 1 << 16
MAX_PRECISION_DIGITS = 1_000
#: the longest call text rebuilt for BFCL's checker
MAX_CALL_TEXT_CHARS = 1_000_000
#: names BFCL's executor refuses before eval (kept so results match it)
BFCL_BLOCKED = frozenset({"kill", "exit", "quit", "remove", "unlink", "popen", "Popen", "run"})
STATELESS_CLASSES = frozenset({"MathAPI"})
_UTILS_MODULE = "bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils"
_LONG_CONTEXT_MODULE = f"{SIMULATOR_PACKAGE}.long_context"

#: one lock for everything that touches BFCL modules (executor globals, module dicts)
BFCL_LOCK = threading.RLock()


class CallRejected(ValueError):
    """A call failed validation; ``reason`` is a short code, the message is model-readable."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


# ------------------------------------------------------------------------------ validation


def _check_literal(value: Any, depth: int, budget: list[int]) -> None:
    budget[0] -= 1
    if budget[0] < 0:
        raise CallRejected("argument is too large", "too_large")
    if depth > MAX_ARGUMENT_DEPTH:
        raise CallRejected("argument is nested too deeply", "too_deep")
    t = type(value)
    if t is int and value.bit_length() > MAX_INT_BITS:
        raise CallRejected(f"integer is longer than {MAX_INT_BITS} bits", "too_large")
    if value is None or t in (str, int, bool):
        return
    if t is float:
        if not math.isfinite(value):
            raise CallRejected("argument is not a finite number", "not_literal")
        return
    if t is list:
        for item in value:
            _check_literal(item, depth + 1, budget)
        return
    if t is dict:
        for key, item in value.items():
            if not (
                key is None
                or type(key) in (str, int, bool)
                or (type(key) is float and math.isfinite(key))
            ):
                raise CallRejected("argument has a non-literal dict key", "not_literal")
            if type(key) is int and key.bit_length() > MAX_INT_BITS:
                raise CallRejected(f"integer is longer than {MAX_INT_BITS} bits", "too_large")
            _check_literal(item, depth + 1, budget)
        return
    raise CallRejected(f"value of type {t.__name__} is not a literal", "not_literal")


def _number(value: Any) -> float | int | None:
    """``value`` when it is an ``int`` or ``float`` (not ``bool``), else ``None``."""
    return value if type(value) in (int, float) else None


def _power_guard(args: dict[str, Any]) -> str | None:
    """``MathAPI.power`` computes ``base ** exponent``: with two integers that is exact and
    costs time and memory in the result's size, ``exponent * log2(|base|)`` bits."""
    base, exponent = _number(args.get("base")), _number(args.get("exponent"))
    if type(base) is not int or type(exponent) is not int or exponent <= 0 or abs(base) < 2:
        return None  # float powers overflow at once; 0, 1, -1 and negative exponents are cheap
    if exponent * math.log2(abs(base)) > MAX_POWER_RESULT_BITS:
        return f"the exact result would exceed {MAX_POWER_RESULT_BITS} bits"
    return None


def _precision_guard(args: dict[str, Any]) -> str | None:
    """``MathAPI.logarithm`` (``mpmath.mp.dps``) and ``square_root`` (``decimal`` precision)
    cost time growing with the precision asked for."""
    precision = _number(args.get("precision"))
    if precision is not None and abs(precision) > MAX_PRECISION_DIGITS:
        return f"precision above {MAX_PRECISION_DIGITS} digits"
    return None


def _round_guard(args: dict[str, Any]) -> str | None:
    """``MathAPI.round_number`` rounds an integer to ``decimal_places < 0`` via
    ``10 ** -decimal_places``."""
    places = _number(args.get("decimal_places"))
    if places is not None and abs(places) > MAX_PRECISION_DIGITS:
        return f"decimal_places beyond {MAX_PRECISION_DIGITS} digits"
    return None


#: function name -> guard: the reason a call would exceed the execution bounds, or ``None``.
#: Checked by :func:`validate_call`, so an over-bound call is refused before it reaches a
#: simulator and is never replayed by BFCL's checker; add one with :func:`register_cost_guard`
#: (or, from another installed package, an entry point in the ``callscope.cost_guards``
#: group named after the function).
COST_GUARDS: Registry[Callable[[dict[str, Any]], str | None]] = Registry(
    "cost guard", entry_point_group="callscope.cost_guards"
)


def register_cost_guard(name: str, guard: Callable[[dict[str, Any]], str | None]) -> None:
    """Bound the cost of calls to the simulator function ``name`` (see :data:`COST_GUARDS`)."""
    COST_GUARDS.register(name, guard)


register_cost_guard("power", _power_guard)
register_cost_guard("logarithm", _precision_guard)
register_cost_guard("square_root", _precision_guard)
register_cost_guard("round_number", _round_guard)


def check_literal(value: Any) -> None:
    """Raise :class:`CallRejected` unless ``value`` is an acceptable literal."""
    _check_literal(value, 0, [MAX_ITEMS])


def rebuild_call(name: str, arguments: dict[str, Any]) -> str:
    """``name(k=repr(v), ...)`` from validated values (BFCL's decoder format)."""
    return f"{name}({','.join(f'{k}={v!r}' for k, v in arguments.items())})"


def validate_call(call: ToolCall, available: set[str] | frozenset[str]) -> str:
    """The rebuilt call string of an acceptable call; raises :class:`CallRejected`.

    Order of checks: name syntax, availability, argument names, argument values, the
    function's execution bounds (:data:`COST_GUARDS`), the rebuilt text's length.
    """
    name = call.name
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise CallRejected(f"Error: {name!r} is not a valid function name", "bad_name")
    if name not in available:
        raise CallRejected(f"Error: function '{name}' is not available", "unavailable")
    args = call.arguments
    if type(args) is not dict:
        raise CallRejected(f"Error: arguments of '{name}' are not an object", "not_literal")
    for key, value in args.items():
        if type(key) is not str or not NAME_RE.match(key) or keyword.iskeyword(key):
            raise CallRejected(f"Error: {key!r} is not a valid argument name", "bad_argument_name")
        try:
            check_literal(value)
        except CallRejected as exc:
            raise CallRejected(
                f"Error: argument '{key}' is not a literal ({exc})", exc.reason
            ) from None
    guard = COST_GUARDS.get(name, None)
    bound = guard(args) if guard is not None else None
    if bound is not None:
        raise CallRejected(
            f"Error: call to '{name}' exceeds the execution bounds ({bound})", "too_costly"
        )
    text = rebuild_call(name, args)
    if len(text) > MAX_CALL_TEXT_CHARS:
        raise CallRejected(f"Error: call to '{name}' is too large", "too_large")
    return text


def format_result(value: Any) -> str:
    """BFCL's formatting of an execution result."""
    if type(value) is str:
        return value
    if type(value) is dict:
        try:
            return json.dumps(value)
        except (TypeError, ValueError):
            return str(value)
    return str(value)


# ------------------------------------------------------------------------- module globals


_pristine: dict[tuple[str, str], Any] | None = None


def _simulator_modules() -> list[Any]:
    names = [_LONG_CONTEXT_MODULE] + [
        f"{SIMULATOR_PACKAGE}.{m}" for m in SIMULATOR_MODULES.values()
    ]
    return [importlib.import_module(n) for n in names]


def _tracked_globals() -> Iterator[tuple[tuple[str, str], Any]]:
    for module in _simulator_modules():
        for key, value in vars(module).items():
            if not key.startswith("__") and type(value) in (dict, list):
                yield (module.__name__, key), value


def _ensure_pristine() -> dict[tuple[str, str], Any]:
    global _pristine
    if _pristine is None:
        _pristine = {key: copy.deepcopy(value) for key, value in _tracked_globals()}
    return _pristine


def restore_module_globals() -> list[str]:
    """Restore, in place, every tracked simulator module dict/list that differs from its
    pristine copy; return their names (``module:NAME``)."""
    pristine = _ensure_pristine()
    restored: list[str] = []
    for key, value in _tracked_globals():
        if key in pristine and value != pristine[key]:
            fresh = copy.deepcopy(pristine[key])
            if type(value) is dict:
                value.clear()
                value.update(fresh)
            else:
                value[:] = fresh
            label = f"{key[0].rsplit('.', 1)[-1]}:{key[1]}"
            restored.append(label)
    return restored


def executor_instance_names(prefix: str = "") -> list[str]:
    """Names of simulator instances BFCL's executor holds in its module globals."""
    utils = importlib.import_module(_UTILS_MODULE)
    return [k for k in vars(utils) if k.endswith("_instance") and k.startswith(prefix)]


def clear_executor_instances(prefix: str) -> int:
    """Delete BFCL executor instances whose global name starts with ``prefix``."""
    utils = importlib.import_module(_UTILS_MODULE)
    names = executor_instance_names(prefix)
    for k in names:
        del vars(utils)[k]
    return len(names)


def unique_model_name(tag: str = "") -> str:
    """A model name no other run uses (BFCL keys instances by it); only ``[A-Za-z0-9_]``."""
    clean = re.sub(r"[^A-Za-z0-9_]", "_", tag)[:40]
    return f"callscope_{clean}_{uuid.uuid4().hex}"


@contextmanager
def numeric_state() -> Iterator[None]:
    """Restore, afterwards, the process-wide numeric settings simulators change:
    ``mpmath.mp``'s precision (``MathAPI.logarithm`` sets ``mp.dps``) and this thread's
    ``decimal`` context (``MathAPI.square_root`` sets its ``prec``)."""
    try:
        mp = importlib.import_module("mpmath").mp
    except ImportError:  # bfcl-eval not installed: nothing sets it
        mp = None
    prec = mp.prec if mp is not None else None
    context = decimal.getcontext().copy()
    try:
        yield
    finally:
        if mp is not None:
            mp.prec = prec
        decimal.setcontext(context)


@contextmanager
def bfcl_sandbox(executor_prefix: str | None = None) -> Iterator[None]:
    """Hold :data:`BFCL_LOCK`; afterwards restore module globals and the numeric settings
    (:func:`numeric_state`) and, with a prefix, delete the executor instances created under it
    (also when the body raises)."""
    with BFCL_LOCK, numeric_state():
        _ensure_pristine()
        try:
            yield
        finally:
            if executor_prefix:
                clear_executor_instances(re.sub(r"[-./:]", "_", executor_prefix))
            restore_module_globals()


# ------------------------------------------------------------------------------ environment


def _new_instance(class_name: str, config: dict[str, Any], long_context: bool) -> Any:
    module = importlib.import_module(f"{SIMULATOR_PACKAGE}.{SIMULATOR_MODULES[class_name]}")
    instance = getattr(module, class_name)()
    if class_name not in STATELESS_CLASSES:
        instance._load_scenario(
            copy.deepcopy(config.get(class_name, {})), long_context=long_context
        )
    # cut every reference into module globals (long-context extensions)
    return copy.deepcopy(instance)


class SafeEnv:
    """Fresh simulator instances for one run of one case (never shared between runs)."""

    def __init__(self, case: MTCase) -> None:
        self.case = case
        self.instances: dict[str, Any] = {}
        self._methods: dict[str, Any] = {}
        with bfcl_sandbox():
            for class_name in case.involved_classes:
                if class_name not in SIMULATOR_MODULES:
                    raise ValueError(f"unknown simulator class {class_name!r}")
                instance = _new_instance(class_name, case.initial_config, case.long_context)
                self.instances[class_name] = instance
                # later classes win on a shared method name, as in BFCL's executor
                for name, _ in inspect.getmembers(instance, predicate=inspect.ismethod):
                    if not name.startswith("_"):
                        self._methods[name] = instance
        self.log: list[ExecResult] = []

    def state(self) -> dict[str, dict[str, Any]]:
        """Public attributes of every instance (what BFCL's state check compares)."""
        return {
            cls: {k: v for k, v in vars(inst).items() if not k.startswith("_")}
            for cls, inst in self.instances.items()
        }

    def _run_one(self, call: ToolCall, available: set[str] | frozenset[str]) -> ExecResult:
        args = call.arguments if isinstance(call.arguments, dict) else {}
        try:
            text = validate_call(call, available)
        except CallRejected as exc:
            return ExecResult(call.name, args, False, str(exc), None, exc.reason)
        if call.name in BFCL_BLOCKED:
            out = f"Error during execution: Function call {call.name} is not allowed."
            return ExecResult(call.name, args, False, out, None, "blocked_name")
        instance = self._methods.get(call.name)
        if instance is None:
            out = f"Error during execution: name '{call.name}' is not defined"
            return ExecResult(call.name, args, False, out, None, "unknown_method")
        method = getattr(instance, call.name)
        kwargs = copy.deepcopy(args)
        try:
            with numeric_state():  # no precision set by one call leaks into the next
                output = format_result(method(**kwargs))
        except Exception as exc:  # noqa: BLE001 - a simulator error is a result, as in BFCL
            output = f"Error during execution: {exc}"
        return ExecResult(call.name, args, True, output, text, None)

    def execute(
        self, calls: list[ToolCall] | tuple[ToolCall, ...], available: set[str] | frozenset[str]
    ) -> list[ExecResult]:
        """Run ``calls`` in order; one :class:`ExecResult` per call (rejections included)."""
        results: list[ExecResult] = []
        with bfcl_sandbox():
            for call in calls:
                results.append(self._run_one(call, available))
        self.log.extend(results)
        return results
