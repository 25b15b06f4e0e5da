"""The element-wise index references (scatter_elements, gather_elements) take an axis as
TVM does: any in [-rank, rank), and none outside it (TVM 0.19 Relay's type relation accepts
one, then topi fails to build: the reference must not quietly wrap it into range)."""
import numpy as np
import pytest

from hirfuzz.core import reference as ref


@pytest.mark.parametrize("axis", [1, -2, 4])
def test_an_axis_out_of_range_is_rejected_not_wrapped(axis):
    data, updates = np.zeros(3, "float32"), np.ones(1, "float32")
    indices = np.array([2], "int64")
    with pytest.raises(ValueError, match="out of range"):
        ref.scatter_elements(data, indices, updates, axis, "update")
    with pytest.raises(ValueError, match="out of range"):
        ref.gather_elements(data, indices, axis)


def test_a_negative_axis_and_negative_indices_address_what_tvm_addresses():
    # topi.scatter_elements: axis += rank when negative; an index k < 0 becomes k + shape[axis]
    data = np.arange(12, dtype="float32").reshape(3, 4)
    indices = np.array([[-1, 0, 2, -3]], "int64")
    updates = np.array([[10, 20, 30, 40]], "float32")
    out = ref.scatter_elements(data, indices, updates, -2, "add")
    expected = data.copy()
    for j, k in enumerate(indices[0]):
        expected[k % 3, j] += updates[0, j]
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(out, ref.scatter_elements(data, indices, updates, 0, "add"))
