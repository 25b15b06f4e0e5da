"""The oracles' comparison rules, on plain arrays (no TVM)."""
import numpy as np

from hirfuzz.core.oracle import compare_across
from hirfuzz.core.reference import TensorFacts


def facts(value, stable=True):
    value = np.asarray(value)
    return TensorFacts(value, exact=value.dtype.kind != "f", stable=stable, rtol=1e-5, atol=1e-6,
                       magnitude=float(np.max(np.abs(value))))


def test_cross_ir_names_the_compiler_that_is_wrong():
    want = facts(np.array([1.0, 2.0], "float32"))
    right, wrong = np.array([1.0, 2.0], "float32"), np.array([1.0, 2.5], "float32")
    assert compare_across([want], [right], [right]) == []
    (m,) = compare_across([want], [right], [wrong])
    assert m.index == 0 and m.ours is None and "outside tolerance" in m.theirs and not m.reference_suspect
    (m,) = compare_across([want], [wrong], [right])
    assert m.theirs is None and m.ours is not None and not m.reference_suspect


def test_two_compilers_wrong_alike_suspect_the_reference():
    want = facts(np.array([3, 4], "int32"))
    same = np.array([3, 5], "int32")
    (m,) = compare_across([want], [same], [same.copy()])
    assert m.reference_suspect
    (m,) = compare_across([want], [same], [np.array([9, 4], "int32")])
    assert not m.reference_suspect and m.ours and m.theirs


def test_results_the_reference_cannot_judge_are_not_compared_across():
    want = facts(np.array([1.0], "float32"), stable=False)
    assert compare_across([want], [np.array([1.0], "float32")], [np.array([7.0], "float32")]) == []
