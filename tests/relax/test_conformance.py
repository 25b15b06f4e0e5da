"""Spec conformance: every shipped op spec agrees with TVM 0.27 on sampled single-op cases.

For each op and each of its dtypes, a few cases are generated from the spec, lowered,
checked for well-formedness and for TVM's inferred output type, built for llvm, run on the
VM and compared with the spec's NumPy reference. A spec with a wrong rule must fail here.
"""
import re

import pytest

from hirfuzz.dialects.relax.conformance import check_op, op_report, report_rows, run_sample
from hirfuzz.core.spec import load_specs

SAMPLES = 3        # per dtype, where a broken spec must show (test_broken_spec_fails_conformance)
QUICK_SAMPLES = 1  # per dtype, for every op in the default suite: about a minute on 2 cores
DEEP_SAMPLES = 30  # with `-m slow`

_SPECS = load_specs()
OPS = _SPECS.names()


def test_spec_set_is_broad():
    assert len(OPS) >= 120
    dtypes = {d for op in _SPECS.ops.values() for d in op.dtypes}
    assert dtypes == {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                      "uint64", "float16", "float32", "float64"}


@pytest.mark.parametrize("op", OPS)
def test_op_conforms(specs, op):
    problems = check_op(specs, op, samples=QUICK_SAMPLES, seed=0)
    assert problems == [], "\n".join(problems)


@pytest.mark.slow
@pytest.mark.parametrize("op", OPS)
def test_op_conforms_deep(specs, op):
    problems = check_op(specs, op, samples=DEEP_SAMPLES, seed=12345)
    assert problems == [], "\n".join(problems)


def test_every_dtype_is_compared(specs):
    """Each listed dtype is sampled and actually compared, not skipped as incomparable."""
    rep = op_report(specs, "divide", samples=3, seed=0)
    assert rep.tried == list(specs.ops["divide"].dtypes)
    assert rep.accepted == rep.tried
    assert rep.agreed == rep.tried
    assert rep.compared == 3 * len(rep.tried) and rep.mismatches == 0


def test_report_rows_probe_off_spec_dtypes(specs):
    """Probing shows what TVM accepts outside the spec's list, without calling it a problem."""
    (row,) = report_rows(specs, samples=2, seed=0, probe_all=True, ops=["exp"])
    assert row["op"] == "exp" and row["ok"] and row["problems"] == 0
    assert set(row["accepted"]) == {"float16", "float32", "float64"}
    assert "int32" in row["rejected"] and "float" in row["rejected"]["int32"]
    assert row["missed"] == []
    assert row["agreed"] == ["float16", "float32", "float64"]


def _edit(path, old, new):
    text = path.read_text()
    assert old in text, f"{old!r} not in {path.name}"
    path.write_text(text.replace(old, new, 1))


def _op_block(path, name):
    text = path.read_text()
    start = text.index(f"  - name: {name}\n")
    end = text.find("\n  - name: ", start + 1)
    return text[start:] if end < 0 else text[start:end]


# A spec with a wrong rule: (file, op, old text inside the op's block, new text, stage expected)
BROKEN = [
    pytest.param("reduction.yaml", "sum", "reduce_shape(x.shape, axis, keepdims)",
                 "reduce_shape(x.shape, axis, not keepdims)", "type", id="sum-keepdims"),
    pytest.param("binary.yaml", "add", "      shape: broadcast_shapes(a.shape, b.shape)\n",
                 "      shape: broadcast_shapes(a.shape, b.shape)\n      dtype: \"'int32'\"\n",
                 "type", id="add-dtype"),
    # divide on bool: a violation TVM fails to build (add on bool is a known TVM bug now, refused in a spec)
    pytest.param("binary.yaml", "divide", "dtypes: [int8,", "dtypes: [bool, int8,", "build",
                 id="divide-bool-dtype"),
    pytest.param("binary.yaml", "subtract", "reference: np.subtract(a, b)",
                 "reference: np.subtract(b, a)", "compare", id="subtract-reference"),
    pytest.param("binary.yaml", "divide", "reference: ref.divide(a, b)",
                 "reference: np.floor_divide(a, b) if is_int(dtype) else np.divide(a, b)",
                 "compare", id="divide-floor-reference"),
]


@pytest.mark.parametrize("fname, op, old, new, stage", BROKEN)
def test_broken_spec_fails_conformance(spec_copy, fname, op, old, new, stage):
    path = spec_copy / fname
    block = _op_block(path, op)
    assert old in block
    _edit(path, block, block.replace(old, new, 1))
    broken = load_specs(spec_copy)
    problems = check_op(broken, op, samples=SAMPLES, seed=0)
    assert problems, f"conformance accepted a broken '{op}' spec"
    assert any(re.search(rf"\b{stage}: ", p) for p in problems), problems
    # and the untouched spec passes under the same samples
    assert check_op(load_specs(), op, samples=SAMPLES, seed=0) == []


def test_sample_records_the_case(specs):
    import numpy as np
    s = run_sample(specs, "sum", "int32", np.random.default_rng(0))
    assert s.stage == "ok", s.describe()
    assert s.case.startswith("sum[int32] attrs=")
