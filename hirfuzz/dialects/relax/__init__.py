"""Relax on apache-tvm 0.27: what the coordinator knows of it (no TVM imported here).

The executors are the Relax counterparts of HIRGen's four:

    vm           relax.build(exec_mode="bytecode") on the Relax VM: the baseline
    compiled     relax.build(exec_mode="compiled")
    unoptimised  PassContext(opt_level=0), no pass sequence
    fused        relax.build(relax_pipeline=relax.get_default_pipeline(target)): the target's
                 own pipeline, as users deploy with (cpu_generic on llvm: FuseOps, FuseTIR)
    (reference)  hirfuzz's NumPy interpreter, in the coordinator
"""
from __future__ import annotations

from ...core.passes import CatalogSection
from ...data import PASS_CATALOG
from ..info import DialectInfo, SetupCheck

# a configuration's "pipeline" that is no name relax.get_pipeline knows: the target's own
# default pipeline, relax.get_default_pipeline(target). relax.build's "default" fuses only on
# GPU targets (vm_build.py); on llvm it runs LegalizeOps without FuseOps or FuseTIR, so the
# fusion and shape-lowering bugs users meet on CPU need this one.
TARGET_DEFAULT_PIPELINE = "target-default"

EXECUTORS = {
    "vm": {"exec_mode": "bytecode", "pipeline": "default", "opt_level": 3},
    "compiled": {"exec_mode": "compiled", "pipeline": "default", "opt_level": 3},
    "unoptimised": {"exec_mode": "bytecode", "pipeline": "default", "opt_level": 0},
    "fused": {"exec_mode": "bytecode", "pipeline": TARGET_DEFAULT_PIPELINE, "opt_level": 3},
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
                   setup_check=SetupCheck("relax", "relax.build and run a tiny function on llvm", _SETUP_CHECK),
                   # the fusing one first: a GPU's default pipeline fuses, and its bugs are most often FuseTIR's
                   llvm_pipelines=(TARGET_DEFAULT_PIPELINE, "default"),
                   gradients="hirfuzz.dialects.relax.gradients",
                   widening="hirfuzz.dialects.relax.narrowing:widening_pass")
