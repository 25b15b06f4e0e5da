"""Integer semantics: the reference computes what TVM computes, or does not compare.

TVM's LLVM codegen emits 8- and 16-bit integer add/sub/mul plainly (they wrap) and 32- and
64-bit ones with nsw/nuw (an overflow is poison: undefined). So an 8/16-bit overflow is
compared with a wrapping reference, a 32/64-bit one is never compared, and neither is a shift
by the bit width or more. tests/relax/test_relax_int_semantics.py checks the same cases in TVM.
"""
import numpy as np
import pytest

from hirfuzz.core import reference as ref
from hirfuzz.core.graph import Graph, Node, Ref, TensorType
from hirfuzz.core.inputs import find_violations
from hirfuzz.core.reference import interpret
from hirfuzz.core.spec import load_specs


@pytest.fixture(scope="module", params=["relax", "relay"])
def dialect_specs(request):
    return load_specs(dialect=request.param)


def single(specs, op, dtype, *values, out_shape=None, **attrs):
    """The reference facts of `op` on variables holding `values` (all of `dtype`)."""
    g = Graph()
    refs = []
    for v in values:
        arr = np.asarray(v, dtype=dtype)
        g.add(Node(len(g.nodes), "var", [TensorType(arr.shape, dtype)]))
        refs.append(Ref(len(g.nodes) - 1))
    shape = out_shape if out_shape is not None else np.asarray(values[0]).shape
    g.add(Node(len(g.nodes), "op", [TensorType(tuple(shape), dtype)], op=op, dtype=dtype,
               inputs=refs, attrs=attrs))
    facts = interpret(g, specs, {i: np.asarray(v, dtype=dtype) for i, v in enumerate(values)})
    return g, facts, facts[Ref(len(g.nodes) - 1)]


def compared(f):
    return f.stable and not f.failed


U64 = 2 ** 63


def test_uint64_mean_whose_sum_wraps_is_not_compared(dialect_specs):
    # the false alarm: expected 0 (np.mean in float64, cast back), TVM 1024819115206086195
    _, _, f = single(dialect_specs, "mean", "uint64", [U64, U64, 5, 7], out_shape=(), axis=None, keepdims=False)
    assert not compared(f)            # the uint64 sum overflows: nuw poison in TVM
    assert int(f.value) == 3          # and the reference computes what TVM printed: (2**64 + 12) mod 2**64 / 4


def test_uint64_mean_is_exact_beyond_float64(dialect_specs):
    x = [2 ** 62 + 1, 2 ** 62 + 3]   # np.mean rounds these in float64
    _, _, f = single(dialect_specs, "mean", "uint64", x, out_shape=(), axis=None, keepdims=False)
    assert compared(f) and int(f.value) == 2 ** 62 + 2


def test_integer_mean_truncates_towards_zero(dialect_specs):
    _, _, f = single(dialect_specs, "mean", "int64", [[-7, -2], [7, 2]], out_shape=(2,), axis=[1], keepdims=False)
    assert compared(f) and f.value.tolist() == [-4, 4]


def test_narrow_mean_sums_in_its_dtype():
    # Relay's MeanCompute sums int8 in int8: 100 + 100 + 100 + 3 wraps to 47, 47 / 4 = 11
    assert int(ref.mean(np.array([100, 100, 100, 3], dtype="int8"))) == 11
    assert int(ref.mean(np.array([-100, -100, -100, -3], dtype="int8"))) == -11
    assert ref.mean(np.array([1.0, 2.0], dtype="float32")) == np.float32(1.5)


def test_int8_sum_wraps_and_is_compared(dialect_specs):
    _, _, f = single(dialect_specs, "sum", "int8", [100, 100, 100], out_shape=(), axis=None, keepdims=False)
    assert compared(f) and int(f.value) == 44


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint32", "uint64"])
def test_wide_sum_overflow_is_not_compared(dialect_specs, dtype):
    big = int(np.iinfo(dtype).max)
    _, _, f = single(dialect_specs, "sum", dtype, [big, 1], out_shape=(), axis=None, keepdims=False)
    assert not compared(f)
    _, _, f = single(dialect_specs, "sum", dtype, [big - 1, 1], out_shape=(), axis=None, keepdims=False)
    assert compared(f) and int(f.value) == big


def test_a_partial_sum_that_overflows_in_some_order_is_not_compared(dialect_specs):
    # INT_MAX + 1 - 1 fits in the end, but a loop that adds the 1 first overflows
    _, _, f = single(dialect_specs, "sum", "int32", [2 ** 31 - 1, 1, -1], out_shape=(), axis=None, keepdims=False)
    assert not compared(f)


def test_a_product_with_a_zero_can_still_overflow(dialect_specs):
    _, _, f = single(dialect_specs, "prod", "int32", [2 ** 20, 2 ** 20, 0], out_shape=(), axis=None, keepdims=False)
    assert not compared(f)
    _, _, f = single(dialect_specs, "prod", "int16", [2 ** 10, 2 ** 10, 3], out_shape=(), axis=None, keepdims=False)
    assert compared(f) and int(f.value) == 0      # 3 * 2**20 wraps to 0 in int16


@pytest.mark.parametrize("op,fn", [("add", np.add), ("subtract", np.subtract), ("multiply", np.multiply)])
def test_elementwise_arithmetic(dialect_specs, op, fn):
    a = np.array([120, -100, 3], dtype="int8")
    b = np.array([100, 100, 2], dtype="int8")
    _, _, f = single(dialect_specs, op, "int8", a, b)
    with np.errstate(all="ignore"):
        assert compared(f) and np.array_equal(f.value, fn(a, b))     # wraps, as TVM's plain i8 ops
    _, _, f = single(dialect_specs, op, "int32", [2 ** 30, 3], [2 ** 30 + 2 ** 29, 2])
    assert compared(f) is (op == "subtract")
    _, _, f = single(dialect_specs, op, "uint32", [2, 3], [1, 2])
    assert compared(f)
    _, _, f = single(dialect_specs, op, "uint64", [1, 3], [2, 2])
    assert compared(f) is (op != "subtract")   # 1 - 2 in uint64: nuw poison


def test_cumsum_and_cumprod(dialect_specs):
    _, _, f = single(dialect_specs, "cumsum", "int16", [30000, 30000, 10], axis=0, exclusive=False)
    assert compared(f) and f.value.tolist() == [30000, -5536, -5526]
    _, _, f = single(dialect_specs, "cumsum", "int64", [2 ** 62, 2 ** 62, 0], axis=0, exclusive=True)
    assert not compared(f)
    _, _, f = single(dialect_specs, "cumprod", "uint32", [2 ** 16, 2 ** 16], axis=0, exclusive=False)
    assert not compared(f)


def test_abs_and_negative_of_the_minimum(dialect_specs):
    for op in ("abs", "negative"):
        _, _, f = single(dialect_specs, op, "int8", [-128, 5])
        assert compared(f) and f.value.tolist() == [-128, 5 if op == "abs" else -5]
        _, _, f = single(dialect_specs, op, "int32", [-2 ** 31, 5])
        assert not compared(f)


def test_contractions(dialect_specs):
    a = np.full((2, 3), 2 ** 15, dtype="int32")
    b = np.full((3, 2), 2 ** 15, dtype="int32")
    _, _, f = single(dialect_specs, "matmul", "int32", a, b, out_shape=(2, 2))
    assert not compared(f)                              # 3 * 2**30 > INT32_MAX
    _, _, f = single(dialect_specs, "matmul", "int8", a.astype("int8") + 100, b.astype("int8") + 3, out_shape=(2, 2))
    assert compared(f) and f.value.dtype == np.int8
    _, _, f = single(dialect_specs, "einsum", "int64", [2 ** 40, 1], [2 ** 30, 1], out_shape=(), subscripts="i,i->")
    assert not compared(f)


@pytest.mark.parametrize("dtype,bits", [("int8", 8), ("uint16", 16), ("int32", 32), ("uint64", 64)])
def test_a_shift_by_the_width_or_more_is_never_compared(dialect_specs, dtype, bits):
    for op in ("left_shift", "right_shift"):
        g, facts, f = single(dialect_specs, op, dtype, [1, 3], [bits - 1, 1])
        assert compared(f) and not find_violations(g, dialect_specs, facts).tainted
        if op == "left_shift":
            assert int(f.value[0]) == int(np.array(1 << (bits - 1)).astype(dtype))   # wraps into the sign bit
        g, facts, f = single(dialect_specs, op, dtype, [1, 3], [bits, 1])
        found = find_violations(g, dialect_specs, facts)
        assert found.tainted == {g.operators[0].id} and found.slot == 1


def test_every_op_that_can_overflow_says_how(dialect_specs):
    """An integer op computing sums or products carries `overflow` bounds, so no 32/64-bit
    overflow is ever compared."""
    arithmetic = {"add", "subtract", "multiply", "square", "abs", "negative", "sum", "prod", "mean",
                  "cumsum", "cumprod", "matmul", "einsum", "outer", "nn.conv1d", "nn.conv2d",
                  "nn.dense", "nn.bias_add", "nn.batch_matmul", "scatter_elements", "scatter_nd"}
    for name, op in dialect_specs.ops.items():
        if name in arithmetic and any(d.startswith(("int", "uint")) for d in op.dtypes):
            assert op.overflow is not None, name


def test_mean_of_a_sum_equal_to_the_minimum():
    x = np.array([-2 ** 62, -2 ** 62 + 1, -1], dtype="int64")      # sums to INT64_MIN exactly
    assert int(ref.mean(x)) == -(2 ** 63 // 3)
