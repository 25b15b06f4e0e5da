"""Relax on apache-tvm 0.27: what the coordinator knows of it (no TVM imported here).

The executors are the Relax counterparts of HIRGen's four:

    vm           relax.build(exec_mode="bytecode") on the Relax VM: the baseline
    compiled     relax.build(exec_mode="compiled")
    unoptimised  PassContext(opt_level=0), no pass sequence
    (reference)  hirfuzz's NumPy interpreter, in the coordinator
"""
from __future__ import annotations

from ...core.passes import CatalogSection
from ...data import PASS_CATALOG
from ..info import DialectInfo, SetupCheck

EXECUTORS = {
    "vm": {"exec_mode": "bytecode", "pipeline": "default", "opt_level": 3},
    "compiled": {"exec_mode": "compiled", "pipeline": "default", "opt_level": 3},
    "unoptimised": {"exec_mode": "bytecode", "pipeline": "default", "opt_level": 0},
}
# relax.build(relax_pipeline="zero") is no executor: the zero pipeline stops before the
# VM lowering, so CodeGenVM rejects every module built that way (seen on 0.27)

# what `setup` builds and runs in an environment that offers Relax (info.SetupCheck)
_SETUP_CHECK = """
import json, numpy as np, tvm
from tvm import relax
# 0.27 renamed TensorStructInfo to TensorType; before, relax.TensorType was another class
tensor_type = getattr(relax, "TensorStructInfo", None) or relax.TensorType
to_device = getattr(tvm.runtime, "tensor", None) or tvm.nd.array
bb = relax.BlockBuilder()
x = relax.Var("x", tensor_type((2, 3), "float32"))
with bb.function("main", [x]):
    with bb.dataflow():
        y = bb.emit(relax.op.add(relax.op.nn.relu(x), relax.const(1.0, "float32")))
        out = bb.emit_output(y)
    bb.emit_func_output(out)
vm = relax.VirtualMachine(relax.build(bb.get(), target="llvm"), tvm.cpu())
data = np.array([[-1.5, 0.0, 2.0], [3.0, -4.0, 0.5]], dtype="float32")
np.testing.assert_allclose(vm["main"](to_device(data)).numpy(), np.maximum(data, 0) + 1)
print(json.dumps({"tvm": tvm.__version__}))
"""

INFO = DialectInfo(name="relax", tvm="apache-tvm 0.27", executors=EXECUTORS, baseline="vm",
                   catalog=CatalogSection(PASS_CATALOG, "relax"),
                   implementation="hirfuzz.dialects.relax.dialect",
                   reproducer="hirfuzz.dialects.relax.repro", namespace="relax", build_words="`relax.build`",
                   setup_check=SetupCheck("relax", "relax.build and run a tiny function on llvm", _SETUP_CHECK))
