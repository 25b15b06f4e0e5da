"""What TVM 0.27's documentation calls valid is valid on TVM 0.27 (issue 15 item 3): each
program disruptive mode used to draw as a "violation" of these classes builds and runs here,
so reporting it as a silent acceptance was a false alarm (tests/core/test_documented_violations.py
shows none is drawn now); and ConvertLayout is only asked for layouts Relax supports."""
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


@pytest.mark.parametrize("what", list(DOCUMENTED_VALID))
def test_a_documented_valid_program_builds_and_runs_on_relax(what, specs, relax_maker):
    op, shapes, attrs, kind = DOCUMENTED_VALID[what]
    graph = Graph()
    for i, item in enumerate(shapes):  # a shape, or (shape, dtype) for an index input
        shape, dtype = item if isinstance(item[0], tuple) else (item, "float32")
        graph.add(Node(i, "var", [TensorType(shape, dtype)]))
    violation = Violation(kind, op, "float32", [Ref(i) for i in range(len(shapes))], attrs, what)
    case = relax_maker.make_disruptive_case(0, graph, {"violation": violation.to_json(),
                                                       "plan": violation_plan(violation, graph, specs)})
    # indices in range (a violating call's own inputs are drawn from default domains)
    case.request["inputs"] = [encode_array(a if a.dtype.kind == "f" else np.zeros_like(a))
                              for a in map(decode_array, case.request["inputs"])]
    reply = execute_case(case.request, load_dialect("relax"))
    assert reply["status"] == "ok", reply.get("message", "")[:500]
    assert Judge(specs, {}).classify(case, reply).status is Status.SILENT_ACCEPTANCE  # what was reported


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
