"""A Relax build that fails in the LambdaLift hirfuzz runs before it (TVM 0.27's
precondition for building local functions) says so: the build's pass watcher names the
pass (the worker's "failed_pass"), and the title says the program fails to build in it,
where it said "fails to build" as though the codegen had failed (the golden campaign's
avg_pool1d in ceil mode on a symbolic width: LambdaLift's CopyWithNewVars gives the
width's T.if_then_else no type, and the Normalizer asks it for FInferType)."""
import pytest
import tvm
from tvm.script import ir as I, relax as R

from hirfuzz.campaign.titles import title
from hirfuzz.core.graph import Graph, Node, Ref, TensorType
from hirfuzz.dialects import dialect_info, load_dialect
from hirfuzz.dialects.base import BUILD_PASSES
from hirfuzz.protocol import make_config


@I.ir_module
class PoolInLocalFunction:
    @R.function
    def main(x: R.Tensor((1, 1, 3), "float32")):
        @R.function
        def inner(a: R.Tensor((1, 1, "w"), "float32")):
            return R.nn.avg_pool1d(a, pool_size=[1], strides=[3], ceil_mode=True)
        return inner(x)


def test_a_failure_in_the_lambda_lift_before_the_build_is_said_to_be_its():
    with pytest.raises(tvm.error.InternalError, match="FInferType"):
        load_dialect("relax").build(PoolInLocalFunction, make_config())
    assert BUILD_PASSES[-1] == "LambdaLift"
    graph = Graph()
    graph.add(Node(0, "var", [TensorType((1, 1, 3), "float32")]))
    graph.add(Node(1, "op", [TensorType((1, 1, 1), "float32")], op="nn.avg_pool1d", dtype="float32", inputs=[Ref(0)]))
    finding = {"kind": "crash", "oracle": "crash", "stage": "build",
               "message": "InternalError: Check failed: (op_map_infer_ty.count(op)) is false:  Cannot find the "
                          "FInferType attribute registered to op: prim.if_then_else",
               "extra": {"exc_type": "InternalError", "failed_pass": BUILD_PASSES[-1]}}
    text = title(finding, graph, dialect_info("relax"))
    assert text.startswith("[Bug][Relax] nn.avg_pool1d (float32) fails to build in LambdaLift: "), text
