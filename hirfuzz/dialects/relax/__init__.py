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
from ..info import DialectInfo

EXECUTORS = {
    "vm": {"exec_mode": "bytecode", "pipeline": "default", "opt_level": 3},
    "compiled": {"exec_mode": "compiled", "pipeline": "default", "opt_level": 3},
    "unoptimised": {"exec_mode": "bytecode", "pipeline": "default", "opt_level": 0},
}
# relax.build(relax_pipeline="zero") is no executor: the zero pipeline stops before the
# VM lowering, so CodeGenVM rejects every module built that way (seen on 0.27)

INFO = DialectInfo(name="relax", tvm="apache-tvm 0.27", executors=EXECUTORS, baseline="vm",
                   catalog=CatalogSection(PASS_CATALOG, "relax"),
                   implementation="hirfuzz.dialects.relax.dialect",
                   reproducer="hirfuzz.dialects.relax.repro")
