"""Disruptive mode breaks only what TVM documents as invalid (issue 15 item 3): a program
TVM's documentation calls valid is never drawn as a violation, so it can never be reported
as a "silent acceptance" (no TVM here: what is generated; tests/relax and tests/relay run
the documented cases on each TVM)."""
import numpy as np
import pytest

from hirfuzz.core import expr as E
from hirfuzz.core.generate import GraphBuilder, Rejected
from hirfuzz.core.graph import Graph
from hirfuzz.core.shapes import dtype_bits, einsum_consistent, reshape_valid, window_out
from hirfuzz.core.spec import load_specs
from hirfuzz.core.violations import ViolationBuilder

DRAWS = 60


@pytest.fixture(scope="module", params=["relax", "relay"])
def dialect_specs(request):
    return request.param, load_specs(dialect=request.param)


def violations(specs, op: str, kind: str, draws: int = DRAWS, seed: int = 0) -> list:
    """(violation, graph) pairs of one kind on one op, each on an empty graph."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(draws):
        builder = GraphBuilder(specs, rng)
        builder.graph = Graph()
        try:
            out.append((ViolationBuilder(builder, specs, rng).build(specs.ops[op], kind), builder.graph))
        except (Rejected, E.ExprError):
            continue
    assert out, f"no {kind} violation of {op} could be built: the test would show nothing"
    return out


def shape(graph, ref):
    return list(graph.type_of(ref[0] if isinstance(ref, list) else ref).shape)


@pytest.mark.parametrize("op,rank", [("nn.conv1d", 3), ("nn.conv2d", 4)])
def test_a_compatible_convolution_weight_is_never_a_relax_violation(op, rank):
    # Relax takes the out channels and kernel size from the weight (convolution.cc): any
    # weight with data's channels / groups inputs and a multiple of groups outputs is valid
    specs = load_specs(dialect="relax")
    drawn = violations(specs, op, "shape-incompatible")
    for v, graph in drawn:
        data, weight = shape(graph, v.inputs[0]), shape(graph, v.inputs[1])
        groups = v.attrs["groups"]
        compatible = len(weight) == rank and weight[1] * groups == data[1] and weight[0] % groups == 0
        windows_fit = compatible and all(
            window_out(n, k, s, lo, hi, d) >= 1 for n, k, s, lo, hi, d in zip(
                data[2:], weight[2:], *window_attrs(v.attrs, rank)))
        assert not windows_fit, (v.detail, data, weight, v.attrs)
    for v, _ in violations(specs, op, "attr-out-of-range"):
        # kernel size and channels are no attributes of Relax's op: breaking them breaks nothing
        assert v.detail.split(" =")[0] not in ("out_channels", "kh", "kw"), v.detail


def window_attrs(attrs: dict, rank: int) -> list:
    """Per spatial axis: stride, padding before, after, dilation."""
    if rank == 3:
        return [[attrs["sw"]], [attrs["pl"]], [attrs["pr"]], [attrs["dw"]]]
    return [[attrs["sh"], attrs["sw"]], [attrs["pt"], attrs["pl"]], [attrs["pb"], attrs["pr"]],
            [attrs["dh"], attrs["dw"]]]


def test_relay_still_breaks_convolution_channels_it_is_told(dialect_specs):
    # Relay's conv takes channels and kernel_size, which must match the weight: a real violation
    dialect, specs = dialect_specs
    names = {v.detail.split(" =")[0] for v, _ in violations(specs, "nn.conv2d", "attr-out-of-range", draws=80)}
    assert ("out_channels" in names or "kh" in names or "kw" in names) == (dialect == "relay"), names


def test_strided_slice_violations_break_a_documented_rule_never_a_negative_stride(dialect_specs):
    # negative strides and empty slices are valid (topi/relax strided_slice take them): what is
    # left to break is a zero stride or an axis outside the tensor
    _, specs = dialect_specs
    for v, graph in violations(specs, "strided_slice", "attr-out-of-range"):
        rank = len(shape(graph, v.inputs[0]))
        axes, strides = v.attrs["axes"], v.attrs["strides"]
        breaks = 0 in strides or any(not -rank <= a < rank for a in axes) or len(set(a % rank for a in axes)) < len(axes)
        assert breaks, (v.detail, v.attrs, rank)


def test_reshape_violations_never_are_a_documented_reshape(dialect_specs):
    # Relax and Relay document -1 (inferred); Relay also 0 (copy this dimension)
    dialect, specs = dialect_specs
    for v, graph in violations(specs, "reshape", "attr-out-of-range", draws=80):
        call = [-1 if i == v.attrs["infer"] else d for i, d in enumerate(v.attrs["new_shape"])]
        assert not reshape_valid(shape(graph, v.inputs[0]), call, dialect == "relay"), (v.detail, call)


def test_reshape_valid_follows_each_dialects_documentation():
    assert reshape_valid([2, 3, 4], [6, 1, -1]) and reshape_valid([2, 3, 4], [-1])
    assert not reshape_valid([2, 3, 4], [-1, -1]) and not reshape_valid([2, 3, 4], [5, -1])
    assert reshape_valid([2, 3, 4], [0, -1], zero_copies=True)       # Relay: 0 copies the 2
    assert not reshape_valid([2, 3, 4], [0, -1])                      # Relax: 0 is not documented
    assert not reshape_valid([2], [2, 0], zero_copies=True)           # nothing to copy at index 1


def test_topk_with_k_below_one_is_never_a_violation(dialect_specs):
    # both topk docstrings: "Return all elements if k < 1"
    _, specs = dialect_specs
    for v, graph in violations(specs, "topk", "attr-out-of-range"):
        rank = len(shape(graph, v.inputs[0]))
        assert not (v.attrs["k"] < 1 and -rank <= v.attrs["axis"] < rank), v.detail


def test_a_zero_extent_result_is_never_a_violation(dialect_specs):
    # tile by 0 gives an empty tensor, valid TVM: only a negative repeat is out of range
    _, specs = dialect_specs
    for v, _ in violations(specs, "tile", "attr-out-of-range"):
        assert any(r < 0 for r in v.attrs["repeats"]), v.detail


def test_scatter_elements_indices_smaller_off_the_axis_are_never_a_violation(dialect_specs):
    # ONNX-style scatter_elements (both docstrings): indices may be smaller than data off the
    # axis, and any axis in [-rank, rank) is valid; the spec's equal shapes are hirfuzz's choice
    _, specs = dialect_specs
    for kind in ("attr-out-of-range", "shape-incompatible"):
        for v, graph in violations(specs, "scatter_elements", kind):
            data, indices, updates = (shape(graph, ref) for ref in v.inputs)
            rank, axis = len(data), v.attrs["axis"]
            onnx_valid = (len(indices) == rank and updates == indices and -rank <= axis < rank
                          and all(indices[i] <= data[i] for i in range(rank) if i != axis % rank))
            assert not onnx_valid, (kind, v.detail, data, indices, v.attrs)


def dtypes(graph, v) -> list:
    return [graph.type_of(ref[0] if isinstance(ref, list) else ref).dtype for ref in v.inputs]


@pytest.mark.parametrize("op", ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"])
def test_a_relax_comparison_of_two_dtypes_is_never_a_violation(op, dialect_specs):
    # Relax compares any two dtypes, promoted (InferStructInfoBroadcastCMP, BinaryOpMatchTypes);
    # Relay rejects the pair in type inference, so there it is still broken
    dialect, specs = dialect_specs
    if dialect == "relax":
        with pytest.raises(AssertionError, match="no dtype-mismatch violation"):
            violations(specs, op, "dtype-mismatch", draws=20)
        return
    assert all(len(set(dtypes(graph, v))) == 2 for v, graph in violations(specs, op, "dtype-mismatch"))


@pytest.mark.parametrize("op", ["bitwise_and", "bitwise_or", "bitwise_xor"])
def test_a_relax_bitwise_op_breaks_dtypes_but_never_with_a_bool_right_operand(op, dialect_specs):
    # Relax exempts a bool operand from the same-dtype check, and an integer left operand with
    # a bool right one computes in the integer's dtype, as declared: documented valid. A bool
    # left operand (declared bool, returned as the integer) stays a violation
    dialect, specs = dialect_specs
    pairs = [tuple(dtypes(graph, v)) for v, graph in violations(specs, op, "dtype-mismatch", draws=120)]
    int_bool = [p for p in pairs if p[0] != "bool" and p[1] == "bool"]
    assert bool(int_bool) == (dialect == "relay"), pairs
    assert any(p[0] == "bool" for p in pairs) and any("bool" not in p for p in pairs), pairs


def test_full_like_with_a_fill_value_of_another_dtype_is_never_a_violation(dialect_specs):
    # both docstrings: the result takes x's (or the given) dtype, the scalar fill is cast to it
    _, specs = dialect_specs
    with pytest.raises(AssertionError, match="no dtype-mismatch violation"):
        violations(specs, "full_like", "dtype-mismatch", draws=20)
    for v, graph in violations(specs, "full_like", "shape-incompatible"):
        assert shape(graph, v.inputs[1]) != [], v.detail  # a fill value that is no scalar still is


def test_a_relax_prelu_slope_of_length_1_or_a_narrower_float_is_never_a_violation(dialect_specs):
    # topi's prelu (Relax) broadcasts a slope of length 1 and widens a narrower float slope;
    # Relay's type relation wants the slope's dtype and length to match x's
    dialect, specs = dialect_specs
    narrower, length_1 = [], []
    for v, graph in violations(specs, "nn.prelu", "dtype-mismatch"):
        x, alpha = dtypes(graph, v)
        narrower.append(dtype_bits(alpha) < dtype_bits(x))
    for v, graph in violations(specs, "nn.prelu", "shape-incompatible", draws=200):
        x, alpha = shape(graph, v.inputs[0]), shape(graph, v.inputs[1])
        length_1.append(alpha == [1] and len(x) > v.attrs["axis"])
    assert any(narrower) == any(length_1) == (dialect == "relay"), (narrower, length_1)
    assert not all(narrower), "a wider slope (a failed build in Relax) is still drawn"


def test_an_einsum_operand_of_broadcastable_sizes_is_never_a_violation(dialect_specs):
    # topi's einsum (both dialects): numpy's semantics, a letter of size 1 broadcasts
    _, specs = dialect_specs
    for v, graph in violations(specs, "einsum", "shape-incompatible"):
        shapes = [shape(graph, ref) for ref in v.inputs]
        assert not einsum_consistent(v.attrs["subscripts"], shapes, broadcast=True), (v.detail, shapes)


def test_einsum_consistent_broadcasts_a_size_of_1_only_when_asked():
    assert einsum_consistent("ij,ij->i", [[1, 5], [5, 5]], broadcast=True)
    assert not einsum_consistent("ij,ij->i", [[1, 5], [5, 5]])
    assert not einsum_consistent("ij,ij->i", [[2, 5], [5, 5]], broadcast=True)
    assert einsum_consistent("ij,jk->ik", [[2, 1], [3, 4]], broadcast=True)


@pytest.mark.parametrize("op", ["nn.dense", "nn.batch_matmul"])
def test_a_relay_mixed_precision_product_is_never_a_dtype_violation(op):
    # Relay's dense and batch_matmul docstrings: out_dtype is "for mixed precision"; topi casts
    # both operands to it (data's dtype when not given), whatever their dtypes
    specs = load_specs(dialect="relay")
    with pytest.raises(AssertionError, match="no dtype-mismatch violation"):
        violations(specs, op, "dtype-mismatch", draws=20)
    assert violations(specs, op, "shape-incompatible")  # its shapes are still broken
