"""The optional judge layer of stage 3: a model asked whether a flagged value is implied.

Beyond the SAAG paper. The registry-aware grounding's rules (:mod:`callscope.saag.groundings`)
leave semantic inferences flagged ("Canadian dollars" -> ``CAD``, "tomorrow" -> a date).
:class:`ModelJudge` puts each value the rules still flag to a judge model (any backend, the
embedded one included) with one fixed prompt, :data:`JUDGE_PROMPT`; a ``yes`` makes the value
grounded with reason ``judge``. Off by default; verdicts are cached (in memory, and in the
response cache when the model is opened through it) and counted, so their agreement with the
rules is reported.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any

from callscope.errors import ModelError
from callscope.models.base import ChatModel, Decoding, RequestContext

#: the one judge prompt (temperature 0, a one-word answer)
JUDGE_PROMPT = (
    "You check one argument of a tool call against the user's request.\n"
    "Request: {query}\n"
    "Parameter: {param}\n"
    "Value: {value}\n"
    "Is this value stated in the request or directly implied by it? "
    "Answer with one word: yes or no."
)
#: longest request text sent to the judge (characters; the rest is cut)
MAX_JUDGE_QUERY = 4000


def judge_messages(param: str, value: Any, query: str) -> list[dict[str, str]]:
    """The judge's chat messages for one value (:data:`JUDGE_PROMPT`)."""
    text = JUDGE_PROMPT.format(
        query=query[:MAX_JUDGE_QUERY],
        param=param,
        value=json.dumps(value, ensure_ascii=False)[:500],
    )
    return [{"role": "user", "content": text}]


def read_verdict(text: str) -> bool | None:
    """``True`` for an answer starting with "yes", ``False`` for "no", ``None`` otherwise."""
    word = text.strip().lower().lstrip("*\"'`").split(maxsplit=1)
    head = word[0].rstrip(".,!:;*\"'`") if word else ""
    return True if head == "yes" else False if head == "no" else None


@dataclass
class ModelJudge:
    """A :data:`~callscope.saag.groundings.Judge` backed by ``model``. An unreadable answer or
    a backend error keeps the rules' flag (counted in ``unreadable`` / ``errors``)."""

    model: ChatModel
    max_tokens: int = 4
    yes: int = 0
    no: int = 0
    unreadable: int = 0
    errors: int = 0
    _memo: dict[str, bool] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __call__(self, param: str, value: Any, query: str) -> bool:
        key = json.dumps([param, value, query], ensure_ascii=True, default=str)
        with self._lock:
            if key in self._memo:
                return self._memo[key]
        try:
            reply = self.model.chat(
                judge_messages(param, value, query),
                None,
                Decoding(temperature=0.0, max_tokens=self.max_tokens),
                context=RequestContext(case_id=f"judge:{param}", mode="judge", attempt=1),
            )
            verdict = read_verdict(reply.text)
        except ModelError:
            verdict = None
            with self._lock:
                self.errors += 1
        with self._lock:
            if verdict is None:
                self.unreadable += 0 if self.errors else 1
            elif verdict:
                self.yes += 1
            else:
                self.no += 1
            self._memo[key] = bool(verdict)
        return bool(verdict)

    def stats(self) -> dict[str, Any]:
        """Verdict counts; ``agreement_with_rules`` is the share of judged values the judge also
        flagged (every value it sees was flagged by the rules)."""
        judged = self.yes + self.no
        return {
            "model": self.model.spec,
            "yes": self.yes,
            "no": self.no,
            "unreadable": self.unreadable,
            "errors": self.errors,
            "agreement_with_rules": self.no / judged if judged else None,
        }
