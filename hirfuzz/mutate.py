"""Mutators: semantics-preserving rewrites of a Relax IRModule (runs inside workers)."""
from __future__ import annotations

import tvm
from tvm import relax


def prepare_for_build(mod: tvm.IRModule) -> tvm.IRModule:
    """What TVM 0.27 requires of a module before `relax.build`.

    Precondition, not a bug: the VM build pipeline (VMShapeLower) cannot handle local
    functions (closures); TVM documents `relax.transform.LambdaLift` as the pass that must
    run first, so it runs here whenever a function contains a nested function. A failure
    of LambdaLift itself, or of the build on a well-formed lifted module, is a TVM bug.
    """
    if _has_local_functions(mod):
        mod = relax.transform.LambdaLift()(mod)
    return mod


def _has_local_functions(mod: tvm.IRModule) -> bool:
    found = []

    def visit(e):
        if isinstance(e, relax.Function):
            found.append(e)
    for _, func in mod.functions_items():
        if isinstance(func, relax.Function):
            relax.analysis.post_order_visit(func.body, visit)
            if found:
                return True
    return False
