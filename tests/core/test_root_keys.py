"""One finding per root cause (campaign machinery and signatures only: no worker, no TVM):
a finished finding is keyed on where TVM fails (core.finding.root_key) and joins the
finding first filed with that key, which keeps its folder; the joined one's signatures
become aliases, its hits are added, its files kept in merged/, and a resumed campaign
knows all of it."""
import json

from hirfuzz.campaign.coordinator import Campaign, Settings
from hirfuzz.campaign.reducer import _PREFIXES
from hirfuzz.core.finding import Finding, crash_signature, ill_formed_signature, root_key
from hirfuzz.core.spec import load_specs

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


def test_a_frameless_pass_crash_is_keyed_on_the_one_pass_its_reduced_program_needs():
    # Relay's type checker raising at the end of ToMixedPrecision: no TVM frame says where
    def raised(particular: str) -> str:
        return "pass-order|" + crash_signature(
            "passes", "DiagnosticError", "The Relay type checker is unable to show the following types match. "
            f"In particular {particular} | The Relay type checker is unable to show the following types match.", "")
    scalar, tensor = raised("`float32` does not match `float16`"), raised(
        "`Tensor[(3, 4), float16]` does not match `Tensor[(3, 4), float32]`")
    assert root_key(scalar, _PREFIXES, "ToMixedPrecision") == root_key(tensor, _PREFIXES, "ToMixedPrecision")
    assert "|pass:ToMixedPrecision|" in root_key(scalar, _PREFIXES, "ToMixedPrecision")
    # another pass, another dtype pair, or no single pass named: other keys, as before
    assert root_key(scalar, _PREFIXES, "FakeQuantizationToInteger") != root_key(scalar, _PREFIXES, "ToMixedPrecision")
    assert root_key(raised("`Tensor[(3, 4), uint16]` does not match `Tensor[(3, 4), float16]`"), _PREFIXES,
                    "ToMixedPrecision") != root_key(tensor, _PREFIXES, "ToMixedPrecision")
    assert root_key(scalar, _PREFIXES) != root_key(tensor, _PREFIXES)
    assert "|stage:passes|" in root_key(scalar, _PREFIXES)
