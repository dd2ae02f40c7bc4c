"""Classify one model emission into an action class: TOOL_CALL, REFUSE, ASK, CONFIRM or OTHER.

This is the per-emission step of the action-class diagnostic (paper "Calibration is the
Bottleneck", §3.1 and App. E). The rule a user relies on:

* **TOOL_CALL is decided by syntax**, never by words: the emission carries a native tool call
  (an OpenAI/Ollama ``tool_calls`` list, a ``{"name", "arguments"}`` object, BFCL's
  ``[{tool_name: arguments}]`` list), or its text is one that :func:`callscope.parse.parse_text`
  turns into calls (a Python call list ``[f(a=1)]``, ``<tool_call>`` blocks, Glaive's
  ``<functioncall>``, fenced code blocks, a JSON list of ``{"name": ...}`` objects, one JSON
  object with ``name`` and ``arguments``/``parameters``, ...), or its whole text is a Python
  call list with positional literal arguments (``[sort('a.txt')]``, as in BFCL's gold; see
  :func:`is_python_call_list`). A native call with a string
  name counts even when its arguments are malformed: the model chose to call.
* **REFUSE, ASK and CONFIRM are decided by cues** (phrases, see :class:`ClassifierConfig`) on
  the emission's prose, lower-cased after curly quotes are normalised (``’ ‘ “ ”`` to ``' "``).
  The prose excludes the call syntax itself (a ``?`` inside a call's argument is not a
  question), ``<think>...</think>`` blocks, and greeting formulas such as "How can I help you
  today?" (a greeting is not an ask). A cue matches where it starts at a word boundary, as a
  word prefix (:func:`callscope.core.text.cue_pattern`, ``whole_word=False``: "cannot" does
  not fire inside "pecannot"; "no function" fires in "no functions"); a cue written
  ``re:<regex>`` is a regular expression (the default ASK cues use one for a sentence that
  starts with "which").
* **One class per emission**: the first class of ``priority`` among those that fire, default
  TOOL_CALL > REFUSE > ASK > CONFIRM > OTHER (REFUSE before ASK because refusals often contain
  a question mark). ``overrides`` lists ``(winner, loser)`` pairs applied before the priority:
  the preset :data:`ASK_OVER_TOOL_CALL` credits an emission that both calls a tool and asks
  the user to ASK (the paper's App. E variant). OTHER is the residual class.

* **Intended calls count**: a Python call list at the start of the text or of a line
  (``[setCruiseControl(speed=65.0, activate=true)]``, a call cut off mid-argument) is a
  TOOL_CALL even when its arguments are not literals (its *execution* may still reject it);
  its text is not prose. **Regurgitated documentation is not a call**: JSON objects that
  describe a function (``name`` + ``description`` + a ``parameters`` schema, no
  ``arguments``) and pretty-printed schema lines are removed before calls and cues are read.
  **A hallucinated user turn** (a line ``user`` / ``human`` inside the emission) ends the
  model's own text: what follows is not read.
* **Empty emissions get no class** (``None``, blank text, ``[]``, a message with neither text
  nor calls): :func:`fired_classes` returns ``set()`` for them, so that the diagnostics can
  count them apart (a BFCL FC file records text replies as ``""``/``[]``).
  :func:`classify_emission` still answers OTHER for them (it must answer one class).

Presets (:data:`CLASSIFIER_PRESETS`, old name ``PRESETS``; :func:`register_preset`): ``default`` (the rules above),
``ask_over_tool_call`` (App. E variant) and ``paper``: the rules of the paper's public code
(github.com/fbj2333/tool-calling-calibration @ 5c9ec3d, Apache-2.0), reproduced from its
documented behaviour: its own cue lists matched as plain substrings (``cue_match="substring"``),
call syntax recognised only at the start of the text by four patterns plus its normalisation
of structured emissions (``call_syntax="paper"``, see :func:`paper_classes`), no greeting or
``<think>`` removal, no user-turn cut, empty emissions no class.

Every result should report :meth:`ClassifierConfig.to_dict` so the rule used is on record.

The package, one module per job (this ``__init__`` is its public face):

* :mod:`.cues`: the cue tables (callscope's and the paper's);
* :mod:`.config`: :class:`ClassifierConfig` and :data:`VARIANTS`, the classifier variants by
  ``call_syntax``;
* :mod:`.emission`: the emission view (calls and prose of every emission shape);
* :mod:`.rules`: cue matching, the ``callscope`` variant, :func:`resolve`;
* :mod:`.paper`: the ``paper`` variant;
* :mod:`.presets`: :data:`CLASSIFIER_PRESETS` and the built-in configurations;
* :mod:`.classifier`: :func:`fired_classes`, :func:`emission_classes`,
  :func:`classify_emission`.

A JSONL file of ``{"id", "emission"}`` rows is classified by
:func:`callscope.runs.classify_file.classify_jsonl` (the ``callscope classify`` command).
"""

from callscope.calibration.classify.classifier import (
    classify_emission,
    emission_classes,
    fired_classes,
)
from callscope.calibration.classify.config import CUE_MATCHES, VARIANTS, ClassifierConfig
from callscope.calibration.classify.emission import EmissionView, is_python_call_list, view_emission
from callscope.calibration.classify.paper import paper_classes
from callscope.calibration.classify.presets import (
    ASK_OVER_TOOL_CALL,
    CLASSIFIER_PRESETS,
    DEFAULT,
    PAPER,
    PRESETS,
    preset,
    preset_names,
    register_preset,
)
from callscope.calibration.classify.rules import callscope_classes, cue_classes, resolve

__all__ = [
    "ASK_OVER_TOOL_CALL",
    "CLASSIFIER_PRESETS",
    "CUE_MATCHES",
    "DEFAULT",
    "PAPER",
    "PRESETS",
    "VARIANTS",
    "ClassifierConfig",
    "EmissionView",
    "callscope_classes",
    "classify_emission",
    "cue_classes",
    "emission_classes",
    "fired_classes",
    "is_python_call_list",
    "paper_classes",
    "preset",
    "preset_names",
    "register_preset",
    "resolve",
    "view_emission",
]
