"""callscope over BFCL's 2024-08 single-turn leaderboard (``../shared/external/
bfcl-leaderboard-2024-08``, see its README.txt; skipped when absent, never copied here).

Pinned figures were worked out from the files with zcat / jq / grep, not with callscope:

* BFCL's accepted answers: the sum of ``correct_count`` over a model's five score headers
  (``zcat score/M/*.gz | head -1 | jq .correct_count``): gpt-4-0613 1116, gpt-4-0613-FC 766,
  Nexusflow-Raven-v2 844, of 1,240 answers each (5 result files: 400 + 200 + 200 + 200 +
  240 lines).
* BFCL's decoder failures: ``zcat score/M/*.gz | grep -c '"ast_decoder:decoder_failed"'``:
  gpt-4-0613 12, gpt-4-0613-FC 16; its relevance rejections (``grep -c relevance_error``):
  gpt-4-0613 44, gpt-4-0613-FC 27, Raven 111.
* gpt-4-0613-FC's relevance answers: ``zcat ...relevance... | jq -r '.result|type'``: 27
  arrays (calls) and 213 strings (prose).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from callscope.parse.bfcl_decode import (
    EVALUATED_BY_BFCL,
    WrongFormat,
    decode_bfcl,
    read_bfcl_calls,
)
from callscope.parse.literals import Rejected

LEADERBOARD = (
    Path(__file__).resolve().parents[2] / "shared" / "external" / "bfcl-leaderboard-2024-08"
)
MODELS = ("gpt-4-0613", "gpt-4-0613-FC", "Nexusflow-Raven-v2")

needs_data = pytest.mark.skipif(
    not LEADERBOARD.is_dir(), reason="shared/external/bfcl-leaderboard-2024-08 absent"
)


def _bfcl_installed() -> bool:
    try:
        import bfcl_eval  # noqa: F401
    except ImportError:
        return False
    return True


needs_bfcl = pytest.mark.skipif(not _bfcl_installed(), reason="bfcl-eval not installed")


# --------------------------------------------------------------------------- the decoders


def test_python_answers_read_as_bfcl_2024_reads_them_without_eval():
    calls = read_bfcl_calls("[math.factorial(number=5), f(unit=units, x=-2, y=(1, 2))]")
    assert [(c.name, c.arguments) for c in calls] == [
        ("math.factorial", {"number": 5}),
        ("f", {"unit": "units", "x": -2, "y": [1, 2]}),  # a bare name is its identifier
    ]
    # a nested call with keywords is {name: args}; without keywords, its source text
    (call,) = read_bfcl_calls("[f(a=g(b=1), c=os.system('rm -rf x'))]")
    assert call.arguments == {"a": {"g": {"b": 1}}, "c": "os.system('rm -rf x')"}
    # BFCL evaluates arithmetic and lambdas; callscope refuses them
    for text in ("[f(x=2 * 3)]", "[f(k=lambda: 1)]"):
        with pytest.raises(Rejected, match="arithmetic"):
            read_bfcl_calls(text)
    # as BFCL: the text is parsed as given (a leading blank is an IndentationError), a bare
    # call is not a list, a call without keyword arguments is BFCL's wrong output format
    for text in (" [f(x=1)]", "f(x=1)"):
        with pytest.raises(Rejected):
            read_bfcl_calls(text)
    with pytest.raises(WrongFormat):
        read_bfcl_calls("[math.hypot(4, 5)]")


def test_each_handler_family_decodes_its_own_shape():
    assert decode_bfcl("gorilla", "f(x=1), g(y='a')")[1].arguments == {"y": "a"}
    assert decode_bfcl("claude_prompt", " f(x=1)")[0].name == "f"  # one blank dropped
    assert decode_bfcl("mistral_prompt", "[get\\_area(side\\_a=2)]")[0].arguments == {"side_a": 2}
    assert [c.name for c in decode_bfcl("nexus", "f(x=1); g(x=2);")] == ["f", "g"]
    assert decode_bfcl("fc_json", [{"math_f": '{"n": 5}'}])[0].arguments == {"n": 5}
    assert decode_bfcl("glm", 'math_f\n{"n": 5}')[0].name == "math_f"
    hermes = '<tool_call>\n{"arguments": {"n": 5}, "name": "f"}\n</tool_call>'
    assert decode_bfcl("hermes", hermes)[0].arguments == {"n": 5}
    xlam = '{"tool_calls": [{"name": "f", "arguments": {"n": 5}}]}'
    assert decode_bfcl("xlam", xlam)[0].name == "f"
    assert decode_bfcl("arctic", "['f(x=1)']")[0].arguments == {"x": 1}
    with pytest.raises(Rejected):
        decode_bfcl("fc_json", "I cannot help with that.")  # prose from an FC model
    with pytest.raises(Rejected, match="out_of_domain"):
        decode_bfcl("nexus", "out_of_domain(user_query='hi')")
    assert EVALUATED_BY_BFCL.startswith("arithmetic")


def test_a_deeply_nested_answer_is_refused_not_a_crash():
    text = "[f(x=" + "[" * 5000 + "]" * 5000 + ")]"
    with pytest.raises(Rejected):
        read_bfcl_calls(text)


# --------------------------------------------------------------------------- the real files


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from callscope.runs.leaderboard_tree import diagnose_tree

    return diagnose_tree(_tree_of(tmp_path_factory.mktemp("tree")), jobs=1)


def _tree_of(folder: Path) -> Path:
    """A tree of links to three models' folders (the data stays where it is)."""
    for side in ("result", "score"):
        (folder / side).mkdir(parents=True, exist_ok=True)
        for m in MODELS:
            link = folder / side / m
            if not link.exists():
                link.symlink_to(LEADERBOARD / side / m, target_is_directory=True)
    return folder


@needs_data
@needs_bfcl
def test_bfcl_verdicts_and_decoder_failures_match_the_files(run):
    from callscope.runs.leaderboard import CATEGORIES, DECODE

    by = {r.model: r for r in run.results}
    assert sorted(by) == sorted(MODELS)
    accepted = {"gpt-4-0613": 1116, "gpt-4-0613-FC": 766, "Nexusflow-Raven-v2": 844}
    relevance_rejected = {"gpt-4-0613": 44, "gpt-4-0613-FC": 27, "Nexusflow-Raven-v2": 111}
    rel = CATEGORIES.index("irrelevance")
    for m, r in by.items():
        assert len(r.rows) == 1240 and r.rows["scored"].all()
        assert int(r.rows["bfcl_ok"].sum()) == accepted[m]
        rows = r.rows[r.rows["cat"] == rel]
        assert int((~rows["bfcl_ok"]).sum()) == relevance_rejected[m]
    # BFCL's decoder failures outside relevance: callscope's decoder fails on the same
    # number (gpt-4-0613's one BinOp answer, parallel_183, BFCL evaluated; callscope does not)
    for m, failed in (("gpt-4-0613", 12), ("gpt-4-0613-FC", 16)):
        rows = by[m].rows[by[m].rows["cat"] != rel]
        assert int((rows["decode"] == DECODE.index("failed")).sum()) == failed
    assert int((by["gpt-4-0613"].rows["decode"] == DECODE.index("evaluated")).sum()) == 1
    # gpt-4-0613-FC on relevance: 27 call lists, 213 prose answers (none of them a call list)
    fc = by["gpt-4-0613-FC"].rows
    fc_rel = fc[fc["cat"] == rel]
    assert int((fc_rel["n_calls"] > 0).sum()) == 27
    assert int((fc_rel["no_call"] > 0).sum()) == 213


@needs_data
@needs_bfcl
def test_agreement_with_bfcl_is_at_least_99_percent_per_model(run):
    from callscope.report.leaderboard import agreement_table, kept_rows, left_out_cases
    from callscope.runs.leaderboard import DECODE

    # three models are too few for evidence of their own: the whole folder's drifted cases
    assert run.drift["known_v2"] and len(set().union(*run.drift.values())) == 14
    out = left_out_cases(run)
    for r in run.results:
        k = kept_rows(r, out)
        k = k[k["decode"] != DECODE.index("evaluated")]
        agree = (k["checker"].astype(bool) == k["bfcl_ok"]).mean()
        assert agree >= 0.99, (r.model, agree)
    table = agreement_table(run)
    assert [row[0] for row in table.rows] == ["gpt-4-0613", "Nexusflow-Raven-v2", "gpt-4-0613-FC"]


@needs_data
@needs_bfcl
def test_cli_writes_the_leaderboard_for_a_tree_and_for_one_model(tmp_path):
    tree = _tree_of(tmp_path / "tree")
    exe = shutil.which("callscope")
    cmd = [exe] if exe else [sys.executable, "-m", "callscope.cli"]
    out = tmp_path / "out"
    done = subprocess.run(
        [*cmd, "calibrate", "leaderboard", str(tree), "-o", str(out), "--jobs", "2", "--quiet"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    for name in ("leaderboard", "agreement", "accepted_unstated", "rejected_passing"):
        for ext in ("md", "csv", "html"):
            assert (out / f"{name}.{ext}").is_file()
    lines = (out / "leaderboard.csv").read_text(encoding="utf-8").splitlines()
    header = lines[0].split(",")
    first = dict(zip(header, lines[1].split(","), strict=True))
    # ranked by BFCL accuracy over the 1,226 answers kept (1,240 less 14 left out)
    assert (first["model"], first["answers"]) == ("gpt-4-0613", "1226")
    assert (out / "leaderboard.png").read_bytes()[:4] == b"\x89PNG"
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "cases/gpt-4-0613-FC.html" in page and "data:image/png;base64," in page
    case_page = (out / "cases" / "Nexusflow-Raven-v2.html").read_text(encoding="utf-8")
    payload = case_page.split("id='answers'>", 1)[1].split("</script>", 1)[0]
    answers = json.loads(payload)
    assert len(answers) == 1240 and "<" not in payload
    assert answers[0]["id"] == "simple_python_0"
    # issue 45: a case left out says so on the page, with why (it read "stage 0 [[]]")
    left = json.loads(case_page.split("id='left-out'>", 1)[1].split("</script>", 1)[0])
    assert len(left) == 14 and set(left) <= {a["id"] for a in answers}
    assert {why.split(":", 1)[0] for why in left.values()} <= {
        "drift known from the whole 2024-08 leaderboard (too few models in this run to see it "
        "from their own answers)",
        "function drift",
        "gold drift",
    }
    log = (out / "run.log").read_text(encoding="utf-8")
    assert log.count(" answers, read ") == 3 and "done: 3 models" in log
    # one model's folder, given as the tree itself
    one = tmp_path / "one"
    done = subprocess.run(
        [*cmd, "calibrate", "leaderboard", str(LEADERBOARD / "result" / "gpt-4-0613"), "-o",
         str(one), "--scores", str(LEADERBOARD / "score" / "gpt-4-0613"), "--no-cases", "--quiet"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    row = (one / "leaderboard.csv").read_text(encoding="utf-8").splitlines()[1].split(",")
    assert row[1:4] == ["gpt-4-0613", "1226", str(1116 - _accepted_left_out("gpt-4-0613"))]
    assert not (one / "cases").exists()


def _accepted_left_out(model: str) -> int:
    """How many of the 14 left-out cases BFCL accepted for ``model``: those not listed as
    rejected in its score files (read here with json, as the pinned counts were with jq)."""
    import gzip

    from callscope.runs.leaderboard import KNOWN_DRIFT_V2

    v2 = {"simple_python": "simple", "multiple": "multiple_function", "parallel":
          "parallel_function", "parallel_multiple": "parallel_multiple_function"}  # fmt: skip
    rejected = set()
    for path in (LEADERBOARD / "score" / model).glob("*.gz"):
        with gzip.open(path, "rt") as fh:
            for line in fh.read().splitlines()[1:]:
                rejected.add(json.loads(line)["prompt_id"])
    left = {f"{v2[c.rsplit('_', 1)[0]]}_{c.rsplit('_', 1)[1]}" for c in KNOWN_DRIFT_V2}
    return len(left - rejected)


def test_a_missing_tree_is_a_usage_error(tmp_path):
    exe = shutil.which("callscope")
    cmd = [exe] if exe else [sys.executable, "-m", "callscope.cli"]
    done = subprocess.run(
        [*cmd, "calibrate", "leaderboard", str(tmp_path), "-o", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "single-turn result file" in " ".join(done.stderr.split())


@needs_data
@needs_bfcl
def test_the_single_turn_tree_is_a_registered_results_source(tmp_path):
    from callscope.benchmarks.results_source import RESULTS_SOURCES, detect_results_source
    from callscope.runs.from_results import calibrate_from_results

    assert detect_results_source(LEADERBOARD) is RESULTS_SOURCES["bfcl-single"]
    done = calibrate_from_results(
        "bfcl-single", LEADERBOARD, tmp_path, read_options={"model": "gpt-4-0613-FC"}
    )
    (row,) = json.loads(done.written[0].read_text(encoding="utf-8"))["models"]
    assert (row["model"], row["decoder"], row["answers"]) == ("gpt-4-0613-FC", "fc_json", 1240)
    assert row["bfcl_accepted"] == 766


@needs_bfcl
def test_v3_names_plain_files_and_ids_not_installed(tmp_path):
    """A v3 tree written here (plain JSON): ``simple`` is today's ``simple_python``; an id
    past the installed range is left out and counted, never paired with another case."""
    from callscope.benchmarks.bfcl.single_results import find_single_files
    from callscope.runs.leaderboard_tree import diagnose_tree

    model = tmp_path / "result" / "my-model"
    model.mkdir(parents=True)
    lines = [
        {"id": "simple_0", "result": "[calculate_triangle_area(base=10, height=5)]"},
        {"id": "simple_1", "result": "I would call math.factorial(number=5)."},
        {"id": "simple_9999", "result": "[f(x=1)]"},
    ]
    (model / "BFCL_v3_simple_result.json").write_text(
        "".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8"
    )
    score = tmp_path / "score" / "my-model"
    score.mkdir(parents=True)
    header = {"accuracy": 0.5, "correct_count": 1, "total_count": 2}
    rejected = {"id": 2, "valid": False, "error_type": "ast_decoder:decoder_failed",
                "error": ["Invalid syntax."], "prompt_id": "simple_1"}  # fmt: skip
    (score / "BFCL_v3_simple_score.json").write_text(
        json.dumps(header) + "\n" + json.dumps(rejected) + "\n", encoding="utf-8"
    )
    (f,) = find_single_files(tmp_path)
    assert (f.model, f.category, f.version) == ("my-model", "simple_python", 3)
    run = diagnose_tree(tmp_path)
    (r,) = run.results
    assert r.left_out == {"not_installed": 1} and len(r.rows) == 2
    assert r.rows["bfcl_ok"].tolist() == [True, False]
    assert r.rows["checker"].tolist() == [1, 0]
    assert r.rows["passed"].tolist() == [True, False]
    # prose holding a call: BFCL's decoder refuses it, callscope's parser reads one: broken
    from callscope.runs.leaderboard import NO_CALL

    assert NO_CALL[r.rows["no_call"][1]] == "broken"
    # `calibrate from-bfcl` on a tree with single-turn files only runs the leaderboard
    exe = shutil.which("callscope")
    cmd = [exe] if exe else [sys.executable, "-m", "callscope.cli"]
    out = tmp_path / "out"
    done = subprocess.run(
        [*cmd, "calibrate", "from-bfcl", str(tmp_path), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    lines = (out / "leaderboard.csv").read_text(encoding="utf-8").splitlines()
    assert lines[1].split(",")[1:4] == ["my-model", "2", "1"]


def test_an_over_long_line_is_skipped_and_counted(tmp_path, monkeypatch):
    from callscope.benchmarks.bfcl import single_results
    from callscope.core import jsonl

    monkeypatch.setattr(jsonl, "MAX_LINE_CHARS", 64)  # the one line limit (core.jsonl)
    path = tmp_path / "BFCL_v3_simple_result.json"
    long = json.dumps({"id": "simple_1", "result": "x" * 500})
    path.write_text(
        f'{{"id": "simple_0", "result": "a"}}\n{long}\n{{"id": "simple_2", "result": "b"}}\n',
        encoding="utf-8",
    )
    problems: list[str] = []
    rows = list(single_results.iter_lines(path, problems))
    assert [(n, r["id"]) for n, r in rows] == [(1, "simple_0"), (3, "simple_2")]
    assert len(problems) == 1 and "over 64 characters" in problems[0]


@needs_bfcl
def test_model_text_and_names_reach_the_pages_escaped(tmp_path):
    from callscope.report.leaderboard import CASES_DIR, leaderboard_tables
    from callscope.report.leaderboard_pages import write_case_page, write_leaderboard_report
    from callscope.runs.leaderboard_tree import diagnose_tree

    name = "<img src=x onerror=alert(1)>"
    model = tmp_path / "tree" / "result" / name
    model.mkdir(parents=True)
    hostile = "</script><script>alert(2)</script> [f(x='<b>')]"
    (model / "BFCL_v3_simple_result.json").write_text(
        json.dumps({"id": "simple_0", "result": hostile}) + "\n", encoding="utf-8"
    )
    out = tmp_path / "out"
    run = diagnose_tree(tmp_path / "tree", pages=out / CASES_DIR, page_writer=write_case_page)
    write_leaderboard_report(run, out, leaderboard_tables(run))
    page = (out / "report.html").read_text(encoding="utf-8")
    assert name not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    (case_page,) = (out / CASES_DIR).iterdir()
    assert "<" not in case_page.name and ">" not in case_page.name
    text = case_page.read_text(encoding="utf-8")
    assert "alert(2)" in text and "</script><script>alert(2)" not in text
    assert name not in text


@needs_bfcl
@pytest.mark.browser
def test_the_case_page_opens_the_case_of_its_hash(tmp_path):
    """In headless Chromium (skipped without it): ``cases/<model>.html#<case id>`` shows
    that case's answer as stored and BFCL's verdict, the model text as text."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from chromium import CHROMIUM, dump_dom

    if not CHROMIUM.exists():
        pytest.skip("needs headless Chromium at /usr/bin/chromium")
    from callscope.report.leaderboard import CASES_DIR
    from callscope.report.leaderboard_pages import (
        LEFT_OUT_REASONS,
        mark_left_out,
        write_case_page,
    )
    from callscope.runs.leaderboard_tree import diagnose_tree

    model = tmp_path / "tree" / "result" / "m"
    model.mkdir(parents=True)
    lines = [
        {"id": "simple_0", "result": "[calculate_triangle_area(base=10, height=5)]"},
        {"id": "simple_1", "result": "<b>no</b> math.factorial(number=5)"},
    ]
    (model / "BFCL_v3_simple_result.json").write_text(
        "".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8"
    )
    out = tmp_path / "out"
    diagnose_tree(tmp_path / "tree", pages=out / CASES_DIR, page_writer=write_case_page)
    dom = dump_dom(out / CASES_DIR / "m.html", tmp_path / "profile", "simple_python_1")
    view = dom.split('id="view"', 1)[1]
    assert "<pre>simple_python_1</pre>" in view
    assert "&lt;b&gt;no&lt;/b&gt; math.factorial(number=5)" in view and "<b>" not in view
    assert "broken" in view and "stage 1: call 1 no_name" in view
    # a passing answer reads as passed; a left-out case names why (issue 45)
    assert mark_left_out(
        out / CASES_DIR, ["m"], {"simple_python_1": LEFT_OUT_REASONS["gold_drift"]}
    )
    dom = dump_dom(out / CASES_DIR / "m.html", tmp_path / "profile", "simple_python_1")
    assert "left out of the leaderboard" in dom and "gold drift: the installed checker" in dom
    dom = dump_dom(out / CASES_DIR / "m.html", tmp_path / "profile", "simple_python_0")
    view = dom.split('id="view"', 1)[1].split("</div>", 1)[0]
    assert "passed all three stages" in view and "left out" not in view


@needs_bfcl
def test_answers_without_a_score_file_have_no_bfcl_verdict(tmp_path):
    from callscope.report.leaderboard import leaderboard_table
    from callscope.runs.leaderboard_tree import diagnose_tree

    model = tmp_path / "result" / "m"
    model.mkdir(parents=True)
    line = {"id": "simple_0", "result": "[calculate_triangle_area(base=10, height=5)]"}
    (model / "BFCL_v3_simple_result.json").write_text(json.dumps(line) + "\n", "utf-8")
    run = diagnose_tree(tmp_path)
    (r,) = run.results
    assert not r.rows["scored"][0] and not r.rows["bfcl_ok"][0] and r.rows["checker"][0] == 1
    (row,) = leaderboard_table(run).rows
    assert row[3] == "n/a" and row[4] == "100.0"


@needs_bfcl
def test_v4_live_categories(tmp_path):
    """Today's names: live_simple graded by the installed checker, live_relevance credited
    for any call, live_irrelevance for none."""
    from callscope.runs.leaderboard import CATEGORIES
    from callscope.runs.leaderboard_tree import diagnose_tree

    model = tmp_path / "result" / "m" / "live"
    model.mkdir(parents=True)
    files = {
        "live_simple": "[get_user_info(user_id=7890, special='black')]",
        "live_relevance": "[search_engine.query(prompt='a masked woman')]",
        "live_irrelevance": "I cannot look that up.",
    }
    for cat, answer in files.items():
        line = {"id": f"{cat}_0-0-0", "result": answer}
        (model / f"BFCL_v4_{cat}_result.json").write_text(json.dumps(line) + "\n", "utf-8")
    (r,) = diagnose_tree(tmp_path).results
    assert r.model == "m" and len(r.rows) == 3
    assert sorted(CATEGORIES[c] for c in r.rows["cat"]) == sorted(files)
    assert r.rows["checker"].tolist() == [1, 1, 1]
    assert r.rows["solved"].tolist() == [True, True, True]
    assert r.rows["n_calls"].tolist() == [1, 0, 1]  # simple, irrelevance, relevance
