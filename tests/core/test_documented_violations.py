"""Disruptive mode breaks only what TVM documents as invalid (issue 15 item 3): a program
TVM's documentation calls valid is never drawn as a violation, so it can never be reported
as a "silent acceptance" (no TVM here: what is generated; tests/relax and tests/relay run
the documented cases on each TVM)."""
import numpy as np
import pytest

from hirfuzz.core import expr as E
from hirfuzz.core.generate import GraphBuilder, Rejected
from hirfuzz.core.graph import Graph
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
            E.window_out(n, k, s, lo, hi, d) >= 1 for n, k, s, lo, hi, d in zip(
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
        assert not E.reshape_valid(shape(graph, v.inputs[0]), call, dialect == "relay"), (v.detail, call)


def test_reshape_valid_follows_each_dialects_documentation():
    assert E.reshape_valid([2, 3, 4], [6, 1, -1]) and E.reshape_valid([2, 3, 4], [-1])
    assert not E.reshape_valid([2, 3, 4], [-1, -1]) and not E.reshape_valid([2, 3, 4], [5, -1])
    assert E.reshape_valid([2, 3, 4], [0, -1], zero_copies=True)       # Relay: 0 copies the 2
    assert not E.reshape_valid([2, 3, 4], [0, -1])                      # Relax: 0 is not documented
    assert not E.reshape_valid([2], [2, 0], zero_copies=True)           # nothing to copy at index 1


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
