"""The errors callscope raises on purpose, under one base class.

Catch :class:`CallscopeError` to handle every failure callscope reports on purpose (as
opposed to a bug). Each kind also keeps the builtin base it had before this hierarchy
existed, so an ``except RuntimeError`` / ``except ValueError`` / ``except ImportError``
written against an older callscope still holds.

Kinds (name, builtin base kept, where it is defined, when it is raised):

``CallscopeError`` (``Exception``; here)
    The base class; never raised itself.
``ModelError`` (``RuntimeError``; here)
    A model backend could not produce an answer: unreachable, 5xx after retries, a reply
    that does not decode, a replay file without the request. ``kind`` is a short label
    (``connection``, ``timeout``, ``http_5xx``, ``http_4xx``, ``malformed``,
    ``rate_limited``, ``context_length``, ``replay_missing``, ``setup``, ``local``,
    ``weights``...) that runs
    record and summarise; the correction loop and the conversation driver store it instead
    of crashing the run.
``WeightsError`` (``ModelError``; ``callscope.models.weights``)
    The embedded model's weights are missing or corrupt (``kind="weights"``).
``DataFormatError`` (``ValueError``; here)
    An input file or row is not in the format callscope reads; the message says which file
    or row and why. The base of the format errors below.
``ConfigError`` (``ValueError``; here)
    An option or setting names something callscope does not know (an unknown grounding
    mode, backend, probe...); the message lists the valid choices.
``StoreSchemaError`` (``DataFormatError``; here)
    A run directory's ``store.sqlite`` was written by a newer callscope (its schema version
    is above :data:`callscope.store.schema.SCHEMA_VERSION`).
``RunDirBusy`` (``CallscopeError``; here)
    Another process writes the run directory (``callscope run``/``serve`` with the same
    ``-o``): one writer per run directory.
``UnsafePath`` (``CallscopeError``; here)
    A report file, or its folder, is a symbolic link: callscope refuses to write through it.
``GlaiveSourceError`` (``DataFormatError``; ``callscope.benchmarks.glaive``)
    A Glaive source cannot be read: hub use not allowed, download failed, or not JSON.
``GlaiveSchemaError`` (``DataFormatError``; ``callscope.benchmarks.glaive``)
    A Glaive system prompt's function specs do not decode or are not well formed.
``GlaiveCallError`` (``DataFormatError``; ``callscope.benchmarks.glaive``)
    A Glaive ``<functioncall>`` does not parse to ``{"name": str, "arguments": object}``.
``Tau2FormatError`` (``DataFormatError``; ``callscope.benchmarks.tau2.reader``)
    A file or folder is not τ²-bench results.
``BfclUnavailableError`` (``ImportError``; ``callscope.benchmarks.bfcl.package``)
    ``bfcl_eval`` (the pinned ``bfcl-eval`` distribution) cannot be imported; the message
    carries the install command.

Not in the hierarchy, on purpose: ``callscope.benchmarks.bfcl.env.CallRejected`` (a
``ValueError``) is the BFCL simulator's verdict on one model-proposed call; it is always
caught inside callscope and turned into a rejected step shown to the model, so it never
reaches a caller. ``callscope.parse.literals.Rejected`` (a ``ValueError``) is what the
parser's low-level readers raise on text they refuse; ``parse_text``/``parse_output`` turn it
into a parse error and never raise.
"""

from __future__ import annotations


class CallscopeError(Exception):
    """Base class of every error callscope raises on purpose."""


class ModelError(CallscopeError, RuntimeError):
    """A backend could not produce an answer (unreachable, 5xx after retries, bad reply).

    ``kind`` is a short machine-readable label (``connection``, ``timeout``, ``http_5xx``,
    ``http_4xx``, ``malformed``, ``rate_limited``) that runs record and summarise.
    """

    def __init__(self, message: str, kind: str = "error") -> None:
        super().__init__(message)
        self.kind = kind


class DataFormatError(CallscopeError, ValueError):
    """An input file or row is not in the expected format (the message says where and why)."""


class StoreSchemaError(DataFormatError):
    """A run store was written with a newer schema than this callscope reads."""


class RunDirBusy(CallscopeError):
    """Another process holds the run directory's writer lock."""


class UnsafePath(CallscopeError):
    """A file callscope would write is, or is in, a symbolic link (never followed)."""


class ConfigError(CallscopeError, ValueError):
    """An option or setting names something callscope does not know (the message lists the
    valid choices)."""
