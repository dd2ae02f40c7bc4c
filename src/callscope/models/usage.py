"""Token counts of a model's replies: prompt tokens sent, prompt tokens computed, generated
tokens (issue 31). One owner for the counting every run reports.

*Sent* is the prompt length of every request the backend answered (``ModelReply.prompt_tokens``);
*computed* is the part of it the engine actually evaluated (``prompt_tokens_evaluated``: the
embedded model counts it, an HTTP server that reports cached prompt tokens gives sent minus
cached, else it is unknown and counted as sent); *generated* is ``completion_tokens``. Replies
answered from the response cache (``cached``) are counted apart: nothing was sent to a
backend for them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from callscope.core.table import Table
from callscope.types import ModelReply


@dataclass
class TokenUsage:
    """Totals over replies. ``exact``: every computed count came from the engine (not
    assumed equal to sent).

    >>> u = TokenUsage()
    >>> u.add(ModelReply(prompt_tokens=100, prompt_tokens_evaluated=10, completion_tokens=5))
    >>> u.add(ModelReply(prompt_tokens=100, completion_tokens=5, cached=True))
    >>> (u.requests, u.prompt_sent, u.prompt_computed, u.generated, u.cached)
    (1, 100, 10, 5, 1)
    >>> u.line()
    'prompt tokens sent 100, computed 10 (10.0%), generated 5; 1 answered from the cache'
    """

    requests: int = 0
    prompt_sent: int = 0
    prompt_computed: int = 0
    generated: int = 0
    cached: int = 0
    exact: bool = True

    def add(self, reply: ModelReply | Mapping[str, Any] | None, cached_apart: bool = True) -> None:
        """Count one reply (a :class:`ModelReply` or its ``to_dict``; ``None``: nothing).
        ``cached_apart=False`` counts an answer from the response cache at what it cost when
        it was made (its stored counts), as a request: what a set of answers cost the model,
        whichever process asked for them."""
        if reply is None:
            return
        d = reply.to_dict() if isinstance(reply, ModelReply) else reply
        if d.get("cached") and cached_apart:
            self.cached += 1
            return
        sent = int(d.get("prompt_tokens") or 0)
        computed = d.get("prompt_tokens_evaluated")
        if computed is None:
            self.exact = False
            computed = sent
        self.requests += 1
        self.prompt_sent += sent
        self.prompt_computed += int(computed)
        self.generated += int(d.get("completion_tokens") or 0)

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            self.requests + other.requests,
            self.prompt_sent + other.prompt_sent,
            self.prompt_computed + other.prompt_computed,
            self.generated + other.generated,
            self.cached + other.cached,
            self.exact and other.exact,
        )

    def __sub__(self, other: TokenUsage) -> TokenUsage:
        """What was counted since ``other`` (a :meth:`copy` taken earlier)."""
        return TokenUsage(
            self.requests - other.requests,
            self.prompt_sent - other.prompt_sent,
            self.prompt_computed - other.prompt_computed,
            self.generated - other.generated,
            self.cached - other.cached,
            self.exact,
        )

    def copy(self) -> TokenUsage:
        return TokenUsage(**asdict(self))

    @property
    def computed_share(self) -> float | None:
        """Computed / sent (``None`` before any prompt token was sent)."""
        return self.prompt_computed / self.prompt_sent if self.prompt_sent else None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TokenUsage:
        return cls(**{k: d[k] for k in asdict(cls()) if k in d})

    def line(self) -> str:
        """The run summary's sentence."""
        share = self.computed_share
        pct = f" ({share:.1%})" if share is not None else ""
        approx = "" if self.exact else " (some counted as sent: the backend did not say)"
        text = (
            f"prompt tokens sent {self.prompt_sent:,}, computed {self.prompt_computed:,}{pct}"
            f"{approx}, generated {self.generated:,}"
        )
        if self.cached:
            text += f"; {self.cached:,} answered from the cache"
        return text


def usage_of(replies: Iterable[ModelReply | Mapping[str, Any] | None]) -> TokenUsage:
    """The totals of ``replies`` (stored reply dicts or :class:`ModelReply`)."""
    total = TokenUsage()
    for reply in replies:
        total.add(reply)
    return total


def usage_line(model: Any, before: TokenUsage | None = None) -> str:
    """The run summary's line for ``model`` (a :class:`~callscope.models.base.ChatModel`):
    its token counts since ``before`` (a :meth:`TokenUsage.copy` taken when the run began;
    ``None``: all so far) and, for the embedded model behind it, what its kept prefixes did
    (:meth:`~callscope.models.prefix_cache.PrefixStats.line`)."""
    usage = model.usage - before if before is not None else model.usage
    line = usage.line()
    inner = model
    while getattr(inner, "inner", None) is not None:  # the response cache's backend
        inner = inner.inner
    stats = getattr(inner, "prefix_stats", None)
    kept = stats() if callable(stats) else None
    if kept is not None:
        line += f"; {kept.line()}"
    return line


def usage_table(usages: Mapping[str, TokenUsage]) -> Table:
    """Per model: the requests behind the stored answers, their prompt tokens sent, computed
    (and their share) and generated (the report's table of a run store:
    :meth:`~callscope.store.run_store.RunStore.token_usage`, where an answer from the response
    cache counts at what it cost when it was made: the table is the same whether a run was
    resumed, re-run on a warm cache or run in one go; the run's own summary line says what
    that process asked for and how much the cache answered).

    >>> t = usage_table({"local:x": TokenUsage(2, 1000, 150, 40)})
    >>> t.rows
    [['local:x', '2', '1,000', '150', '15.0%', '40']]
    """
    rows = []
    for model, u in usages.items():
        share = u.computed_share
        rows.append(
            [
                model,
                f"{u.requests:,}",
                f"{u.prompt_sent:,}",
                f"{u.prompt_computed:,}" + ("" if u.exact else "*"),
                "" if share is None else f"{share:.1%}",
                f"{u.generated:,}",
            ]
        )
    return Table(
        columns=[
            "model",
            "requests",
            "prompt sent",
            "prompt computed",
            "computed",
            "generated",
        ],
        rows=rows,
        title="Model tokens",
        caption="What the stored answers cost the model: requests, prompt tokens sent, the"
        " part it computed (the rest re-used a kept or live prompt prefix), tokens generated;"
        " an answer from the response cache counts at what it cost when it was made, so a"
        " resumed run reports the same. * the backend did not say what it computed: counted"
        " as sent.",
        name="model_tokens",
        align="lrrrrr",
    )
