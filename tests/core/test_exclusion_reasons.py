"""Why a dtype is left out of an op spec, as data (`tvm_bugs:`), and what TVM documents
about an invalid program (`limitations:`): they load, a malformed entry is one error naming
the file, the op and the field, disruptive mode never draws a dtype left out for a TVM bug
as unsupported, and only a limitation naming the violation's kind triages it as documented."""
import textwrap

import numpy as np
import pytest

from conftest import SPECS, assert_named_spec_error
from hirfuzz.campaign.triage import TriageClass, classify_finding
from hirfuzz.core.finding import Finding
from hirfuzz.core.generate import GraphBuilder, Rejected
from hirfuzz.core.spec import ALL_DTYPES, load_specs
from hirfuzz.core.violations import ViolationBuilder, applicable_kinds, unsupported_dtypes

OP = """\
ops:
  - name: myop
    inputs: [x]
    dtypes: [float32, float64]
    reference: np.sin(x)
    tolerance: float
    dialects:
      relax: {}
      relay: {dtypes: [float32]}
"""


def _write(d, block: str):
    (d / "bad.yaml").write_text(OP + textwrap.indent(textwrap.dedent(block), "    "))


def test_dtypes_left_out_for_a_tvm_bug_are_per_dialect_and_never_unsupported(spec_dir):
    _write(spec_dir, """\
        tvm_bugs:
          - {dtypes: [float16], error: "unknown intrinsic", note: "fails to build for llvm"}
          - {dtypes: [float64], dialects: [relay], error: "float32 accuracy", note: "TVM 0.19"}
        """)
    relax = load_specs(spec_dir).ops["myop"]
    relay = load_specs(spec_dir, dialect="relay").ops["myop"]
    assert relax.bug_dtypes() == ("float16",) and relay.bug_dtypes() == ("float16", "float64")
    assert set(unsupported_dtypes(relax)) == set(ALL_DTYPES) - {"float16", "float32", "float64"}
    assert set(unsupported_dtypes(relay)) == set(ALL_DTYPES) - {"float16", "float32", "float64"}


@pytest.mark.parametrize("block, field, words", [
    ("tvm_bugs: [{dtypes: [float32], error: e, note: n}]\n", "tvm_bugs[0].dtypes",
     "['float32'] are generated for relax"),
    ("tvm_bugs: [{dtypes: [float32], dialects: [relay], error: e, note: n}]\n", "tvm_bugs[0].dtypes", "generated for relay"),
    ("tvm_bugs: [{dtypes: [float16], note: n}]\n", "tvm_bugs[0].error", "is required"),
    ("tvm_bugs: [{dtypes: [float16], error: e}]\n", "tvm_bugs[0].note", "is required"),
    ("tvm_bugs: [{error: e, note: n}]\n", "tvm_bugs[0].dtypes", "non-empty list of dtypes"),
    ("tvm_bugs: [{dtypes: [float17], error: e, note: n}]\n", "tvm_bugs[0].dtypes", "float17"),
    ("tvm_bugs: [{dtypes: [float16], dialects: [mlir], error: e, note: n}]\n", "tvm_bugs[0].dialects", "mlir"),
    ("tvm_bugs: [{dtypes: [float16], error: e, note: n, why: x}]\n", "tvm_bugs[0]", "why"),
    ("tvm_bugs: [float16]\n", "tvm_bugs", "non-empty list of mappings"),
    ("limitations: [{kind: rank-too-big, note: n}]\n", "limitations[0].kind", "rank-too-big"),
    ("limitations: [{kind: arity}]\n", "limitations[0].note", "is required"),
    ("limitations: [{kind: arity, note: n, dtypes: []}]\n", "limitations[0].dtypes", "non-empty"),
])
def test_a_bad_exclusion_reason_is_named(spec_dir, block, field, words):
    _write(spec_dir, block)
    assert_named_spec_error(spec_dir, field, words)


def test_the_shipped_trig_ops_leave_float16_out_for_a_tvm_bug_not_as_unsupported(specs):
    for op in ("asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atan2"):
        spec = specs.ops[op]
        assert "float16" in spec.bug_dtypes() and "float16" not in spec.dtypes, op
        assert "float16" not in unsupported_dtypes(spec), op
        assert all("unknown intrinsic" in bug.error and bug.note for bug in spec.tvm_bugs), op
        assert "TVM BUG" not in spec.note, op  # the reason is data now, not prose
    # Relay builds float16 sinh: the bug is Relax's alone
    assert "float16" in load_specs(SPECS, dialect="relay").ops["sinh"].dtypes
    # sign and negative on uint are valid (TOPI makes a -1 of the input dtype), bool is not
    for op in ("sign", "negative"):
        assert "uint8" in specs.ops[op].bug_dtypes() and unsupported_dtypes(specs.ops[op]) == ["bool"], op
    # a mean over int8 is valid (Relax returns the wrong dtype): no unsupported dtype is left
    assert "dtype-unsupported" not in applicable_kinds(specs.ops["mean"])


def test_an_unsupported_dtype_violation_never_draws_a_dtype_left_out_for_a_tvm_bug(specs):
    spec, rng = specs.ops["asin"], np.random.default_rng(0)
    drawn = set()
    for _ in range(60):
        try:
            drawn.add(ViolationBuilder(GraphBuilder(specs, rng), specs, rng).build(spec, "dtype-unsupported").dtype)
        except Rejected:
            continue
    assert drawn and "float16" not in drawn and drawn <= set(unsupported_dtypes(spec))


def _silent_acceptance(op: str, kind: str, dtype: str) -> Finding:
    violation = {"kind": kind, "op": op, "dtype": dtype, "detail": "x"}
    return Finding(kind="silent-acceptance", oracle="disruptive", stage="run", signature="s", message="m",
                   extra={"violation": violation})


def test_only_a_limitation_naming_the_violation_documents_it(spec_dir):
    _write(spec_dir, """\
        note: "an unrelated remark on rounding"
        limitations:
          - {kind: rank-wrong, dtypes: [float32], note: "the op broadcasts a missing leading axis (see its docs)"}
        """)
    specs = load_specs(spec_dir)
    documented = classify_finding(_silent_acceptance("myop", "rank-wrong", "float32"), specs)
    assert documented["class"] == TriageClass.DOCUMENTED_LIMITATION.value
    assert "broadcasts a missing leading axis" in documented["evidence"]
    for kind, dtype in (("rank-wrong", "float64"), ("arity", "float32")):  # another dtype, another kind
        other = classify_finding(_silent_acceptance("myop", kind, dtype), specs)
        assert other["class"] == TriageClass.SILENT_ACCEPTANCE.value, (kind, dtype)
