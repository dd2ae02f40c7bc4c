import json

import pytest

from callscope.calibration.classify import (
    ASK_OVER_TOOL_CALL,
    DEFAULT,
    PAPER,
    PRESETS,
    ClassifierConfig,
    classify_emission,
    emission_classes,
    fired_classes,
    preset,
    preset_names,
    register_preset,
    resolve,
)
from callscope.runs.classify_file import classify_jsonl
from callscope.types import ASK, CONFIRM, OTHER, REFUSE, TOOL_CALL, ModelReply

# ----------------------------------------------------------------------------- cue classes


@pytest.mark.parametrize(
    "text",
    [
        "I cannot perform that operation.",
        "Sorry, I can't do that.",
        "I am unable to sort the file with the tools I have.",
        "There is no such function in my toolset.",
        "That function is not available in the current tool set.",
        "I don't have access to a sorting tool.",
        "Deleting system files is not permitted.",
        "I'm not able to do this.",
        "There are no functions for that.",
        "Sorting that isn't possible right now.",
    ],
)
def test_refuse_cues(text):
    assert classify_emission(text) == REFUSE


def test_same_words_without_question_mark_is_other():
    assert classify_emission("What is the name of the file") == OTHER


@pytest.mark.parametrize(
    "text",
    [
        "What is the name of the file?",
        "Could you tell me the destination folder.",
        "Please provide the ticket id.",
        "Please specify which directory to use.",
        "I need the exact file name to continue.",
        "Can you tell me the amount.",
        "Which folder should I move it to.",
    ],
)
def test_ask_cues(text):
    assert classify_emission(text) == ASK


@pytest.mark.parametrize(
    "text",
    [
        "Task complete.",
        "All done!",
        "The file has been successfully moved to temp.",
        "No further action is needed.",
        "I moved the files successfully.",
    ],
)
def test_confirm_cues(text):
    assert classify_emission(text) == CONFIRM


def test_empty_and_none_are_other():
    assert classify_emission("") == OTHER
    assert classify_emission(None) == OTHER
    assert classify_emission([]) == OTHER
    assert classify_emission("Here is the content of the file.") == OTHER


def test_cue_needs_word_start():
    # "cannot" inside another word does not fire
    assert classify_emission("The word pecannotation is odd.") == OTHER


# ----------------------------------------------------------------------------- greetings


@pytest.mark.parametrize(
    "text",
    [
        "How can I help you today?",
        "Hello! How may I assist you?",
        "Is there anything else I can help you with?",
        "Feel free to ask if you need more.",
    ],
)
def test_greetings_are_not_asks(text):
    assert classify_emission(text) == OTHER


def test_greeting_removed_but_real_question_kept():
    text = "How can I help you today? Which file should I open?"
    assert classify_emission(text) == ASK


def test_confirmation_with_sign_off_is_confirm_not_ask():
    text = "The ticket has been successfully closed. Is there anything else I can help you with?"
    assert classify_emission(text) == CONFIRM


# ----------------------------------------------------------------------------- curly quotes


def test_curly_quotes_are_normalised():
    assert classify_emission("I don\u2019t have access to that tool.") == REFUSE
    assert classify_emission("I can\u2019t do that") == REFUSE
    assert classify_emission("Sorry, that isn\u2019t possible.") == REFUSE


def test_custom_cue_with_curly_quote_in_text_and_ascii_in_cue():
    cfg = ClassifierConfig(confirm_cues=("we're done",), name="t")
    assert classify_emission("We\u2019re done here.", cfg) == CONFIRM


# ----------------------------------------------------------------------------- TOOL_CALL syntax


@pytest.mark.parametrize(
    "text",
    [
        "[cd(folder='document'), mkdir(dir_name='temp')]",
        "cd(folder='document')",
        '<tool_call>\n{"name": "ls", "arguments": {"a": true}}\n</tool_call>',
        '[{"name": "ls", "arguments": {}}, {"name": "pwd"}]',
        '{"name": "mv", "arguments": {"source": "a", "destination": "b"}}',
        '{"name": "mv", "parameters": {"source": "a"}}',
        '```json\n{"name": "ls", "arguments": {}}\n```',
        "```python\n[cd(folder='x')]\n```",
        '<functioncall> {"name": "ls", "arguments": \'{"a": 1}\'}',
        'Sure, I will list it: {"name": "ls", "arguments": {"path": "."}}',
    ],
)
def test_textual_call_forms_are_tool_calls(text):
    assert classify_emission(text) == TOOL_CALL


def test_positional_python_calls_count_as_tool_calls():
    # BFCL's gold and decoder use positional arguments; parse_text rejects them
    assert classify_emission("[sort('final_report.pdf')]") == TOOL_CALL
    assert classify_emission("mean([227.16, 2.552, 227.11])") == TOOL_CALL
    # not literal / not a plain name / prose: no call
    assert classify_emission("foo(bar)") == OTHER
    assert classify_emission("[__import__('os').getpid()]") == OTHER
    assert classify_emission("I will call sort('a.txt') next.") == OTHER


def test_native_calls():
    openai = {
        "content": None,
        "tool_calls": [{"type": "function", "function": {"name": "ls", "arguments": "{}"}}],
    }
    ollama = {"content": "", "tool_calls": [{"function": {"name": "ls", "arguments": {}}}]}
    assert classify_emission(openai) == TOOL_CALL
    assert classify_emission(ollama) == TOOL_CALL
    assert classify_emission({"name": "ls", "arguments": {}}) == TOOL_CALL
    assert classify_emission(ModelReply(text="", tool_calls=[{"name": "ls", "arguments": {}}])) == (
        TOOL_CALL
    )


def test_native_call_with_malformed_arguments_still_counts():
    emission = {"content": None, "tool_calls": [{"function": {"name": "ls", "arguments": "{oops"}}]}
    assert classify_emission(emission) == TOOL_CALL


def test_bfcl_api_list_and_python_call_strings():
    assert classify_emission([{"cd": '{"folder": "document"}'}]) == TOOL_CALL
    assert classify_emission([{"cd": {"folder": "document"}}, {"ls": {}}]) == TOOL_CALL
    assert classify_emission(["cd(folder='document')", "ls(a=True)"]) == TOOL_CALL


def test_message_text_without_calls_goes_to_cues():
    assert classify_emission({"content": "Which folder?", "tool_calls": None}) == ASK
    assert classify_emission({"text": "I cannot do that."}) == REFUSE
    parts = {"content": [{"type": "text", "text": "All done."}]}
    assert classify_emission(parts) == CONFIRM


def test_question_mark_inside_call_argument_is_not_an_ask():
    # the "?" belongs to the call's argument, not to prose addressed to the user
    text = "[echo(content='Is it ok?')]"
    assert emission_classes(text) == {TOOL_CALL}
    assert classify_emission(text, ASK_OVER_TOOL_CALL) == TOOL_CALL
    prose = 'Let me check. {"name": "search", "arguments": {"q": "why?"}}'
    assert emission_classes(prose) == {TOOL_CALL}


def test_think_block_is_ignored():
    text = "<think>Does the user want this? I cannot tell.</think>The file is ready."
    assert classify_emission(text) == OTHER
    keep = ClassifierConfig(strip_think=False, name="keep-think")
    assert classify_emission(text, keep) == REFUSE


def test_unsupported_type_raises():
    with pytest.raises(TypeError):
        classify_emission(42)
    with pytest.raises(TypeError):
        classify_emission({"foo": 1, "bar": 2})


# ----------------------------------------------------------------------------- priorities


def test_refusal_containing_question_is_refuse():
    text = "Are you sure? I cannot delete that file."
    assert emission_classes(text) == {REFUSE, ASK}
    assert classify_emission(text) == REFUSE


def test_call_plus_question_default_and_ask_variant():
    emission = {
        "content": "Which directory did you mean? Meanwhile I list this one.",
        "tool_calls": [{"function": {"name": "ls", "arguments": "{}"}}],
    }
    assert emission_classes(emission) == {TOOL_CALL, ASK}
    assert classify_emission(emission) == TOOL_CALL
    assert classify_emission(emission, ASK_OVER_TOOL_CALL) == ASK
    assert preset("ask_over_tool_call") is ASK_OVER_TOOL_CALL
    text = "Which file? [cat(file_name='a.txt')]"
    assert classify_emission(text) == TOOL_CALL
    assert classify_emission(text, ASK_OVER_TOOL_CALL) == ASK


def test_ask_variant_only_changes_call_plus_ask():
    # refusal with a question and no call: REFUSE under both rules
    text = "Are you sure? I cannot delete that file."
    assert classify_emission(text, ASK_OVER_TOOL_CALL) == REFUSE
    # call + refusal: TOOL_CALL under both rules
    both = "I cannot find it, trying [ls(a=True)]"
    assert classify_emission(both) == TOOL_CALL
    assert classify_emission(both, ASK_OVER_TOOL_CALL) == TOOL_CALL


def test_custom_priority():
    cfg = ClassifierConfig(priority=(TOOL_CALL, ASK, REFUSE, CONFIRM, OTHER), name="ask-first")
    assert classify_emission("Are you sure? I cannot delete that file.", cfg) == ASK
    assert resolve({CONFIRM, ASK}, cfg) == ASK
    assert resolve(set(), cfg) == OTHER


def test_invalid_configs_rejected():
    with pytest.raises(ValueError):
        ClassifierConfig(priority=(TOOL_CALL, ASK))
    with pytest.raises(ValueError):
        ClassifierConfig(overrides=((ASK, "NOPE"),))
    with pytest.raises(ValueError):
        preset("nope")


def test_config_round_trip_and_report():
    d = ASK_OVER_TOOL_CALL.to_dict()
    assert d["name"] == "ask_over_tool_call"
    assert d["overrides"] == [[ASK, TOOL_CALL]]
    assert d["priority"] == [TOOL_CALL, REFUSE, ASK, CONFIRM, OTHER]
    assert ClassifierConfig.from_dict(json.loads(json.dumps(d))) == ASK_OVER_TOOL_CALL
    assert "cannot" in DEFAULT.to_dict()["refuse_cues"]


# ----------------------------------------------------------------------------- JSONL


def test_classify_jsonl(tmp_path):
    src = tmp_path / "in.jsonl"
    rows = [
        json.dumps({"id": "a", "emission": "[ls(a=1)]"}),
        json.dumps({"id": "b", "emission": "Are you sure? I cannot."}),
        "{not json",
        json.dumps({"id": "c"}),
        "",
        json.dumps(["not", "an", "object"]),
        json.dumps({"id": "d", "emission": 7}),
        json.dumps({"id": "e", "emission": [{"cd": {"folder": "x"}}]}),
    ]
    src.write_text("\n".join(rows) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    summary = classify_jsonl(src, out, DEFAULT)
    lines = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 7
    assert lines[0]["id"] == "a" and lines[0]["class"] == TOOL_CALL
    assert lines[0]["classes"] == [TOOL_CALL]
    assert lines[1]["class"] == REFUSE and lines[1]["classes"] == [REFUSE, ASK]
    assert lines[1]["config"]["name"] == "default"
    assert lines[2]["line"] == 3 and "not valid JSON" in lines[2]["error"]
    assert lines[3]["id"] == "c" and "emission" in lines[3]["error"]
    assert lines[4]["line"] == 6 and "not a JSON object" in lines[4]["error"]
    assert lines[5]["id"] == "d" and "unsupported" in lines[5]["error"]
    assert lines[6]["class"] == TOOL_CALL
    assert summary["rows"] == 7 and summary["errors"] == 4
    assert summary["counts"] == {TOOL_CALL: 2, REFUSE: 1, ASK: 0, CONFIRM: 0, OTHER: 0}


# ----------------------------------------------------------------------------- issue 14

DOC = json.dumps(
    {
        "name": "setParkingBrake",
        "description": "Sets the parking brake. It cannot be used while moving?",
        "parameters": {"type": "dict", "properties": {"mode": {"type": "string"}}},
    },
    indent=4,
)


def test_regurgitated_documentation_is_not_a_call():
    assert classify_emission(DOC) == OTHER  # its words ("cannot", "?") are not prose either
    assert classify_emission(json.dumps(json.loads(DOC))) == OTHER  # one-line JSON
    fragment = DOC[20:-10]  # cut at both ends, as small models' files hold them
    assert classify_emission(fragment) == OTHER
    assert classify_emission("I cannot do that.\n" + DOC) == REFUSE  # the prose still counts
    # a real call that has "parameters" is still one
    assert classify_emission('{"name": "cd", "parameters": {"folder": "a"}}') == TOOL_CALL
    assert classify_emission(DOC, PAPER) == TOOL_CALL  # the paper's code counts it


@pytest.mark.parametrize(
    "text",
    [
        "[setCruiseControl(speed=65.0, activate=true)]",
        '[cd(folder="docu',
        '[post_tweet(content="How\'s the team doing?", tags=[#team])]',
        '[resolve_ticket(ticket_id=TK-4421, resolution="no further action is required.")]',
    ],
)
def test_intended_calls_are_tool_calls_and_their_words_no_cues(text):
    assert emission_classes(text) == {TOOL_CALL}


def test_expression_in_brackets_is_not_a_call_list():
    assert classify_emission("[__import__('os').getpid()]") == OTHER


def test_hallucinated_user_turn_is_cut():
    call = "[cd(folder='a')]\nuser\nWhat is the cost of the ticket?"
    assert emission_classes(call) == {TOOL_CALL}
    assert classify_emission(call, ASK_OVER_TOOL_CALL) == TOOL_CALL
    assert classify_emission("Moved it.\nUser:\nCould you delete it too?") == OTHER
    assert classify_emission("Moved it.\nuser\nWhat is the cost?", PAPER) == ASK


@pytest.mark.parametrize("emission", ["", "   ", [], None, {"content": "", "tool_calls": []}])
def test_empty_emissions_have_no_class(emission):
    assert fired_classes(emission) == set()
    assert fired_classes(emission, PAPER) == set()


def test_paper_preset_rules():
    assert preset("paper") is PAPER and "paper" in preset_names()
    # its own cues, as plain substrings
    assert classify_emission("The folder is not provided.", PAPER) == REFUSE
    assert classify_emission("The folder is not provided.") == OTHER
    assert classify_emission("Please share the folder name.", PAPER) == ASK
    assert classify_emission("pecannot", PAPER) == REFUSE and classify_emission("pecannot") == OTHER
    # call syntax only at the start; a list of call strings is no class
    assert classify_emission("Sure: [ls()]", PAPER) == OTHER
    assert classify_emission("Sure: [ls()]") == TOOL_CALL
    assert fired_classes(["ls()"], PAPER) == set() and fired_classes(["ls()"]) == {TOOL_CALL}
    assert fired_classes([{"cd": '{"folder": "a"}'}], PAPER) == {TOOL_CALL}
    assert fired_classes("```json\n{'name': 'cd', 'arguments': {}}\n```", PAPER) == {TOOL_CALL}
    # no greeting removal: "How can I help you today?" asks
    assert classify_emission("How can I help you today?", PAPER) == ASK
    assert ClassifierConfig.from_dict(PAPER.to_dict()) == PAPER


def test_register_preset_and_bad_modes():
    custom = ClassifierConfig(cue_match="substring", name="test-substring")
    register_preset(custom)
    try:
        assert preset("test-substring") is custom
        with pytest.raises(ValueError, match="already registered"):
            register_preset(custom)
    finally:
        PRESETS.unregister("test-substring")
    with pytest.raises(ValueError, match="cue_match"):
        ClassifierConfig(cue_match="fuzzy")
    with pytest.raises(ValueError, match="call_syntax"):
        ClassifierConfig(call_syntax="magic")


def test_a_classifier_variant_is_chosen_by_call_syntax():
    from callscope.calibration.classify import VARIANTS

    VARIANTS.register("test-always-ask", lambda emission, config: {ASK})
    try:
        cfg = ClassifierConfig(call_syntax="test-always-ask", name="test-always-ask")
        assert classify_emission("[ls()]", cfg) == ASK
        assert classify_emission("[ls()]") == TOOL_CALL
    finally:
        VARIANTS.unregister("test-always-ask")
    with pytest.raises(ValueError, match="call_syntax"):
        ClassifierConfig(call_syntax="test-always-ask")
