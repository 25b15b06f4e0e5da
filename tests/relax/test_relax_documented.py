"""What TVM 0.27's documentation calls valid is valid on TVM 0.27 (issue 15 item 3): each
program disruptive mode used to draw as a "violation" of these classes builds and runs here
(and computes what the documentation says, for mixed dtypes and broadcast shapes), so
reporting it as a silent acceptance was a false alarm (tests/core/test_documented_violations.py
shows none is drawn now), while the undocumented acceptances are still reported; and
ConvertLayout is only asked for layouts Relax supports."""
import numpy as np
import pytest
import tvm
from tvm import relax

from hirfuzz.campaign.cases import CaseMaker
from hirfuzz.campaign.coordinator import Settings
from hirfuzz.campaign.judge import Judge, Status
from hirfuzz.core.graph import Graph, Node, Ref, TensorType
from hirfuzz.core.passes import load_catalog
from hirfuzz.core.violations import Violation, violation_plan
from hirfuzz.dialects import dialect_info, load_dialect
from hirfuzz.protocol import decode_array, encode_array
from hirfuzz.worker import execute_case

CONV1D = {"groups": 1, "out_channels": 1, "kw": 2, "sw": 2, "pl": 0, "pr": 0, "dw": 2}
DOCUMENTED_VALID = {  # class -> (op, input shapes, attrs as the old draw had them, what it broke)
    "conv1d weight with other out channels (Relax reads them from the weight)":
        ("nn.conv1d", [(1, 3, 8), (5, 3, 2)], CONV1D, "shape-incompatible"),
    "conv1d weight with another kernel width": ("nn.conv1d", [(1, 3, 8), (1, 3, 3)], CONV1D, "shape-incompatible"),
    "strided_slice with a negative stride": ("strided_slice", [(6, 4)],
                                             {"axes": [0], "strides": [-1], "begin": [4], "end": [0]},
                                             "attr-out-of-range"),
    "reshape with one -1": ("reshape", [(2, 3, 4)], {"new_shape": [-1, 3, 2, 1], "infer": -1}, "attr-out-of-range"),
    "topk with k < 1 (all elements)": ("topk", [(5, 3)], {"axis": 0, "k": 0, "largest": False,
                                                          "ret_type": "values", "out": "int32"}, "attr-out-of-range"),
    "tile by 0": ("tile", [(2, 3)], {"repeats": [3, 0]}, "attr-out-of-range"),
    "scatter_elements on another axis, indices smaller off it (ONNX style)":
        ("scatter_elements", [(3, 4), ((1, 4), "int64"), (1, 4)], {"axis": -1, "reduction": "add"},
         "attr-out-of-range"),
}


@pytest.fixture(scope="module")
def relax_maker(specs):
    info = dialect_info("relax")
    return CaseMaker(Settings(mode="disruptive", ops=1), specs, info, load_catalog(builtin=info.catalog))


def run_violation(specs, maker, op, shapes, attrs, kind, what, inputs=None):
    """The case disruptive mode would run for this call (each input a shape, or (shape,
    dtype); float32 by default), on `inputs` where given: (case, reply)."""
    graph = Graph()
    for i, item in enumerate(shapes):
        shape, dtype = item if isinstance(item[0], tuple) else (item, "float32")
        graph.add(Node(i, "var", [TensorType(shape, dtype)]))
    violation = Violation(kind, op, graph.nodes[0].type.dtype, [Ref(i) for i in range(len(shapes))], attrs, what)
    case = maker.make_disruptive_case(0, graph, {"violation": violation.to_json(),
                                                 "plan": violation_plan(violation, graph, specs)})
    if inputs is None:  # indices in range (a violating call's own inputs come from default domains)
        inputs = [a if a.dtype.kind == "f" else np.zeros_like(a) for a in map(decode_array, case.request["inputs"])]
    case.request["inputs"] = [encode_array(a) for a in inputs]
    return case, execute_case(case.request, load_dialect("relax"))


@pytest.mark.parametrize("what", list(DOCUMENTED_VALID))
def test_a_documented_valid_program_builds_and_runs_on_relax(what, specs, relax_maker):
    op, shapes, attrs, kind = DOCUMENTED_VALID[what]
    case, reply = run_violation(specs, relax_maker, op, shapes, attrs, kind, what)
    assert reply["status"] == "ok", reply.get("message", "")[:500]
    assert Judge(specs, {}).classify(case, reply).status is Status.SILENT_ACCEPTANCE  # what was reported


def promoted(a: np.ndarray, b: np.ndarray) -> str:
    """The dtype TIR's BinaryOpMatchTypes casts two operands to (src/tirx/op/op.cc,
    PromoteBinaryOpType): the float one (the wider of two), a bool gives way, the wider
    integer, and of an int and a uint of one width the uint."""
    x, y = a.dtype, b.dtype
    if (x.kind == "f") != (y.kind == "f") or x.kind == "b" or y.kind == "b":
        return str(y if y.kind == "f" or x.kind == "b" else x)
    if x.itemsize != y.itemsize:
        return str(x if x.itemsize > y.itemsize else y)
    return str(x if x.kind == "u" or x.kind == "f" else y)


def values(*dtypes, shape=(2, 6)):
    """Inputs of these dtypes with negatives, ties and values beyond int8, for the cast to show."""
    rng = np.random.default_rng(0)
    base = rng.integers(-200, 200, shape)
    base[..., 0] = 0
    return [base.astype(d) if d != "bool" else base > 0 for d in dtypes]


# dtype pairs and shapes that TVM 0.27 documents as valid (the `accepts` of the op specs'
# Relax blocks), each with what the documentation says it computes
MIXED = [("less", "uint64", "float64"), ("less_equal", "uint64", "int64"), ("greater", "float16", "int64"),
         ("greater_equal", "int16", "int64"), ("not_equal", "int32", "uint32"), ("equal", "int8", "uint8")]


@pytest.mark.parametrize("op,x,y", MIXED)
def test_a_comparison_of_two_dtypes_compares_them_promoted(op, x, y, specs, relax_maker):
    a, b = values(x, y)
    case, reply = run_violation(specs, relax_maker, op, [((2, 6), x), ((2, 6), y)], {}, "dtype-mismatch",
                                "hand-picked", inputs=[a, b])
    assert reply["status"] == "ok", reply.get("message", "")[:500]
    common = promoted(a, b)
    want = getattr(np, op)(a.astype(common), b.astype(common))
    np.testing.assert_array_equal(decode_array(reply["outputs"][-1]), want)


def test_a_bitwise_op_on_an_integer_and_a_bool_computes_in_the_integer(specs, relax_maker):
    for op in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        a, b = values("uint16", "bool")
        case, reply = run_violation(specs, relax_maker, op, [((2, 6), "uint16"), ((2, 6), "bool")], {},
                                    "dtype-mismatch", "hand-picked", inputs=[a, b])
        got = decode_array(reply["outputs"][-1])
        assert got.dtype == np.uint16, op  # the left operand's, as InferBinaryArithOpOutDtype declares
        np.testing.assert_array_equal(got, getattr(np, op)(a, b.astype("uint16")))


def test_full_like_casts_a_fill_value_of_another_dtype(specs, relax_maker):
    x, fill = np.zeros((2, 3), "int32"), np.array(7.75, "float16")
    case, reply = run_violation(specs, relax_maker, "full_like", [((2, 3), "int32"), ((), "float16")],
                                {"to": None}, "dtype-mismatch", "hand-picked", inputs=[x, fill])
    got = decode_array(reply["outputs"][-1])
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, np.full((2, 3), 7, "int32"))


@pytest.mark.parametrize("alpha", [((1,), "float32"), ((3,), "float16")], ids=["length-1", "narrower-float"])
def test_prelu_broadcasts_a_length_1_slope_and_widens_a_narrower_one(alpha, specs, relax_maker):
    shape, dtype = alpha
    x = np.array([[-1.5, 2.0, -3.0], [4.0, -5.0, 6.0]], "float32")
    slope = np.array([0.25, 0.5, 2.0][:shape[0]], dtype)
    case, reply = run_violation(specs, relax_maker, "nn.prelu", [((2, 3), "float32"), alpha], {"axis": 1},
                                "shape-incompatible", "hand-picked", inputs=[x, slope])
    got = decode_array(reply["outputs"][-1])
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, np.where(x > 0, x, x * slope.astype("float32")))


def test_einsum_broadcasts_a_letter_of_size_1_as_numpy_does(specs, relax_maker):
    a, b = (np.arange(5, dtype="int32").reshape(1, 5), np.arange(25, dtype="int32").reshape(5, 5))
    case, reply = run_violation(specs, relax_maker, "einsum", [((1, 5), "int32"), ((5, 5), "int32")],
                                {"subscripts": "ij,ij->i"}, "shape-incompatible", "hand-picked", inputs=[a, b])
    np.testing.assert_array_equal(decode_array(reply["outputs"][-1]), np.einsum("ij,ij->i", a, b))


# what TVM 0.27 accepts undocumented, and reports a dtype its kernel does not return: still
# silent acceptances (real findings)
UNDOCUMENTED = {"bitwise_and with a bool left operand": ("bitwise_and", "bool", "int32", (2, 3)),
                "outer of int8 and int16": ("outer", "int8", "int16", (3,))}


@pytest.mark.parametrize("what", list(UNDOCUMENTED))
def test_an_undocumented_mixed_dtype_acceptance_is_still_a_silent_acceptance(what, specs, relax_maker):
    op, x, y, shape = UNDOCUMENTED[what]
    a, b = values(x, y, shape=shape)
    case, reply = run_violation(specs, relax_maker, op, [(shape, x), (shape, y)], {}, "dtype-mismatch", what,
                                inputs=[a, b])
    assert reply["status"] == "ok"
    assert Judge(specs, {}).classify(case, reply).status is Status.SILENT_ACCEPTANCE
    # the evidence for the bug: the module declares the left operand's dtype, the kernel
    # returns the promoted one
    assert str(decode_array(reply["outputs"][-1]).dtype) == promoted(a, b) != x


def layout_module():
    """Every op with a layout that the op specs generate: conv1d, conv2d, and the pools after
    a conv2d (which ConvertLayout converts with it) and on the input (which it leaves)."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType([1, 4, 8, 8], "float32"))
    w = relax.Var("w", relax.TensorType([3, 4, 3, 3], "float32"))
    s = relax.Var("s", relax.TensorType([1, 4, 9], "float32"))
    v = relax.Var("v", relax.TensorType([2, 4, 3], "float32"))
    with bb.function("main", [x, w, s, v]):
        with bb.dataflow():
            conv = bb.emit(relax.op.nn.conv2d(x, w))
            outs = [bb.emit(relax.op.nn.max_pool2d(conv, pool_size=[2, 2])),
                    bb.emit(relax.op.nn.avg_pool2d(conv, pool_size=[2, 2])),
                    bb.emit(relax.op.nn.adaptive_avg_pool2d(conv, output_size=[2, 2])),
                    bb.emit(relax.op.nn.max_pool2d(x, pool_size=[3, 3])),
                    bb.emit(relax.op.nn.conv1d(s, v))]
            gv = bb.emit_output(relax.Tuple(outs))
        bb.emit_func_output(gv)
    return bb.get()


def run(mod, inputs):
    vm = relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.cpu())
    return [o.numpy() for o in vm["main"](*[tvm.runtime.tensor(a) for a in inputs])]


def test_convert_layout_is_only_asked_for_layouts_relax_supports():
    mod = layout_module()
    rng = np.random.default_rng(0)
    inputs = [rng.random([int(d) for d in p.ty.shape]).astype("float32") for p in mod["main"].params]
    want = run(mod, inputs)
    choices = load_catalog().entries["ConvertLayout"].args["desired_layouts"]
    assert choices
    for desired in choices:
        converted = relax.transform.ConvertLayout(desired)(mod)  # raises for an unsupported layout
        relax.analysis.well_formed(converted)
        assert converted.script() != mod.script(), desired  # it asked for something that happened
        for got, expected in zip(run(converted, inputs), want):
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    with pytest.raises(Exception, match="NoDesiredLayout"):  # what the catalog used to ask for
        relax.transform.ConvertLayout({"relax.nn.max_pool2d": ["NHWC"], "relax.nn.avg_pool2d": ["NHWC"]})(mod)
