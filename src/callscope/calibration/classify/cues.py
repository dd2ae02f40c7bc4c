"""The cue tables of the action classifier: the phrases that make REFUSE, ASK and CONFIRM fire.

Data only. :data:`DEFAULT_REFUSE_CUES`, :data:`DEFAULT_ASK_CUES`, :data:`DEFAULT_CONFIRM_CUES`
and :data:`DEFAULT_GREETING_PATTERNS` are callscope's rule (matched by
:func:`callscope.core.text.cue_pattern`'s word-boundary rule, see
:mod:`callscope.calibration.classify`); the ``PAPER_*`` tables are the phrase tables of the
calibration paper's public code, matched as plain substrings by the ``paper`` preset.
A cue written ``re:<regex>`` is a regular expression.
"""

from __future__ import annotations

#: Inability or unavailability of a tool, a permission or an action.
DEFAULT_REFUSE_CUES: tuple[str, ...] = (
    "cannot",
    "can't",
    "can not",
    "unable to",
    "not able to",
    "no such function",
    "no such tool",
    "no function",
    "no tool",
    "no available function",
    "no available tool",
    "none of the available",
    "not available",
    "isn't available",
    "aren't available",
    "unavailable",
    "don't have access",
    "do not have access",
    "don't have the ability",
    "do not have the ability",
    "don't have a function",
    "do not have a function",
    "don't have a tool",
    "do not have a tool",
    "not permitted",
    "not allowed to",
    "isn't possible",
    "is not possible",
    "not possible",
    "not supported",
    "doesn't support",
    "does not support",
    "beyond my capabilities",
    "outside my capabilities",
    "lack the necessary",
)

#: A question mark, or a request that the user supply information.
DEFAULT_ASK_CUES: tuple[str, ...] = (
    "?",
    "could you",
    "can you tell me",
    "can you provide",
    "can you specify",
    "can you confirm",
    "would you",
    "please provide",
    "please specify",
    "please tell me",
    "please let me know",
    "please confirm",
    "please clarify",
    "kindly provide",
    "i need the",
    "i need to know",
    "i need more information",
    "i'll need the",
    "i will need the",
    "need more information",
    "need more details",
    "let me know which",
    "let me know the",
    "which one",
    r"re:(?:^|[.!:;\n]\s*)which\b",
)

#: Claims that the task is finished.
DEFAULT_CONFIRM_CUES: tuple[str, ...] = (
    "task complete",
    "task is complete",
    "task has been completed",
    "tasks have been completed",
    "all done",
    "has been successfully",
    "have been successfully",
    "was successfully",
    "were successfully",
    "successfully",
    "has been completed",
    "have been completed",
    "is now complete",
    "are now complete",
    "i have completed",
    "i've completed",
    "no further action",
    "nothing else to do",
)

#: Greeting and sign-off formulas removed before the cues are matched (regular expressions on
#: the normalised lower-case text): "How can I help you today?" is not an ask.
DEFAULT_GREETING_PATTERNS: tuple[str, ...] = (
    r"\b(?:how|what)\s+(?:else\s+)?(?:can|may|could|shall)\s+i\s+(?:help|assist|do for)"
    r"(?:\s+you)?(?:\s+(?:today|further|with(?:\s+anything)?(?:\s+else)?|now))*\s*\??",
    r"\bis\s+there\s+anything\s+else\s+(?:i\s+can|you\s+(?:need|want|would like))"
    r"[^.?!\n]*\??",
    r"\banything\s+else\s+(?:i\s+can\s+(?:help|assist|do)[^.?!\n]*)?\?",
    r"\b(?:feel\s+free\s+to|don't\s+hesitate\s+to)\s+(?:ask|let\s+me\s+know)[^.?!\n]*[.!]?",
    r"\blet\s+me\s+know\s+if\s+(?:you\s+need|there's|there\s+is)[^.?!\n]*[.!?]?",
)

#: Offers of further work ("Would you like me to add a header?"), removed from the prose
#: before the cues are matched when the prose also reports the work done (a CONFIRM cue or a
#: :data:`DEFAULT_DONE_PATTERNS` match): an offer after completed work is not a request that
#: the user supply information. Regular expressions on the normalised lower-case text, one
#: sentence each (stopping at ``.``, ``?``, ``!`` or a line end). Kept as prose (still an
#: ask): an offer that gives alternatives (``... or ...``), and a request for permission to
#: go on (:data:`PERMISSION_WORDS`: "Would you like me to proceed?" asks the user to
#: confirm). Issue 29, item 16; see :func:`callscope.calibration.classify.rules.cue_classes`.
DEFAULT_OFFER_PATTERNS: tuple[str, ...] = (
    r"(?:would|do)\s+you\s+(?:like|want)\s+(?:me\s+)?to\b[^.?!\n]*+[.?!]?",
    r"\b(?:want|like)\s+me\s+to\b[^.?!\n]*+[.?!]?",
    r"\bif\s+you(?:'d|\s+would)\s+like,?\s+i\s+(?:can|could)\b[^.?!\n]*+[.?!]?",
)
#: an offer holding one of these asks for a choice or a permission, and stays an ask
PERMISSION_WORDS = r"\b(?:or|proceed|go\s+ahead|continue|confirm)\b"
#: statements of work done (besides the CONFIRM cues): "I've created", "has been moved",
#: "Done:" ("I have not made ..." is not one); regular expressions on the normalised
#: lower-case text
DEFAULT_DONE_PATTERNS: tuple[str, ...] = (
    r"\bi(?:'ve|\s+have)\s+(?:now\s+|also\s+|just\s+)?(?!not\b)\w+(?:ed|en|ne|nt|de|t)\b",
    r"\b(?:has|have)\s+(?:now\s+)?been\s+\w+(?:ed|en|ne|nt|de|t)\b",
    r"(?:^|[.!\n]\s*)done\b",
)

# The paper's public code (fbj2333/tool-calling-calibration @ 5c9ec3d,
# bfcl_calibration/analysis/action_classifier.py): its phrase tables, taken as facts.
#: REFUSE phrases of the paper's code.
PAPER_REFUSE_CUES: tuple[str, ...] = (
    "cannot",
    "can't",
    "unable to",
    "not able to",
    "no such function",
    "no function",
    "function is not available",
    "no such tool",
    "not available in",
    "is not provided",
    "is not supported",
    "do not have access",
    "don't have access",
    "no available function",
    "no matching function",
    "not authorized",
    "not permitted",
    "not possible",
    "i don't have a tool",
    "i do not have a tool",
    "no tool available",
)
#: ASK phrases of the paper's code, after its "any question mark" rule.
PAPER_ASK_CUES: tuple[str, ...] = (
    "?",
    "could you",
    "please provide",
    "please specify",
    "please tell",
    "please confirm",
    "i need to know",
    "i need the",
    "what is the",
    "what's the",
    "kindly provide",
    "would you provide",
    "i'll need",
    "could you confirm",
    "could you let me know",
    "could you tell",
    "please clarify",
    "please share",
    "please indicate",
)
#: CONFIRM phrases of the paper's code.
PAPER_CONFIRM_CUES: tuple[str, ...] = (
    "task complete",
    "all tasks",
    "all set",
    "all done",
    "fully done",
    "wrapped up",
    "completed successfully",
    "successfully completed",
    "successfully moved",
    "successfully created",
    "successfully deleted",
    "has been successfully",
    "have been successfully",
    "no further actions",
    "no further action",
    "no additional actions",
    "everything is",
    "everything's",
    "i have completed",
    "i've completed",
    "i have finished",
    "i've finished",
    "all the requested",
)
