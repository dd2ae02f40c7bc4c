"""A model as τ²'s CONFIRM judge: the driver that asks a :class:`~callscope.models.base.ChatModel`
whether the user confirmed a write call.

:func:`model_confirm_judge` turns any model into the
:data:`~callscope.calibration.confirm.ConfirmJudge` callable the τ² diagnostic takes
(:func:`callscope.calibration.tau2.diagnose_tau2`): the prompt is
:func:`~callscope.calibration.confirm.judge_messages` (no tools offered, the configured
``judge_decoding``), the verdict :func:`~callscope.calibration.confirm.parse_judge_answer` of
the reply; a :class:`~callscope.errors.ModelError` gives an undecided verdict with the error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from callscope.calibration.confirm import (
    DEFAULT_CONFIRM,
    ConfirmConfig,
    ConfirmJudge,
    judge_messages,
    parse_judge_answer,
)
from callscope.errors import ModelError
from callscope.models.base import ChatModel
from callscope.records import JudgeVerdict


def judge_confirmation(
    model: ChatModel,
    messages: Sequence[Mapping[str, Any]],
    call_index: int,
    call: Mapping[str, Any],
    config: ConfirmConfig = DEFAULT_CONFIRM,
) -> JudgeVerdict:
    """Ask ``model`` whether the user confirmed ``call`` (no tools offered, the configured
    decoding). A :class:`~callscope.errors.ModelError` gives an undecided verdict."""
    try:
        reply = model.chat(
            judge_messages(messages, call_index, call, config),
            tools=None,
            decoding=config.judge_decoding,
        )
    except ModelError as exc:
        return JudgeVerdict(None, error=f"{exc.kind}: {exc}")
    text = reply.text or ""
    return JudgeVerdict(parse_judge_answer(text), reply=text[:500])


def model_confirm_judge(model: ChatModel, config: ConfirmConfig = DEFAULT_CONFIRM) -> ConfirmJudge:
    """``model`` as a :data:`~callscope.calibration.confirm.ConfirmJudge`
    (:func:`judge_confirmation` with ``config``)."""

    def judge(
        messages: Sequence[Mapping[str, Any]], call_index: int, call: Mapping[str, Any]
    ) -> JudgeVerdict:
        return judge_confirmation(model, messages, call_index, call, config)

    return judge
