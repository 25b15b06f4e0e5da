"""Bug-report titles (issue 15): at most 100 characters, never cut inside a word, TVM's
error said in its essence, the pass or operator to blame first. The table holds real
findings of recent campaigns in both IRs (strict and disruptive Relax campaigns of the
issue's triage, and short Relay campaigns with planted passes), as they were saved."""
import json
import re
from pathlib import Path

import pytest
import yaml

from hirfuzz.campaign.report import readable_error
from hirfuzz.campaign.titles import (TITLE_WIDTH, Situation, essence, phrases, shorten, shorten_detail, situation,
                                     title)
from hirfuzz.core.graph import Graph, Node, Ref, TensorType
from hirfuzz.dialects import dialect_info

TABLE = json.loads((Path(__file__).parent / "data" / "title_findings.json").read_text())
NOISE = ("InternalError", "TVMError", "Check failed", "is false", "tvm.error", "ir.Op(", "span=None", "metadata[",
         "T.int64(", "I.GlobalVar(")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+")


def _title(row):
    return title(row["finding"], Graph.from_json(row["graph"]), dialect_info(row["dialect"]), row["plan"])


def _words_of_phrases() -> set[str]:
    return set(_WORD.findall(yaml.safe_dump(phrases())))


def _subject(row) -> str:
    """The pass to blame (the one that raised, or the first of a sequence after which the
    program breaks), or the operator of a broken program; "" for an operator's own bug."""
    finding = row["finding"]
    extra, names = finding["extra"], finding["extra"].get("pass_names") or [""]
    if extra.get("violation"):
        return extra["violation"]["op"]
    return extra.get("blamed_pass") or (names[-1] if finding["stage"] == "passes" else names[0])


@pytest.mark.parametrize("row", TABLE, ids=[row["from"] for row in TABLE])
def test_a_real_findings_title_fits_names_its_subject_and_cuts_no_word(row):
    text = _title(row)
    assert len(text) <= TITLE_WIDTH, text
    prefix = f"[Bug][{row['dialect'].capitalize()}] "
    assert text.startswith(prefix), text
    subject = _subject(row)
    if subject:  # the pass to blame, or the broken program's operator, comes first
        assert text[len(prefix):].startswith(subject), (text, subject)
    assert not any(noise in text for noise in NOISE), text
    # every word is a whole word of the finding, the reduced program or the phrase tables:
    # a word cut short would be none of them
    finding = row["finding"]
    said = re.sub(r"(?<=[a-z])T\.", " T.", json.dumps([finding, row["graph"], row["plan"]]))  # "typeT.bool"
    autodiff = dialect_info(row["dialect"]).gradient_support().AUTODIFF_PASS  # a gradient crash's subject
    known = set(_WORD.findall(said)) | _words_of_phrases() | {"Bug", row["dialect"].capitalize(), autodiff}
    assert set(_WORD.findall(text)) <= known, set(_WORD.findall(text)) - known
    assert text.count("(") == text.count(")") and text.count("`") % 2 == 0, text


def test_most_real_titles_are_not_cut():
    titles = [_title(row) for row in TABLE]
    cut = [t for t in titles if t.endswith(" ...") or "...)" in t]
    assert len(cut) <= len(titles) // 4, cut


def _row(name):
    return next(row for row in TABLE if row["from"].endswith(name))


def test_a_private_function_removed_while_used_as_a_value_is_said_in_words():
    # the issue's own example: the well-formedness complaint read against the reduced
    # program, whose private function is used as a value
    for name in ("0005-crash-809f60f082", "0008-crash-4e7cc9a850"):
        row = _row(name)
        assert _title(row) == (f"[Bug][Relax] {row['finding']['extra']['blamed_pass']}: "
                               "removes a private function still used as a value")
        row = {**row, "plan": None}  # the same complaint in a program without function values
        assert _title(row).endswith(": removes a function still in use")


def test_a_pass_crash_says_the_checks_explanation_and_the_feature_it_met():
    text = _title(_row("0010-crash-dc80e08489"))
    assert text == "[Bug][Relax] ToMixedPrecision crashes on a local function: Expected TensorType, but got R.Callable"


def test_a_failed_check_without_explanation_is_said_as_its_condition():
    text = _title(_row("0013-crash-db4d22b8c7"))
    assert text.startswith("[Bug][Relax] ToMixedPrecision crashes on outer (int8): ")
    assert text.endswith("check `attr_map.count(op)` fails")


def test_broken_programs_are_said_by_what_was_broken():
    silent = _title(_row("0002-silent-acceptance-47a46ba327"))
    assert silent == ("[Bug][Relax] less_equal accepts inputs of different dtypes "
                      "(input 1 is float64, the others uint64)")
    poor = _title(_row("0065-poor-diagnostic-61dab0f466"))
    assert poor == ("[Bug][Relax] where: internal error on inputs of different dtypes "
                    "(x and y must have the same dtype)")
    died = _title(_row("0051-crash-7fa66920d8"))
    assert died.startswith("[Bug][Relax] greater_equal: crash (SIGSEGV) instead of a diagnostic for bool inputs")


def test_relay_titles_read_alike():
    wrong = _title(_row("relay_wrong/0001-wrong-result-623599fa32"))
    assert wrong == "[Bug][Relay] PlantedChangeConstant changes the result of add (float32)"
    crash = _title(_row("relay_crash/0001-crash-7243316077"))
    # the pass's own name, which starts its message, is not said twice
    assert crash == "[Bug][Relay] PlantedRaiseOnClosure crashes on a closure: cannot handle local functions"


@pytest.mark.parametrize("error, said", [
    ("InternalError: Check failed: (tensor) is false: Expected TensorType, but got R.Callable((R.Tensor((1, 4), "
     'dtype="float32"),), R.Tensor((1, 1), dtype="float32"), True)', "Expected TensorType, but got R.Callable"),
    ("InternalError: Check failed: (it_creator != group2func_.end()) is false:", "check `it_creator != group2func_.end()` fails"),
    ("InternalError: Check failed: call->args.size() == 3 (2 vs. 3) :", "check `call->args.size() == 3` fails: 2 vs. 3"),
    ("InternalError: Check failed: (t.MatchesCode(DLDataTypeCode::kDLFloat)) is false:", "check `t.MatchesCode(kDLFloat)` fails"),
    ("InternalError: Data type T.bool not supported for finiteness ops. Skipping it...",
     "Data type bool not supported for finiteness ops"),
    ("InternalError: Cannot broadcast extents T.int64(3) and T.int64(6)", "Cannot broadcast extents 3 and 6"),
    ('ValueError: GlobalVar I.GlobalVar("f1") is not defined.', 'GlobalVar "f1" is not defined'),
    ("InternalError: Check failed: value < 1LL << dtype.bits() (12 vs. 2) : ValueError: Literal value 12 exceeds "
     "maximum of bool", "Literal value 12 exceeds maximum of bool"),
    ("KeyError: 'relax.nn.conv2d'", "KeyError: 'relax.nn.conv2d'"),  # the message alone says nothing
    ("AssertionError", "AssertionError"),
])
def test_the_essence_of_an_error(error, said):
    assert essence(error) == said


def test_a_message_that_starts_with_the_subject_loses_it():
    assert essence("InternalError: Check failed: (depth > 0) is false: one_hot: depth must be positive, but got -1",
                   ("one_hot",)) == "depth must be positive, but got -1"


def test_a_detail_is_cut_at_a_clause_else_between_words_else_left_out():
    text = "Expected boolean argument as LHS of && operator (logical AND), but received a tensor"
    assert shorten_detail(text, 70) == "Expected boolean argument as LHS of && operator (logical AND)"
    cut = shorten_detail("requires the input moving_mean to have as many dimensions as the length of axes", 50)
    assert cut.endswith(" ...") and len(cut) <= 50 and cut[:-4].split()[-1] not in ("the", "as", "of", "to")
    assert shorten_detail("check `call->args.size() == 3` fails: 2 vs. 3", 20) == ""  # no half a condition


LONG = ("InternalError: Check failed: (t.MatchesCode(DLDataTypeCode::kDLFloat)) is false: the operands "
        "of an addition of boolean tensors must be floating point values when legalised for llvm")


@pytest.mark.parametrize("width", [40, 60, 100])
def test_a_shortened_line_ends_with_a_whole_word(width):
    short = shorten(LONG, width)
    assert len(short) <= width and short.endswith(" ...")
    kept, words = short[:-4].split(), LONG.split()[:len(short[:-4].split())]
    # whole words of the text, in order, none cut (the last one without its trailing colon)
    assert kept[:-1] == words[:-1] and kept[-1] == words[-1].rstrip(",:;(")


def test_a_head_with_no_room_for_tvm_s_error_gives_way_to_one_that_has():
    # bench23 seed 9: titled 'FirstOrderGradient crashes on nn.gelu_tanh, max and exp' (two
    # bystanders and no error) and 'equal and triu fails to build' (no pass, no error)
    assert _title(_row("0012-crash-c83d8d3b41")) == \
        "[Bug][Relay] FirstOrderGradient crashes: The fill value should be a scalar"
    assert _title(_row("0018-crash-79c393c5b5")) == \
        "[Bug][Relay] equal and triu fails to build: In PrimFunc vm_mod_fused_trilu_equal variables [i2] ..."


def test_a_pass_crash_in_an_operator_s_own_code_names_that_operator():
    # bench27: titled after the pass and the plan's match_cast alone ("LegalizeOps crashes on
    # match_cast: Expect value to be constant int"), where topi's prelu, resize and
    # group_conv1d_transpose raised: the operator is what a maintainer looks at first
    assert _title(_row("relax16_now/0015-crash-0dd2e6b3d6")) == \
        "[Bug][Relax] LegalizeOps crashes lowering nn.prelu on match_cast: Expect value to be constant int"
    assert _title(_row("relax18_now/0007-crash-562c9ad8c3")) == \
        "[Bug][Relax] FoldConstant crashes lowering image.resize2d: 'Div' object has no attribute 'value'"
    assert _title(_row("relax18_now/0029-crash-016b0c45ea")).startswith(
        "[Bug][Relax] LegalizeOps crashes lowering nn.conv1d_transpose: AssertionError: input channels")


def test_topi_s_names_say_which_operator_the_most_specific_one():
    from hirfuzz.campaign.titles import operator_named
    assert operator_named(["prelu", "get_const_int"], ["nn.prelu", "add"]) == "nn.prelu"
    assert operator_named(["group_conv2d_transpose_nchw"], ["nn.conv2d", "nn.conv2d_transpose"]) == "nn.conv2d_transpose"
    assert operator_named(["resize"], ["image.resize2d", "exp"]) == "image.resize2d"  # topi's file, less the dimension
    assert operator_named(["get_const_int", "constant"], ["tan", "nn.conv2d"]) == ""
    assert operator_named(["resize"], ["image.resize2d_grad", "nn.conv2d"]) == ""
    assert operator_named(["pool"], ["nn.max_pool2d", "nn.avg_pool2d"]) == ""


def test_a_title_names_the_reduced_programs_operator_and_fits():
    graph = Graph()
    graph.add(Node(0, "var", [TensorType((2, 2), "bool")]))
    graph.add(Node(1, "op", [TensorType((2, 2), "bool")], op="add", dtype="bool", inputs=[Ref(0), Ref(0)]))
    finding = {"kind": "crash", "oracle": "crash", "stage": "build", "message": LONG,
               "extra": {"exc_type": "InternalError"}}
    assert situation(finding) is Situation.CRASH
    for dialect in ("relax", "relay"):
        text = title(finding, graph, dialect_info(dialect))
        assert text.startswith(f"[Bug][{dialect.capitalize()}] add (bool) fails to build: the operands of an")
        assert len(text) <= TITLE_WIDTH and "Check failed" not in text


def test_every_situation_has_a_template_whose_fields_are_known():
    values = {"pass", "ops", "features", "op", "dtype", "error", "stage", "config", "complaint", "signal", "build_pass",
              "violation", "detail", "op_code"}
    for case in Situation:
        for template in phrases()["templates"][case.value]:
            assert set(re.findall(r"\{(\w+)\}", template)) <= values, template


def test_the_actual_line_keeps_the_error_whole_less_its_clutter():
    said = readable_error('tvm.error.InternalError: Check failed: (tensor) is false: Expected TensorType, but got '
                          'R.Callable((R.Tensor((1, 4), dtype="float32"),), R.Tensor((1, 1), dtype="float32"), True)')
    assert said == "InternalError: Check failed: (tensor) is false: Expected TensorType, but got R.Callable(...)"
    assert readable_error('ValueError: GlobalVar I.GlobalVar("f1") is not defined.') == \
        'ValueError: GlobalVar I.GlobalVar("f1") is not defined.'


def _graph_of(op: str, dtype: str) -> Graph:
    graph = Graph()
    graph.add(Node(0, "var", [TensorType((2,), dtype)]))
    graph.add(Node(1, "op", [TensorType((2,), dtype)], op=op, dtype=dtype, inputs=[Ref(0)]))
    return graph


CONFIG = {"name": "vm", "target": "llvm", "passes": [], "exec_mode": "bytecode", "pipeline": "default", "opt_level": 3}
# one finding per situation the table above lacks, as the judge words their messages
SITUATIONS = [
    ({"kind": "hang", "oracle": "crash", "stage": "worker", "message": "timed out after 60 s",
      "extra": {"signal": "timeout"}}, Situation.HANG, "[Bug][Relax] cumsum (uint32): the build or run does not finish"),
    ({"kind": "hang", "oracle": "pass-order", "stage": "worker", "message": "after FoldConstant(): timed out after 60 s",
      "extra": {"signal": "timeout", "passes": "FoldConstant()", "pass_names": ["FoldConstant"]}},
     Situation.HANG_AFTER_PASSES, "[Bug][Relax] FoldConstant makes the build or run of cumsum (uint32) hang"),
    ({"kind": "crash", "oracle": "crash", "stage": "worker", "message": "killed by SIGSEGV",
      "extra": {"signal": "SIGSEGV"}}, Situation.CRASH, "[Bug][Relax] cumsum (uint32) crashes TVM (SIGSEGV)"),
    ({"kind": "crash", "oracle": "crash", "stage": "worker",
      "message": "after LegalizeOps(), DataflowUseInplaceCalls(): killed by SIGSEGV in pass DataflowUseInplaceCalls",
      "extra": {"signal": "SIGSEGV", "died_in": {"stage": "passes", "pass": "DataflowUseInplaceCalls"},
                "pass_names": ["LegalizeOps", "DataflowUseInplaceCalls"]}},
     Situation.PASS_DEATH, "[Bug][Relax] DataflowUseInplaceCalls crashes TVM (SIGSEGV) on cumsum (uint32)"),
    ({"kind": "wrong-result", "oracle": "reference", "stage": "run",
      "message": "result 0 (cumsum:uint32) differs from the NumPy reference: 1 of 2 elements differ",
      "extra": {"config": CONFIG}}, Situation.WRONG_RESULT, "[Bug][Relax] cumsum (uint32) computes a wrong result"),
    ({"kind": "wrong-result", "oracle": "executor", "stage": "run",
      "message": "result 0 (cumsum:uint32) differs from the NumPy reference under vm on llvm (opt_level 3, default "
                 "pipeline): 1 of 2 elements differ", "extra": {"config": CONFIG}},
     Situation.WRONG_RESULT_ELSEWHERE, "[Bug][Relax] cumsum (uint32) computes a wrong result under vm on llvm"),
    # the gradient oracle's: what differs is its signature's (oracles/gradient.py), not "a wrong result"
    ({"kind": "wrong-result", "oracle": "gradient", "stage": "run", "signature": "wrong-result|gradient|shape|cumsum",
      "message": "the gradient of sum(main's float results) differs: x0's gradient has shape [2, 1], its parameter "
                 "[2] under its autodiff, built on llvm", "extra": {"config": CONFIG}},
     Situation.WRONG_GRADIENT, "[Bug][Relax] the gradient of cumsum (uint32) has the wrong shape"),
    # with what its operator needs of its attributes (reduction_steps.SimplifyAttributes), a
    # window's sizes left unsaid
    ({"kind": "wrong-result", "oracle": "gradient", "stage": "run", "signature": "wrong-result|gradient|values|cumsum",
      "message": "the gradient of sum(main's float results) differs: x0's gradient differs from finite differences",
      "extra": {"config": CONFIG, "needs": {"cumsum": ["exclusive"]}}},
     Situation.WRONG_GRADIENT, "[Bug][Relax] the gradient of cumsum (uint32) with exclusive differs from finite differences"),
    # the gradient oracle's crash in its pass: the dialect's autodiff pass is the subject
    ({"kind": "crash", "oracle": "gradient", "stage": "passes", "message": "InternalError: partials number != "
      "inputs number under its autodiff, built on llvm",
      "extra": {"config": {**CONFIG, "oracle": "gradient", "gradient": "float64"}, "failed_pass": "Gradient"}},
     Situation.PASS_CRASH, "[Bug][Relax] Gradient crashes on cumsum (uint32): partials number != inputs number"),
]


@pytest.mark.parametrize("finding, expected_situation, said", SITUATIONS, ids=[s.value for _, s, _ in SITUATIONS])
def test_every_situation_has_its_own_words(finding, expected_situation, said):
    assert situation(finding) is expected_situation
    assert title(finding, _graph_of("cumsum", "uint32"), dialect_info("relax")) == said


def test_the_tests_meet_every_situation():
    met = {situation(row["finding"]) for row in TABLE} | {s for _, s, _ in SITUATIONS}
    assert met == set(Situation), set(Situation) - met


def test_a_build_failure_names_its_gpu_unless_it_fails_alike_on_llvm():
    cuda = {"kind": "cuda", "arch": "sm_90"}
    finding = {"kind": "crash", "oracle": "target", "stage": "build",
               "message": "ValueError: Expect value to be constant int",
               "extra": {"exc_type": "ValueError", "config": {**CONFIG, "target": cuda}}}
    assert "fails to build on cuda (sm_90)" in title(finding, _graph_of("abs", "float32"), dialect_info("relax"))
    finding["extra"]["target_independent"] = True  # campaign.target_independence: llvm fails alike
    assert "cuda" not in title(finding, _graph_of("abs", "float32"), dialect_info("relax"))


def test_a_death_on_the_gpu_names_it():
    # an H100 campaign's: adaptive_avg_pool2d with windows of two sizes left unscheduled by
    # cuda's pipeline, run on the host over device memory; llvm ran the same program
    cuda = {"kind": "cuda", "arch": "sm_90"}
    finding = {"kind": "crash", "oracle": "crash", "stage": "worker", "message": "killed by SIGSEGV in the run stage",
               "extra": {"signal": "SIGSEGV", "died_in": {"stage": "run", "config": 2},
                         "config": {**CONFIG, "target": cuda}}}
    said = title(finding, _graph_of("nn.adaptive_avg_pool2d", "float16"), dialect_info("relax"))
    assert said == "[Bug][Relax] nn.adaptive_avg_pool2d (float16) crashes TVM (SIGSEGV) on cuda (sm_90)"
    finding["extra"]["config"] = CONFIG  # on llvm: no target named
    assert "on llvm" not in title(finding, _graph_of("nn.adaptive_avg_pool2d", "float16"), dialect_info("relax"))


def test_an_operator_that_fails_alone_as_the_finding_does_is_the_one_named():
    """bench29 relay seed 23 0020: a wrong take gradient (a negative axis) in a program of
    take, atan, softmax and not_equal; take alone differs alike (extra.keyed_as)."""
    graph = Graph()
    graph.add(Node(0, "var", [TensorType((2, 3), "float64")]))
    for index, name in enumerate(("take", "atan", "nn.softmax", "not_equal"), start=1):
        graph.add(Node(index, "op", [TensorType((2, 3), "float64")], op=name, dtype="float64", inputs=[Ref(0)]))
    finding = {"kind": "wrong-result", "oracle": "gradient", "stage": "run",
               "signature": "wrong-result|gradient|values|atan,nn.softmax,not_equal,take",
               "message": "the gradient of sum(main's float results) differs: x1's gradient differs from finite "
                          "differences at 84 of 120 elements judged", "extra": {"config": CONFIG}}
    head = "[Bug][Relay] the gradient of"
    assert title(finding, graph, dialect_info("relay")).startswith(f"{head} take, atan and 2 more differs")
    finding["extra"]["keyed_as"] = {"operator": "take", "message": finding["message"]}
    assert title(finding, graph, dialect_info("relay")) == f"{head} take (float64) differs from finite differences"


def test_a_wrong_gradient_is_titled_by_what_its_reduced_program_shows():
    """A reduction keeps a wrong result's kind and oracle only: a default Relax campaign (seed
    41) first saw a gradient of the wrong shape (where's broadcast) and kept cumsum's exclusive
    gradient, whose values differ; its root key says so, its first signature does not."""
    graph = Graph()
    graph.add(Node(0, "var", [TensorType((2, 3), "float64")]))
    graph.add(Node(1, "op", [TensorType((2, 3), "float64")], op="cumsum", dtype="float64", inputs=[Ref(0)]))
    finding = {"kind": "wrong-result", "oracle": "gradient", "stage": "run",
               "signature": "wrong-result|gradient|shape|cumsum,equal,multiply,where",
               "message": "the gradient of sum(main's float results) differs: x0's gradient differs from finite "
                          "differences at 40 of 40 elements judged",
               "extra": {"config": CONFIG, "root_key": "root|wrong-result|gradient|values|cumsum"}}
    said = title(finding, graph, dialect_info("relax"))
    assert said == "[Bug][Relax] the gradient of cumsum (float64) differs from finite differences", said
    finding["extra"].pop("root_key")  # unreduced: its own signature is all there is
    assert title(finding, graph, dialect_info("relax")).endswith("has the wrong shape")
