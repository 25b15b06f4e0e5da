"""One finding per root cause (campaign machinery and signatures only: no worker, no TVM):
a finished finding is keyed on where TVM fails (core.finding.root_key) and joins the
finding first filed with that key, which keeps its folder; the joined one's signatures
become aliases, its hits are added, its files kept in merged/, and a resumed campaign
knows all of it."""
import json
import threading

from hirfuzz.campaign.coordinator import Campaign, Settings
from hirfuzz.campaign.oracles import Oracle, definition
from hirfuzz.campaign.reducer import _PREFIXES, Job, Reduction
from hirfuzz.campaign.reduction_steps import Finishing, OperatorAlone
from hirfuzz.core.finding import (Finding, crash_signature, ill_formed_signature, in_operator_code, lone_operator_key,
                                  root_key, stale_type_carrier, topi_frame, tvm_python_frame)
from hirfuzz.core.spec import load_specs
from hirfuzz.protocol import make_config
from graph_json import graph_of, op, var

TRACE = 'File "/tvm/src/relax/transform/fuse_tir.cc", line 12, in tvm::relax::FuseTIR::Run\n'
MESSAGE = "Check failed: (n_out == n_inplace) is false: There must be an in-place index specified"


def test_one_tvm_failure_under_two_oracles_and_stages_has_one_root_key():
    baseline = crash_signature("build", "InternalError", MESSAGE, TRACE)
    executor = "executor|" + crash_signature("run", "InternalError", MESSAGE, TRACE)
    after_passes = "pass-order|" + crash_signature("build", "InternalError", MESSAGE + " for lv7", TRACE)
    assert len({baseline, executor}) == 2
    assert root_key(baseline, _PREFIXES) == root_key(executor, _PREFIXES) == root_key(after_passes, _PREFIXES)
    assert root_key(baseline, _PREFIXES).startswith("root|crash|InternalError|relax/transform/fuse_tir.cc:")


def test_root_keys_keep_what_tells_failures_apart():
    other_check = crash_signature("build", "InternalError", "Check failed: (a == b) is false", TRACE)
    other_frame = crash_signature("build", "InternalError", MESSAGE, TRACE.replace("fuse_tir", "fuse_ops"))
    keys = {root_key(s, _PREFIXES) for s in (crash_signature("build", "InternalError", MESSAGE, TRACE),
                                              other_check, other_frame)}
    assert len(keys) == 3
    # no TVM frame: the stage says where
    assert (root_key(crash_signature("build", "ValueError", "bad", ""), _PREFIXES)
            != root_key(crash_signature("run", "ValueError", "bad", ""), _PREFIXES))


def test_a_symbolic_size_is_one_name_whichever_function_declares_it():
    # bench22 Relax seed 8, 0028 and 0029: topi's grouped conv1d_transpose assert on a symbolic
    # channel count, in main (n6) and in a private function (n6_f1): one root cause
    frame = 'File "/tvm/python/tvm/topi/nn/conv1d_transpose.py", line 9, in group_conv1d_transpose_ncw\n'
    in_main, in_f1, in_local = (crash_signature("build", "AssertionError", f"input channels {name} must divide group "
                                                "size 4", frame) for name in ("n6", "n6_f1", "n4_local2"))
    assert in_main == in_f1 == in_local


def test_ill_formed_modules_are_keyed_on_the_pass_whatever_the_oracle_and_the_program_names():
    first = "pass-order|" + ill_formed_signature("CanonicalizeRelaxBindings", "Var lv3 is not defined.")
    second = ill_formed_signature("CanonicalizeRelaxBindings", "Var gv12 is not defined.")
    other_pass = ill_formed_signature("FuseTIR", "Var lv3 is not defined.")
    assert root_key(first, _PREFIXES) == root_key(second, _PREFIXES) != root_key(other_pass, _PREFIXES)


def test_a_wrong_result_is_keyed_on_its_reduced_signature_and_a_death_has_no_root_key():
    assert root_key("wrong-result|reference|llvm|rms_norm:float32", _PREFIXES) == \
        "root|wrong-result|reference|llvm|rms_norm:float32"
    assert root_key("crash|worker|SIGSEGV", _PREFIXES) is None
    assert root_key("pass-order|hang|worker|timeout", _PREFIXES) is None
    assert root_key("poor-diagnostic|crash|build|TVMError||x", _PREFIXES) is None


def crash(signature: str, case: int, hits: int = 1) -> Finding:
    return Finding(kind="crash", oracle="crash", stage="build", signature=signature, message=f"m{case}", case=case,
                   hits=hits, confirmed=True, extra={"root_key": root_key(signature, _PREFIXES)})


def test_a_finding_with_the_root_key_of_a_filed_one_joins_it_and_a_resume_keeps_the_join(tmp_path):
    specs, settings = load_specs(), Settings(out=str(tmp_path / "out"), iterations=0)
    first = Campaign(settings, specs, progress=False)
    tables = first.tables
    case = first.maker.make_case(0)
    earlier = crash(crash_signature("build", "InternalError", MESSAGE, TRACE), case=0, hits=2)
    tables.file_finding("findings", earlier, {"repro.py": "raise SystemExit(1)\n"})
    later_sig = "executor|" + crash_signature("run", "InternalError", MESSAGE, TRACE)
    later = crash(later_sig, case=5, hits=3)
    first_seen = "executor|crash|run|InternalError||as first seen"
    assert tables.join_root(later, first_seen, {"repro.py": "raise SystemExit(2)\n"})
    assert list(tables.findings) == [earlier.signature] and earlier.hits == 5
    assert tables.keyed_on(later_sig) == tables.keyed_on(first_seen) == earlier.signature
    folder = tmp_path / "out" / earlier.path
    [merged] = earlier.extra["merged"]
    assert merged["signature"] == later_sig and merged["hits"] == 3
    assert (tmp_path / "out" / merged["path"] / "repro.py").read_text() == "raise SystemExit(2)\n"
    assert json.loads((folder / "finding.json").read_text())["hits"] == 5
    # a later hit of the joined one counts for the earlier
    tables.record(case, crash(later_sig, case=9), "log")
    assert earlier.hits == 6 and not tables.reductions.pending
    first.checkpoint()  # which writes the hit to finding.json too

    resumed = Campaign(settings, specs, progress=False)
    assert resumed.tables.roots == {earlier.extra["root_key"]: earlier.signature}
    resumed.tables.record(case, crash(first_seen, case=10), "log")
    assert resumed.tables.findings[earlier.signature].hits == 7 and not resumed.tables.reductions.pending
    another = crash("pass-order|" + crash_signature("build", "InternalError", MESSAGE, TRACE), case=11)
    assert resumed.tables.join_root(another, another.signature, {"repro.py": ""})
    assert resumed.tables.findings[earlier.signature].hits == 8


def test_a_lone_operator_key_joins_findings_whose_messages_differ_and_a_resume_knows_each_message(tmp_path):
    # ConvertLayout on one stack (TVM 0.27's InferLayoutStack): a negative axis and an axis
    # equal to the input's rank fail with two messages; one fault (bench18f to bench20)
    specs, settings = load_specs(), Settings(out=str(tmp_path / "out"), iterations=0)
    tables = Campaign(settings, specs, progress=False).tables
    stack = lone_operator_key("ConvertLayout", "stack")

    def on_stack(message: str, case: int) -> Finding:
        finding = crash(crash_signature("passes", "InternalError", message, ""), case=case)
        finding.extra["operator_key"] = stack
        return finding
    negative, rank = on_stack("basic_string::replace: __pos", 0), on_stack("Index -1 out of bounds 2", 1)
    assert negative.extra["root_key"] != rank.extra["root_key"]
    tables.file_finding("findings", negative, {"repro.py": ""})
    assert tables.join_root(rank, rank.signature, {"repro.py": ""})
    assert list(tables.findings) == [negative.signature] and negative.hits == 2
    # the key only joins: a finding of another operator with the first's message is its own
    other_op = crash(negative.signature.replace("__pos", "__pos "), case=2)
    other_op.extra.update(root_key=negative.extra["root_key"] + "x", operator_key=lone_operator_key("ConvertLayout",
                                                                                                    "concat"))
    assert not tables.join_root(other_op, other_op.signature, {})

    # resumed: a new signature with the joined one's message key joins the first as well
    resumed = Campaign(settings, specs, progress=False).tables
    again = crash(crash_signature("passes", "InternalError", "Index -1 out of bounds 2", "") + "|elsewhere", case=3)
    again.extra["root_key"] = rank.extra["root_key"]
    assert resumed.join_root(again, again.signature, {"repro.py": ""})
    assert resumed.findings[negative.signature].hits == 3


def test_a_finding_without_a_root_key_or_the_first_with_its_own_is_filed_as_any(tmp_path):
    specs, settings = load_specs(), Settings(out=str(tmp_path / "out"), iterations=0)
    tables = Campaign(settings, specs, progress=False).tables
    death = Finding(kind="crash", oracle="crash", stage="worker", signature="crash|worker|SIGSEGV", message="m")
    assert not tables.join_root(death, death.signature, {})
    first = crash(crash_signature("build", "InternalError", MESSAGE, TRACE), case=0)
    assert not tables.join_root(first, first.signature, {})
    tables.file_finding("findings", first, {"repro.py": ""})
    other = crash(crash_signature("build", "InternalError", "Check failed: (a == b) is false", TRACE), case=1)
    assert not tables.join_root(other, other.signature, {})
    assert not tables.aliases


def test_what_a_crash_message_quotes_tells_crashes_apart():
    def attribute_error(attribute: str) -> str:
        return crash_signature("passes", "AttributeError", f"'GlobalVar' object has no attribute '{attribute}'", "")
    assert root_key(attribute_error("name"), _PREFIXES) != root_key(attribute_error("struct_info"), _PREFIXES)


def test_a_root_cause_an_earlier_campaign_filed_is_known_and_counted_not_filed(tmp_path):
    specs = load_specs()
    earlier = Campaign(Settings(out=str(tmp_path / "earlier"), iterations=0), specs, progress=False)
    filed = crash(crash_signature("build", "InternalError", MESSAGE, TRACE), case=0)
    earlier.tables.file_finding("findings", filed, {"repro.py": ""})
    later = Campaign(Settings(out=str(tmp_path / "later"), iterations=0, known=str(tmp_path / "earlier")), specs,
                     progress=False)
    again = crash("pass-order|" + crash_signature("build", "InternalError", MESSAGE, TRACE), case=3, hits=2)
    assert later.tables.join_root(again, again.signature, {"repro.py": ""})
    assert not later.tables.findings and later.tables.known.hits == {filed.extra["root_key"]: 2}
    later.tables.record(later.maker.make_case(0), crash(again.signature, case=4), "log")
    assert later.tables.known.hits == {filed.extra["root_key"]: 3} and not later.tables.reductions.pending


def test_one_type_mismatch_at_two_ranks_has_one_root_key():
    def mismatch(shape: str) -> str:
        return "pass-order|" + crash_signature(
            "passes", "DiagnosticError", f"The Relay type checker is unable to show the following types match. "
            f"In particular `Tensor[{shape}, float32]` does not match `Tensor[{shape}, float16]` | "
            "The Relay type checker is unable to show the following types match. " * 3, "")
    assert root_key(mismatch("(3, 3, 4, 6)"), _PREFIXES) == root_key(mismatch("(5, 6)"), _PREFIXES)
    assert "Tensor[(shape), floatN]" in root_key(mismatch("(5, 6)"), _PREFIXES)


def test_a_type_mismatch_is_keyed_on_its_dtypes_but_a_shape_mismatch_keeps_its_shapes():
    def key(message):
        return root_key(ill_formed_signature("ToMixedPrecision", message), _PREFIXES)
    head = "DiagnosticError: The Relay type checker is unable to show the following types match. In particular "
    rank2 = key(head + "`Tensor[(2, 1), float16]` does not match `Tensor[(2, 1), float32]` | " + head + "...")
    scalar = key(head + "`float32` does not match `float16`")  # the other side first: one mismatch
    assert rank2 == scalar
    assert key(head + "`Tensor[(2, 3, 4), uint16]` does not match `Tensor[(2, 3, 4), float16]`") != rank2
    shapes_differ = key(head + "`Tensor[(2, 1), float16]` does not match `Tensor[(2, 1, 1), float16]`")
    assert shapes_differ != rank2 and "Tensor[(N, N, N), floatN]" in shapes_differ


def test_a_type_met_where_its_reverse_mode_pair_was_expected_is_one_key_whatever_the_type_and_order():
    """Relay's higher-order autodiff (TVM 0.19 ReverseADType) keeps a function type's return
    type: a closure's tensor result, and a function value's scalar one, each mismatch its
    (value, gradient reference) pair; seen both ways round (bench24 c1, 0001 and 0002)."""
    def key(message):
        return root_key(ill_formed_signature("Gradient", message), _PREFIXES)
    head = "DiagnosticError: The Relay type checker is unable to show the following types match. In particular "
    tensor = key(head + "`Tensor[(12), float64]` does not match `(Tensor[(12), float64], ref(Tensor[(12), float64]))`")
    scalar = key(head + "`(float64, ref(float64))` does not match `float64`")
    # a long type: the message's cut (normalize_message) falls inside the pair (c2 0017)
    rank4 = key(head + "`(Tensor[(3, 2, 5, 1), float64], ref(Tensor[(3, 2, 5, 1), float64]))` does not match "
                "`Tensor[(3, 2, 5, 1), float64]` | " + head + "`Tensor[(3, 2, 5, 1), float64]` does not match ...")
    assert tensor == scalar == rank4
    assert key(head + "`(float64, ref(Tensor[(3), float64]))` does not match `float64`") != scalar  # no pair of one type


def test_a_relay_type_error_is_signed_by_its_first_diagnostic_whatever_follows():
    """TVM 0.19's type checker says a mismatch once per place it fails (the higher-order
    autodiff's, once per closure): a program with two closures had another signature than
    one with one, so a reduction could drop neither (/tmp/r34, seed 1: two closures left).
    Other messages keep all they say."""
    head = "The Relay type checker is unable to show the following types match. In particular "
    first = head + "`(Tensor[(4, 1, 6), float64], ref(Tensor[(4, 1, 6), float64]))` does not match `Tensor[(4, 1, 6), float64]`"
    second = head + "`(Tensor[(24), float64], ref(Tensor[(24), float64]))` does not match `Tensor[(24), float64]`"
    def signature(message, exc_type="DiagnosticError"):  # the message as protocol.error_reply words it
        return crash_signature("passes", exc_type, f"{exc_type}: {message}", "")
    assert signature(f"{first} | {second}") == signature(first) == signature(f"{first} | {head[:-15]}")
    assert signature("a | b", "TVMError") != signature("a", "TVMError")


def test_a_frameless_pass_crash_is_keyed_on_the_one_pass_its_reduced_program_needs():
    # Relay's type checker raising at the end of ToMixedPrecision: no TVM frame says where
    def raised(particular: str) -> str:
        return "pass-order|" + crash_signature(
            "passes", "DiagnosticError", "The Relay type checker is unable to show the following types match. "
            f"In particular {particular} | The Relay type checker is unable to show the following types match.", "")
    scalar, tensor = raised("`float32` does not match `float16`"), raised(
        "`Tensor[(3, 4), float16]` does not match `Tensor[(3, 4), float32]`")
    assert root_key(scalar, _PREFIXES, "ToMixedPrecision") == root_key(tensor, _PREFIXES, "ToMixedPrecision")
    # keyed as the pass's ill-formed output (ill_formed_root: the type checker raised at its end)
    assert root_key(scalar, _PREFIXES, "ToMixedPrecision").startswith("root|ill-formed|ToMixedPrecision|")
    # another pass, another dtype pair, or no single pass named: other keys, as before
    assert root_key(scalar, _PREFIXES, "FakeQuantizationToInteger") != root_key(scalar, _PREFIXES, "ToMixedPrecision")
    assert root_key(raised("`Tensor[(3, 4), uint16]` does not match `Tensor[(3, 4), float16]`"), _PREFIXES,
                    "ToMixedPrecision") != root_key(tensor, _PREFIXES, "ToMixedPrecision")
    assert root_key(scalar, _PREFIXES) != root_key(tensor, _PREFIXES)
    assert "|stage:passes|" in root_key(scalar, _PREFIXES)


# --- a dead worker's fatal line -------------------------------------------------------------------

LLVM_ASSERT = ("python: /project/llvm-project/llvm/lib/IR/LLVMContextImpl.cpp:48: "
               "llvm::LLVMContextImpl::~LLVMContextImpl(): Assertion `TrailingDbgRecords.empty() && "
               "\"DbgRecords in blocks not cleaned\"' failed.")


def death_log(*last_words: str, stage: str = "build") -> str:
    """A dead worker's log as its finding's detail keeps it: its breadcrumbs, then what it said."""
    crumbs = ['hirfuzz-at {}', 'hirfuzz-at {"stage": "lower"}', f'hirfuzz-at {{"stage": "{stage}", "config": 0}}']
    return "\n".join([*crumbs, *last_words]) + "\n"


def test_two_deaths_with_one_assertion_share_a_root_key_wherever_they_died_and_its_source_was_built():
    # the bench17 Relay death (float16 acos after ToMixedPrecision, TVM 0.19), and one with
    # the assertion at another path and line, died in a pass: one LLVM fault
    build = root_key("pass-order|crash|worker|SIGABRT|build", _PREFIXES, detail=death_log(LLVM_ASSERT))
    elsewhere = LLVM_ASSERT.replace("/project/llvm-project/llvm/lib/IR/", "/src/llvm/lib/IR/").replace(":48:", ":51:")
    in_pass = root_key("crash|worker|SIGABRT|passes:FuseOps", _PREFIXES,
                       detail=death_log("[21:15:38] to_mixed_precision.cc:529: Warning: Op \"acos\"", elsewhere,
                                        stage="passes"))
    assert build == in_pass == ("root|crash|SIGABRT|LLVMContextImpl.cpp:llvm::LLVMContextImpl::~LLVMContextImpl()|"
                                "Assertion `TrailingDbgRecords.empty() && \"DbgRecords in blocks not cleaned\"' failed.")


def test_a_death_without_a_fatal_line_has_no_root_key():
    # the bench17 Relax deaths: a SIGFPE in ConvertLayout leaves its breadcrumbs alone;
    # a TVM warning is no fatal line
    quiet = death_log('hirfuzz-at {"stage": "passes", "config": 0, "pass": "ConvertLayout"}', stage="passes")
    assert root_key("crash|worker|SIGFPE|passes:ConvertLayout", _PREFIXES, detail=quiet) is None
    warned = death_log("[21:15:38] /project/tvm/src/relay/transforms/to_mixed_precision.cc:529: Warning: "
                       "Op \"acos\" not registered FTVMMixedPrecisionConversionType appears 1 times in graph.")
    assert root_key("crash|worker|SIGSEGV|build", _PREFIXES, detail=warned) is None
    assert root_key("hang|worker|timeout", _PREFIXES, detail=death_log(LLVM_ASSERT)) is None


def test_a_fatal_line_an_earlier_case_of_the_worker_left_is_not_this_deaths():
    earlier = death_log("LLVM ERROR: Cannot select: intrinsic %llvm.x86.foo")
    assert root_key("crash|worker|SIGSEGV|build", _PREFIXES, detail=earlier + death_log()) is None


def test_different_fatal_lines_are_different_root_keys():
    def key(*last_words: str, signal: str = "SIGABRT") -> str | None:
        return root_key(f"crash|worker|{signal}|build", _PREFIXES, detail=death_log(*last_words))
    other_assert = LLVM_ASSERT.replace("TrailingDbgRecords.empty()", "use_empty()")
    other_place = LLVM_ASSERT.replace("LLVMContextImpl.cpp", "Value.cpp")
    llvm_error = "LLVM ERROR: Cannot select: 0x55d0c2a1b2c8: f16 = facos 0x55d0c2a1b230"
    tvm_check = "[12:00:01] /project/tvm/src/tir/transforms/lower_intrin.cc:57: Check failed: (x) is false: at v12"
    uncaught = ["terminate called after throwing an instance of 'tvm::runtime::InternalError'",
                "  what():  Traceback (most recent call last):", "  0: tvm::codegen::CodeGenLLVM::CreateIntrinsic",
                '  File "/project/tvm/src/target/llvm/codegen_llvm.cc", line 1532',
                "TVMError: unknown intrinsic Op(tir.acos)"]
    keys = [key(LLVM_ASSERT), key(other_assert), key(other_place), key(llvm_error), key(tvm_check), key(*uncaught),
            key(LLVM_ASSERT, signal="exit")]
    assert None not in keys and len(set(keys)) == len(keys)
    # addresses, numbers and a TVM path's folders are left out, as a crash's message leaves them
    assert key(llvm_error) == key(llvm_error.replace("0x55d0c2a1b2c8", "0x7f00aa")) == \
        "root|crash|SIGABRT|LLVM ERROR|Cannot select: Nx?: fN = facos Nx?"
    assert key(tvm_check) == "root|crash|SIGABRT|lower_intrin.cc|Check failed: (x)"
    assert key(*uncaught) == "root|crash|SIGABRT|codegen_llvm.cc|TVMError: unknown intrinsic Op(tir.acos)"


def test_a_finished_death_is_keyed_on_the_fatal_line_of_its_reduced_programs_log(tmp_path):
    campaign = Campaign(Settings(out=str(tmp_path / "out"), iterations=0), load_specs(), progress=False)
    reduction = Reduction(campaign.reductions.host, None, threading.Event(), campaign.reductions.pending)
    death = Finding(kind="crash", oracle="crash", stage="worker", signature="crash|worker|SIGABRT|build",
                    message="killed by SIGABRT in the build stage", detail=death_log(LLVM_ASSERT))
    job = Job("findings", None, death, "", "key", death.signature)
    assert reduction.root_key_of(job, Finishing(death, campaign.maker.make_case(0))).startswith(
        "root|crash|SIGABRT|LLVMContextImpl.cpp:")


SITE = "/venv/lib/python3.11/site-packages"
IN_HIRFUZZ = '  File "/work/hirfuzz/dialects/relay/passes.py", line 80, in apply_passes\n'


def frame(path: str, function: str) -> str:
    """A Python traceback's line for a frame."""
    return f'  File "{path}", line 1, in {function}\n'


def test_only_a_frame_of_tvms_own_python_places_a_crash_that_no_cpp_frame_does():
    raised_in_topi = frame(f"{SITE}/tvm/topi/utils.py", "get_const_int")
    # TVM 0.19's FFI passing a C++ error on, with no backtrace: its frame says nothing of where
    passed_on = frame(f"{SITE}/tvm/_ffi/base.py", "raise_last_ffi_error")
    assert tvm_python_frame(f'Traceback:\n{IN_HIRFUZZ}{raised_in_topi}') == "tvm/topi/utils.py:get_const_int"
    assert tvm_python_frame(f'Traceback:\n{raised_in_topi}{passed_on}') == ""
    assert tvm_python_frame(f'Traceback:\n{raised_in_topi}{IN_HIRFUZZ}') == ""
    signature = crash_signature("build", "ValueError", "Expect value to be constant int", "")
    assert "|tvm/topi/utils.py:get_const_int|" in root_key(signature, _PREFIXES, detail=raised_in_topi)
    assert "|stage:build|" in root_key(signature, _PREFIXES, detail=passed_on)


def test_a_helper_checking_its_argument_places_a_crash_at_its_caller():
    """topi's get_const_int raises for whoever gives it a symbolic extent: prelu's and
    slice_scatter's are two faults (bench25 relax seed 13, one key before)."""
    checker = frame(f"{SITE}/tvm/topi/utils.py", "get_const_int")
    prelu = frame(f"{SITE}/tvm/topi/nn/elemwise.py", "prelu")
    slice_scatter = frame(f"{SITE}/tvm/topi/slice_scatter.py", "slice_scatter")
    assert tvm_python_frame(f"Traceback:\n{prelu}{checker}") == "tvm/topi/nn/elemwise.py:prelu>get_const_int"
    assert (tvm_python_frame(f"Traceback:\n{slice_scatter}{checker}")
            == "tvm/topi/slice_scatter.py:slice_scatter>get_const_int")
    assert tvm_python_frame(f"Traceback:\n{IN_HIRFUZZ}{checker}") == "tvm/topi/utils.py:get_const_int"
    signature = crash_signature("build", "ValueError", "Expect value to be constant int", "")
    assert root_key(signature, _PREFIXES, detail=prelu + checker) != root_key(signature, _PREFIXES,
                                                                             detail=slice_scatter + checker)


def test_a_crash_in_topi_is_in_an_operator_s_code_and_one_in_a_pass_is_not():
    checker = frame(f"{SITE}/tvm/topi/utils.py", "get_const_int")
    prelu = frame(f"{SITE}/tvm/topi/nn/elemwise.py", "prelu")
    raised = "pass-order|" + crash_signature("build", "ValueError", "Expect value to be constant int", "")
    assert in_operator_code(raised, f"Traceback:\n{prelu}{checker}")
    assert not in_operator_code(raised, f"Traceback:\n{IN_HIRFUZZ}")
    codegen = ("pass-order|crash|build|InternalError|relax/backend/vm/codegen_vm.cc:Instruction::Arg VisitExpr_|"
               "cannot emit")
    assert not in_operator_code(codegen, "")
    assert not in_operator_code("wrong-result|gradient|values|where", "")


def test_an_ir_node_a_message_prints_is_the_programs_not_the_faults():
    # Relay 0.19's ToMixedPrecision on a callee that is itself a call (to_mixed_precision.cc):
    # a global function's getter, or a function literal called at once
    def raised(callee: str) -> str:
        return "pass-order|" + crash_signature("passes", "TVMError",
                                               f"Unsupported op type in CallNode: CallNode({callee}, [], (nullptr), [])", "")
    getter, literal = raised('I.GlobalVar("get_f1")'), raised("fn () {\n  %0 = ones(shape=[2]);\n  fn () { %0 }\n}()")
    assert getter != literal
    assert root_key(getter, _PREFIXES, "ToMixedPrecision") == root_key(literal, _PREFIXES, "ToMixedPrecision")
    assert root_key(getter, _PREFIXES, "ToMixedPrecision").endswith("Unsupported op type in CallNode: <IR>")


def test_a_mismatch_keeps_whether_a_float_was_16_bits_wide_as_its_message_said():
    # Relay 0.19 ToMixedPrecision: a converted float16 (or bfloat16) result where float64 or
    # float32 was declared is one fault; float64 arguments cast down to float32 (calls kept
    # at full precision) another, though both normalise to `floatN` does not match `floatN`
    def keyed(first: str, second: str) -> str:
        said = (f"DiagnosticError: The Relay type checker is unable to show the following types match. "
                f"In particular `Tensor[(4, 4), {first}]` does not match `Tensor[(4, 4), {second}]`")
        return root_key("pass-order|" + ill_formed_signature("ToMixedPrecision", said), {"pass-order|"}, said=said)
    half_for_double, half_for_single = keyed("float64", "float16"), keyed("bfloat16", "float32")
    assert half_for_double == half_for_single
    assert half_for_double.endswith("`floatN` does not match `halfN`"), half_for_double
    assert keyed("float64", "float32") != half_for_double
    assert keyed("uint8", "float16") != half_for_double



# Relay ToMixedPrecision (TVM 0.19) findings of bench18f/relay-final, as saved: signature,
# message (its start), the pass the worker said raised (None: ill-formed after it), and the
# reduced program's lowering plan, graph (dtypes only) and pass steps
_TC = "The Relay type checker is unable to show the following types match. In particular "
_TMP = {"name": "ToMixedPrecision", "args": {"mixed_precision_type": "float16", "missing_op_mode": 1}}


def _nodes(*dtypes_and_inputs) -> dict:
    return {"nodes": [{"id": i, "outputs": [{"dtype": dtype}], **({"inputs": inputs} if inputs else {})}
                      for i, (dtype, inputs) in enumerate(dtypes_and_inputs)]}


def _plan(functions=(), node_features=None) -> dict:
    return {"plan": {"format": 1, "functions": [{"start": s, "end": e, "kind": k, "captures": [], "as_value": v,
                                                 "plain": False} for s, e, k, v in functions],
                     "node_features": node_features or {}}}


# 0001: a let-bound If ("let %v1: Tensor[(6, 2, 3, 5), float64] = if (...) { sqrt(%x0) } else { zeros(...) }")
LET_IF = ("pass-order|crash|passes|DiagnosticError||DiagnosticError: " + _TC
          + "`Tensor[(N, N, N, N), floatN]` does not match `Tensor[(N, N, N, N), floatN]` | The Relay type checker",
          "after ToMixedPrecision(mixed_precision_type='float16', missing_op_mode=1): DiagnosticError: " + _TC
          + "`Tensor[(6, 2, 3, 5), float64]` does not match `Tensor[(6, 2, 3, 5), float16]` | The R",
          "ToMixedPrecision", _plan(node_features={"1": ["if_shape"]}),
          _nodes(("float64", None), ("float64", [[0, 0]])), [_TMP])
# merged into 0001 (crash-a658576e13): main calls @f1 (nn.softmax of float64), after ToGraphNormalForm
GLOBAL_CALL = ("pass-order|crash|passes|DiagnosticError||DiagnosticError: " + _TC
               + "`Tensor[(N, N, N, N), floatN]` does not match `Tensor[(N, N, N, N), bfloatN]` | The type inference pa",
               "after ToGraphNormalForm(), ToMixedPrecision(mixed_precision_type='bfloat16', missing_op_mode=1): "
               "DiagnosticError: " + _TC + "`Tensor[(3, 1, 5, 4), float64]` does not match `Tensor[(3, 1, 5, 4), bfloat16]`",
               "ToMixedPrecision", _plan([(2, 2, "global", False)]),
               _nodes(("float64", None), ("float64", [[0, 0]]), ("float64", [[1, 0]])),
               [{"name": "ToGraphNormalForm", "args": {}}, {**_TMP, "args": {"mixed_precision_type": "bfloat16"}}])
# 0010: ill-formed after ToMixedPrecision, @f1 called from main
GLOBAL_CALL_ILL_FORMED = (
    "pass-order|ill-formed|ToMixedPrecision|DiagnosticError: " + _TC
    + "`Tensor[(N, N, N), floatN]` does not match `Tensor[(N, N, N), floatN]`",
    "after ToMixedPrecision(mixed_precision_type='float16', missing_op_mode=2): ToMixedPrecision left an ill-formed "
    "module: DiagnosticError: " + _TC + "`Tensor[(1, 1, 6), float16]` does not match `Tensor[(1, 1, 6), float32]`",
    None, _plan([(2, 3, "global", False)]),
    _nodes(("int64", None), ("float32", None), ("float32", [[1, 0]]), ("int64", [[0, 0]]), ("float32", None),
           ("float32", [[2, 0], [4, 0]])), [_TMP])
# merged into 0001 (crash-6b799f3f8b): FuseOps made main call function literals (float16 x * sigmoid(x))
FUSED_LITERAL = ("pass-order|crash|passes|DiagnosticError||DiagnosticError: " + _TC
                 + "`Tensor[(N, N, N), floatN]` does not match `Tensor[(N, N, N), floatN]`",
                 "after SimplifyInference(), FuseOps(fuse_opt_level=3), ToMixedPrecision(mixed_precision_type='float16', "
                 "missing_op_mode=1): DiagnosticError: " + _TC + "`Tensor[(3, 1, 4), float16]` does not match `Tensor[(3, 1, 4), float32]`",
                 "ToMixedPrecision", {}, _nodes(("float16", None), ("float16", [[0, 0]])),
                 [{"name": "SimplifyInference", "args": {}}, {"name": "FuseOps", "args": {"fuse_opt_level": 3}}, _TMP])
# merged into 0001 (crash-38a2aa0c23): a let-bound If, beside a global function of uint16 only
LET_IF_BESIDE_AN_INTEGER_GLOBAL = (
    "pass-order|crash|passes|DiagnosticError||DiagnosticError: " + _TC
    + "`Tensor[(N, N, N), floatN]` does not match `Tensor[(N, N, N), floatN]` | The type inference pass was ",
    "after ToMixedPrecision(mixed_precision_type='float16', missing_op_mode=1): DiagnosticError: " + _TC
    + "`Tensor[(2, 6, 6), float32]` does not match `Tensor[(2, 6, 6), float16]` | The type in",
    "ToMixedPrecision", _plan([(4, 4, "global", False)], {"2": ["if_shape", "tuple"]}),
    _nodes(("float32", None), ("float32", None), ("float32", [[0, 0], [1, 0]]), ("uint16", None),
           ("uint16", [[3, 0]])), [_TMP])


def _key(finding, construct=True) -> str:
    signature, message, failed_pass, lowering, graph, steps = finding
    carrier = stale_type_carrier(lowering, graph, steps) if construct else ""
    return root_key(signature, _PREFIXES, failed_pass, "", message, carrier)


def test_a_mixed_precision_stale_type_is_keyed_on_the_construct_that_carries_it():
    # what the reduced program carries the stale type in, as ToMixedPrecision handles it
    assert stale_type_carrier(*LET_IF[3:]) == "let binding"
    assert stale_type_carrier(*GLOBAL_CALL[3:]) == stale_type_carrier(*GLOBAL_CALL_ILL_FORMED[3:]) == "global call"
    assert stale_type_carrier(*FUSED_LITERAL[3:]) == "function literal"
    assert stale_type_carrier(*LET_IF_BESIDE_AN_INTEGER_GLOBAL[3:]) == "let binding"
    # one dtype pair, three constructs: keyed as one without the construct (the campaign's
    # wrong joins into 0001), apart with it
    assert len({_key(f, construct=False) for f in (LET_IF, GLOBAL_CALL, FUSED_LITERAL)}) == 1
    assert len({_key(f) for f in (LET_IF, GLOBAL_CALL, FUSED_LITERAL)}) == 3
    assert _key(LET_IF) == _key(LET_IF_BESIDE_AN_INTEGER_GLOBAL)
    assert _key(LET_IF) == "root|ill-formed|ToMixedPrecision|a float type left stale at: let binding", _key(LET_IF)


# 0005: EtaExpand put @f1's call (greater_equal of two float64) in a function literal,
# whose arguments ToMixedPrecision casts to float32
LITERAL_FOR_A_GLOBAL = (
    "pass-order|crash|passes|DiagnosticError||DiagnosticError: " + _TC
    + "`Tensor[(N, N, N), floatN]` does not match `Tensor[(N, N, N), floatN]` | The Relay type checker is un",
    "after EtaExpand(expand_global_var=True, expand_constructor=False), ToMixedPrecision(mixed_precision_type='bfloat16', "
    "missing_op_mode=1): DiagnosticError: " + _TC + "`Tensor[(4, 4, 4), float64]` does not match `Tensor[(4, 4, 4), float32]`",
    "ToMixedPrecision", _plan([(0, 2, "global", False)]),
    _nodes(("float64", None), ("float64", None), ("bool", [[1, 0], [0, 0]])),
    [{"name": "EtaExpand", "args": {"expand_global_var": True, "expand_constructor": False}}, _TMP])
# merged into 0005 (crash-17b1f3d0f2): main passes mean's float32 result to @f1's float64 parameter
GLOBAL_CALL_OF_A_MEAN = (
    "pass-order|crash|passes|DiagnosticError||DiagnosticError: " + _TC
    + "`Tensor[(N), floatN]` does not match `Tensor[(N), floatN]` | The type inference pass was unable to in",
    "after ToMixedPrecision(mixed_precision_type='bfloat16', missing_op_mode=1): DiagnosticError: " + _TC
    + "`Tensor[(6), float64]` does not match `Tensor[(6), float32]` | The type inference pas",
    "ToMixedPrecision", _plan([(2, 2, "global", False)]),
    _nodes(("float64", None), ("float64", [[0, 0]]), ("float64", [[1, 0]])), [_TMP])


def test_which_floats_a_stale_type_holds_is_the_programs_where_the_construct_is_known():
    # the campaign joined crash-17b1f3d0f2 to 0005 and crash-6b799f3f8b to 0001 (by their
    # dtype pairs); a reader placed them with 0010 (a global call) and 0005 (a literal's cast)
    assert _key(GLOBAL_CALL_OF_A_MEAN, construct=False) == _key(LITERAL_FOR_A_GLOBAL, construct=False)
    assert _key(GLOBAL_CALL_OF_A_MEAN) == _key(GLOBAL_CALL_ILL_FORMED) != _key(LITERAL_FOR_A_GLOBAL)
    assert _key(FUSED_LITERAL) == _key(LITERAL_FOR_A_GLOBAL)
    # no construct known: the dtypes still key it, a 16-bit float apart
    assert _key(LET_IF, construct=False).endswith("`floatN` does not match `halfN`")


def test_a_pass_that_lifts_or_wraps_what_carries_the_type_changes_the_construct():
    local = _plan([(2, 2, "local", True)])
    floats = _nodes(("float32", None), ("float32", [[0, 0]]), ("float32", [[1, 0]]))
    # crash-be3cfe482c: LambdaLift made the closure a global function
    assert stale_type_carrier(local, floats, [_TMP]) == "let-bound closure"
    assert stale_type_carrier(local, floats, [{"name": "LambdaLift", "args": {}}, _TMP]) == "global call"
    # 0005: EtaExpand(expand_global_var=True) calls the global through a function literal
    a_global = _plan([(0, 2, "global", False)])
    eta = {"name": "EtaExpand", "args": {"expand_global_var": True, "expand_constructor": False}}
    assert stale_type_carrier(a_global, floats, [eta, _TMP]) == "function literal"
    assert stale_type_carrier(a_global, floats, [{**eta, "args": {"expand_global_var": False}}, _TMP]) == "global call"
    # ToGraphNormalForm leaves an If unbound, which ToMixedPrecision types right
    if_only = _plan(node_features={"1": ["if_shape"]})
    assert stale_type_carrier(if_only, floats, [{"name": "ToGraphNormalForm", "args": {}}, _TMP]) == ""


def test_one_mixed_precision_stale_type_raised_in_the_pass_or_left_ill_formed_is_one_key():
    # 0010 (left ill-formed) and crash-a658576e13 (raised at the pass's end): one global-call
    # fault; the pass's own type inference let one through, not the other
    assert GLOBAL_CALL[0].split("|")[1] == "crash" and GLOBAL_CALL_ILL_FORMED[0].split("|")[1] == "ill-formed"
    assert _key(GLOBAL_CALL) == _key(GLOBAL_CALL_ILL_FORMED)


# R2, ToMixedPrecision's integer conv/batch_matmul given the mixed type as out_dtype
# (ModifyAttrsOutputDType sets a void out_dtype whatever the input dtype): bench18f relay-final
# 0012, 0015, 0016, 0022 and bench18 relay-base27 0008, as saved
INTEGER_OUT_DTYPE = [
    ("pass-order|crash|passes|DiagnosticError||DiagnosticError: " + _TC
     + "`Tensor[(N, N, N, N), uintN]` does not match `Tensor[(N, N, N, N), floatN]`",
     "after ToMixedPrecision(mixed_precision_type='float16', missing_op_mode=1): DiagnosticError: " + _TC
     + "`Tensor[(4, 4, 1, 2), uint8]` does not match `Tensor[(4, 4, 1, 2), float16]` under vm ", "ToMixedPrecision"),
    ("pass-order|crash|passes|DiagnosticError||DiagnosticError: " + _TC
     + "`Tensor[(N, N, N), intN]` does not match `Tensor[(N, N, N), bfloatN]` | The Relay type checker is una",
     "after ToMixedPrecision(mixed_precision_type='bfloat16', missing_op_mode=2): DiagnosticError: " + _TC
     + "`Tensor[(5, 10, 1), int8]` does not match `Tensor[(5, 10, 1), bfloat16]` | The Relay ", "ToMixedPrecision"),
    ("pass-order|ill-formed|ToMixedPrecision|DiagnosticError: " + _TC
     + "`Tensor[(N, N, N), bfloatN]` does not match `Tensor[(N, N, N), uintN]` | The Relay type checker is un",
     "after ToMixedPrecision(mixed_precision_type='bfloat16', missing_op_mode=1): ToMixedPrecision left an ill-formed "
     "module: DiagnosticError: " + _TC + "`Tensor[(4, 3, 3), bfloat16]` does not match `Tensor[(4, 3, 3), uint16]`",
     None),
    ("pass-order|crash|passes|DiagnosticError||DiagnosticError: data types floatN and intN do not match in "
     "BroadcastRel | The Relay type checker is unable to show the following types match. In particular "
     "`Tensor[(N, N, N, N), intN]` does not match",
     "after ToMixedPrecision(mixed_precision_type='float16', missing_op_mode=2): DiagnosticError: data types float16 "
     "and int16 do not match in BroadcastRel | The Relay type checker is unable to show the following types match. "
     "In particular `Tensor[(3, 3, 5, 3), int1", "ToMixedPrecision"),
    ("pass-order|crash|passes|DiagnosticError||DiagnosticError: data types bfloatN and uintN do not match in BroadcastRel",
     "after ToMixedPrecision(mixed_precision_type='bfloat16', missing_op_mode=2): DiagnosticError: data types "
     "bfloat16 and uint16 do not match in BroadcastRel under vm on llvm (opt_level 3)", "ToMixedPrecision"),
]


def test_an_integer_out_dtype_made_float_is_one_key_signed_or_not_raised_or_ill_formed_in_either_words():
    # whatever construct the conv sits in (0012 a let-bound If, 0015 a closure, 0016 a
    # global function): the integer is the fault's, not a stale type's
    keys = {root_key(signature, _PREFIXES, failed_pass, "", said, "let binding")
            for signature, said, failed_pass in INTEGER_OUT_DTYPE}
    assert keys == {"root|ill-formed|ToMixedPrecision|DiagnosticError: " + _TC + "`halfN` does not match `intN`"}, keys
    # a float32 where an integer was (not a 16-bit float) stays apart, and so does a stale float
    signature, said, failed_pass = INTEGER_OUT_DTYPE[0]
    wide = said.replace("float16", "float32")
    assert root_key(signature, _PREFIXES, failed_pass, "", wide) not in keys
    assert _key(LET_IF) not in keys
    # another pass keeps uint apart from int, and BroadcastRel's words
    other = [s.replace("ToMixedPrecision", "FakeQuantizationToInteger") for s in (INTEGER_OUT_DTYPE[2][0], INTEGER_OUT_DTYPE[1][0])]
    assert root_key(other[0], _PREFIXES) != root_key(other[1], _PREFIXES)


def test_the_construct_of_any_graph_is_read_its_variadic_inputs_too():
    # a Relax stack's inputs, one list of references (bench18f relax-final 0006): every
    # finding's reduced program is read, not only ToMixedPrecision's
    graph = {"nodes": [{"id": 0, "outputs": [{"dtype": "int32"}]}, {"id": 1, "outputs": [{"dtype": "float32"}]},
                       {"id": 2, "outputs": [{"dtype": "int32"}], "inputs": [[0, 0], [[1, 0]]]}]}
    assert stale_type_carrier(_plan([(2, 2, "global", False)]), graph, [_TMP]) == "global call"


def test_a_build_crash_is_never_keyed_on_the_sequence_pass_before_it():
    from hirfuzz.core.finding import failed_pass_of
    # a one-pass reduced sequence names the pass of a frameless crash in the passes stage ...
    assert failed_pass_of({}, ["LambdaLift"], "passes") == "LambdaLift"
    # ... but a build that fails after it did not fail in it: only the pass the worker saw
    # raise inside the build names it
    assert failed_pass_of({}, ["LambdaLift"], "build") is None
    assert failed_pass_of({"failed_pass": "AlterOpLayout"}, ["LambdaLift"], "build") == "AlterOpLayout"


def test_tvm_0_19_to_mixed_precision_s_integer_fault_met_by_tir_arithmetic_is_the_same_key():
    # bench19 relay-now 0017 (a uint32 batch_matmul made bfloat16, met by arithmetic as the
    # pass folds) and 0013 (an int64 conv1d made bfloat16, left for the type checker)
    crashed = root_key("pass-order|crash|passes|InternalError||Check failed: x->dtype == y->dtype (bfloatN vs. uintN) : "
                       "x and y must have the same dtype: bfloatN vs uintN", _PREFIXES, "ToMixedPrecision",
                       said="after ToMixedPrecision(...): InternalError: Check failed: x->dtype == y->dtype "
                            "(bfloat16 vs. uint32) : x and y must have the same dtype: bfloat16 vs uint32")
    ill_formed = root_key("pass-order|ill-formed|ToMixedPrecision|DiagnosticError: The Relay type checker is unable to "
                          "show the following types match. In particular `Tensor[(N, N, N), bfloatN]` does not match "
                          "`Tensor[(N, N, N), intN]`", _PREFIXES,
                          said="ToMixedPrecision left an ill-formed module: DiagnosticError: The Relay type checker is "
                               "unable to show the following types match. In particular `Tensor[(1, 1, 9), bfloat16]` "
                               "does not match `Tensor[(1, 1, 9), int64]`")
    assert crashed == ill_formed, (crashed, ill_formed)
    # two floats met so are no integer fault: keyed as any frameless crash of the pass
    floats = root_key("pass-order|crash|passes|InternalError||Check failed: x->dtype == y->dtype (halfN vs. floatN) : "
                      "x and y must have the same dtype", _PREFIXES, "ToMixedPrecision")
    assert floats.startswith("root|crash|InternalError|pass:ToMixedPrecision|"), floats


def relay_backtrace(*frames: str) -> str:
    """A TVM 0.19 error's C++ backtrace as its log holds it: no file names, innermost last."""
    return "".join(f"  {len(frames) - 1 - i}: {frame}\n" for i, frame in enumerate(frames))


def test_a_code_generators_failure_in_a_relay_backtrace_is_keyed_there_whichever_pass_ran_the_build():
    # TVM 0.19: float16 acos has no LLVM lowering; FoldConstant builds the constant it folds
    # with the same code generator as relay.build does (bench21 relay-now 0017 and 0010)
    said = "TVMError: unknown intrinsic Op(tir.acos)"
    trace = relay_backtrace("tvm::codegen::Build(tvm::IRModule, tvm::Target)",
                            "tvm::codegen::CodeGenLLVM::VisitExpr_(tvm::tir::CallNode const*)",
                            "tvm::codegen::CodeGenLLVM::CreateIntrinsic(tvm::tir::CallNode const*)")
    in_pass = root_key("pass-order|" + crash_signature("passes", "TVMError", said, ""), _PREFIXES, "FoldConstant",
                       detail=trace)
    in_build = root_key(crash_signature("build", "TVMError", said, ""), _PREFIXES, detail=trace)
    assert in_pass == in_build == ("root|crash|TVMError|cpp:tvm::codegen::CodeGenLLVM::CreateIntrinsic|"
                                   "TVMError: unknown intrinsic Op(tir.?)")
    # any math function TVM's default rule leaves to the code generator under float16: one gap
    atanh = root_key(crash_signature("build", "TVMError", said.replace("acos", "atanh"), ""), _PREFIXES, detail=trace)
    assert atanh == in_build
    # an innermost frame that only reports the error says nothing of where: the pass does
    reporter = relay_backtrace("tvm::relay::transform::FoldConstant", "tvm::DiagnosticContext::Render()")
    keyed = root_key("pass-order|" + crash_signature("passes", "TVMError", said, ""), _PREFIXES, "FoldConstant",
                     detail=reporter)
    assert "|pass:FoldConstant|" in keyed


def test_a_wrong_loss_of_one_operator_joins_that_operators_wrong_result(tmp_path):
    # Relay 0.19's float64-to-float16 astype returns garbage: the baseline's wrong result and
    # the gradient oracle's wrong loss of the same one-operator program (bench20, bench21)
    campaign = Campaign(Settings(out=str(tmp_path / "out"), iterations=0), load_specs(), progress=False)
    reduction = Reduction(campaign.reductions.host, None, threading.Event(), campaign.reductions.pending)
    astype = graph_of(var(0, [4, 6]), {**op(1, "astype", [[0, 0]], [4, 6], {"to": "float16"}),
                                        "outputs": [{"shape": [4, 6], "dtype": "float16"}]})
    case = campaign.maker.make_case(0, astype, None, lowering={})
    forward = Finding(kind="wrong-result", oracle="reference", stage="run", case=0, confirmed=True,
                      signature="wrong-result|reference|llvm|astype:float64", message="result 0 differs")
    forward.extra["root_key"] = root_key(forward.signature, _PREFIXES)
    campaign.tables.file_finding("findings", forward, {"repro.py": ""})

    def gradient(what: str) -> Finding:
        found = Finding(kind="wrong-result", oracle="gradient", stage="run", case=1, confirmed=True,
                        signature=f"wrong-result|gradient|{what}|astype", message="the gradient differs")
        found.extra.update(root_key=root_key(found.signature, _PREFIXES),
                           config=definition(Oracle.GRADIENT).config(campaign.maker))  # as the oracle files it
        key = reduction.operator_key_of(Job("findings", case, found, "", "k", found.signature), Finishing(found, case))
        if key is not None:
            found.extra["operator_key"] = key
        return found
    values = gradient("values")  # a gradient computed wrong is the autodiff's, not the forward's
    assert "operator_key" not in values.extra and not campaign.tables.join_root(values, values.signature, {})
    loss = gradient("loss")
    assert loss.extra["operator_key"] == forward.extra["root_key"]
    assert campaign.tables.join_root(loss, loss.signature, {"repro.py": ""}) and forward.hits == 2


def test_a_finding_keyed_as_its_operator_alone_has_that_operator_s_lone_key(tmp_path):
    """A pass's failure whose reduced program kept several operators, one of which fails the
    pass alone (OperatorBlame's state.alone), gets that operator's lone-operator key as its
    second key, as a finding reduced to the operator has: bench24 relax-now 0015 (keyed as
    stack, ConvertLayout's raise) and 0003 (stack alone, a SIGFPE) were two findings."""
    campaign = Campaign(Settings(out=str(tmp_path / "out"), iterations=0), load_specs(), progress=False)
    stack_abs = graph_of(var(0, [2, 3]), var(1, [2, 3]), op(2, "stack", [[0, 0], [[1, 0]]], [2, 2, 3], {"axis": 0}),
                         op(3, "abs", [[2, 0]], [2, 2, 3]))
    stack = graph_of(var(0, [2, 3]), var(1, [2, 3]), op(2, "stack", [[0, 0], [[1, 0]]], [2, 2, 3], {"axis": 0}))
    config = make_config("vm", "llvm", passes=[{"name": "ConvertLayout"}])
    case = campaign.maker.make_case(0, graph=stack_abs, lowering={}, configs=[config])
    alone = campaign.maker.make_case(0, graph=stack, lowering={}, configs=[config])

    def raised(ops) -> Finding:
        return Finding(kind="crash", oracle="pass-order", stage="passes", case=0,
                       signature=f"pass-order|crash|passes|InternalError||basic_string::replace ({ops})",
                       message="basic_string::replace", extra={"failed_pass": "ConvertLayout", "config": config})
    finding = raised("stack,abs")
    state = Finishing(finding, case)
    job = Job("findings", None, finding, "", "key", finding.signature)
    assert Reduction.operator_key_of(job, state) is None  # two operators: no lone key of its own
    state.alone = OperatorAlone("stack", raised("stack"), alone)
    assert Reduction.operator_key_of(job, state) == "root|pass-operator|ConvertLayout|stack"


def test_a_crash_in_topis_cpp_is_keyed_there_whichever_pass_legalized_it():
    """topi's C++ is header-only (include/tvm/topi/), which the signature's frame (src/ alone)
    leaves out: reverse_sequence's check on a symbolic batch was keyed on FoldConstant in one
    finding and on the build's LegalizeOps in another (bench26 relax seed 13 0016 + 0026)."""
    legalized = (frame(f"{SITE}/tvm/topi/transform.py", "reverse_sequence")
                 + frame("/project/include/tvm/topi/transform.h",
                         "tvm::te::Tensor tvm::topi::reverse_sequence(const tvm::te::Tensor&, int, int)"))
    assert topi_frame(legalized) == "tvm/topi/transform.h:tvm::te::Tensor tvm::topi::reverse_sequence(" \
                                    "const tvm::te::Tensor&, int, int)"
    assert topi_frame(frame("/project/include/tvm/ffi/error.h", "Throw")) == ""
    message = "Check failed: (GetConstInt(seq_lengths->shape[0]) == GetConstInt(x->shape[batch_axis]))"
    keys = {root_key(crash_signature(stage, "InternalError", message, ""), _PREFIXES, failed_pass, legalized)
            for stage, failed_pass in (("passes", "FoldConstant"), ("build", "LegalizeOps"))}
    assert len(keys) == 1 and "|tvm/topi/transform.h:" in keys.pop()


def test_a_check_quoting_a_dimension_is_one_key_whichever_side_is_symbolic():
    # bench30 relax seed 31 now 0034 and 0037: collapse_sum_like after CanonicalizeBindings
    frame = 'File "/project/src/relax/op/tensor/manipulate.cc", line 9, in void tvm::relax::CheckCollapseShape()\n'

    def key(data: str, target: str) -> str:
        message = (f"Op(relax.collapse_sum_like) fails to match the axes because of unknown dim or symbolic shape. "
                   f"In this position the dim of data shape is {data} while the dim of target shape is {target}.")
        return root_key(crash_signature("passes", "ValueError", message, frame), _PREFIXES)
    assert key("n2", "T.int64(2)") == key("T.int64(3)", "n3") == key("n4", "n5")
    assert key("n2", "T.int64(2)").endswith("the dim of data shape is <dim> while th")  # cut at ROOT_MESSAGE


def test_a_relay_dynamic_dimension_is_a_size_like_any_other_in_a_signature():
    # bench30 relay seed 32 now 0010: ToMixedPrecision's mismatch on log(x: Tensor[(?, 1), float16])
    # is the static program's too; with `?` in its signature, shrink_plan could not drop the `?`
    def signature(dimension: str) -> str:
        message = ("DiagnosticError: The Relay type checker is unable to show the following types match. In "
                   f"particular `Tensor[({dimension}, 1), float16]` does not match `Tensor[({dimension}, 1), float32]`")
        return crash_signature("passes", "DiagnosticError", message, "")
    assert signature("?") == signature("2") == signature("7")
    assert "`Tensor[(N, N), floatN]` does not match" in signature("?")
