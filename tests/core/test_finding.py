"""What a finding says first, and what keys it: the error, not the backtrace around it."""
from hirfuzz.core.finding import crash_signature, headline

# TVM 0.19 with TVM_BACKTRACE=1: the C++ backtrace first, the error last, detail after it
LLVM_VERIFY = """Traceback (most recent call last):
  7: tvm::relay::backend::RelayBuildModule::BuildRelay(tvm::IRModule, tvm::runtime::String const&)
  0: tvm::codegen::CodeGenLLVM::Verify() const
  File "/project/tvm/src/target/llvm/codegen_llvm.cc", line 361
TVMError: LLVM module verification failed with the following errors:
location of #dbg_declare must be a pointer or int
#dbg_declare(<6 x i32> %rmod, !140, !DIExpression(), !133)
ptr @tvmgen_default_fused_{op}_compute_
"""


def test_a_backtrace_first_message_is_told_by_its_error_line():
    assert headline(LLVM_VERIFY.format(op="floor_mod")) == \
        "TVMError: LLVM module verification failed with the following errors:"
    assert headline("Traceback (most recent call last):\n  1: f\nInternalError: Check failed: a") == \
        "InternalError: Check failed: a"
    assert headline("ValueError: bad axis\n  detail") == "ValueError: bad axis"
    assert headline("", "TVMError") == "TVMError"


def test_one_bug_in_two_ops_is_one_signature():
    # the function named in the detail differs per op; the bug (and its signature) does not
    a, b = (crash_signature("build", "TVMError", LLVM_VERIFY.format(op=op), LLVM_VERIFY.format(op=op))
            for op in ("floor_mod", "tile_multiply"))
    assert a == b and "LLVM module verification failed" in a


def test_a_fused_kernel_name_does_not_split_a_bug():
    message = ("InternalError: Check failed: undefined.size() == 0 (1 vs. 0) : In PrimFunc {} variables [i3] "
               "are used, but are not passed in as API arguments")
    sigs = {crash_signature("build", "InternalError", message.format(name), "")
            for name in ("vm_mod_fused_trilu_sign", "tvmgen_default_fused_cosh_trilu_nn_leaky_relu",
                         "intrp_fused_nn_conv2d_transpose")}  # Relay's interpreter (debug executor) names its own
    assert len(sigs) == 1


def test_an_ill_formed_pass_output_is_keyed_on_the_pass_and_the_complaint_not_the_names():
    from hirfuzz.core.finding import ill_formed_signature
    variants = ["Var x0 is not defined.", "Var lv12 is not defined.", "Var y is not defined.\nmore detail"]
    assert {ill_formed_signature("PlantedUndefineVar", v) for v in variants} == \
        {"ill-formed|PlantedUndefineVar|Var ? is not defined."}
    # a private function deleted while still used as a value: one key, whichever function
    deleted = {ill_formed_signature("InlinePrivateFunctions", f'GlobalVar I.GlobalVar("{name}") is not defined.')
               for name in ("f1", "helper", "closure_3")}
    assert deleted == {"ill-formed|InlinePrivateFunctions|GlobalVar ? is not defined."}
    # what is wrong still tells keys apart
    assert ill_formed_signature("P", "Var x is defined more than once.") != ill_formed_signature("P", variants[0])


# what repro.py prints on TVM 0.19 when a pass dropped the source map of the text it parsed and
# Relay's type checker then fails: TVM's renderer cannot place the diagnostic
UNPLACED = """Traceback (most recent call last):
  0: tvm::ReportAt(tvm::DiagnosticContext const&, std::ostream&, tvm::Span const&, tvm::Diagnostic const&)
  File "/project/tvm/src/ir/diagnostic.cc", line 265
TVMError: The source maps are not populated for this module. Please use `tvm.relay.transform.AnnotateSpans` to attach source maps for error reporting.
Error: The Relay type checker is unable to show the following types match.
In particular `Tensor[(3), float32]` does not match `Tensor[(3), float64]`
"""
# the worker's message for it: its own renderer's DiagnosticError, the diagnostics first
SEEN = ("PlantedWidenArgument left an ill-formed module: DiagnosticError: data types float64 and float32 do not "
        "match in BroadcastRel | The Relay type checker is unable to show the following types match. In particular "
        "`Tensor[(3), float32]` does not match `Tensor[(3), float64]` under vm on llvm (opt_level 2)")


def test_a_diagnostic_tvm_could_not_place_is_the_diagnostic_a_worker_saw_in_relay_only():
    from hirfuzz.dialects import dialect_info
    from hirfuzz.dialects.base import same_failure
    relay, relax = dialect_info("relay").failure_aliases, dialect_info("relax").failure_aliases
    assert same_failure(relay, "DiagnosticError", SEEN, "TVMError", UNPLACED)
    assert same_failure(relax, "DiagnosticError", SEEN, "DiagnosticError", "")  # one name, one failure
    assert not same_failure(relax, "DiagnosticError", SEEN, "TVMError", UNPLACED)
    # another diagnostic, or a TVMError that is no unplaced diagnostic, is another failure
    assert not same_failure(relay, "DiagnosticError", "DiagnosticError: Incompatible broadcast type", "TVMError",
                            UNPLACED)
    assert not same_failure(relay, "DiagnosticError", SEEN, "TVMError", "TVMError: " + SEEN)
    assert not same_failure(relay, "InternalError", SEEN, "TVMError", UNPLACED)
