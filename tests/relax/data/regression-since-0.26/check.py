"""hirfuzz reproducer.

Finding: crash (pass-order oracle) at stage 'passes'
Message: after AdjustMatmulOrder(), ConvertLayout(desired_layouts={'relax.nn.conv2d': ['NHWC', 'OHWI']}): InternalError: Check failed: (updated_vars.binding_vars.count(var)) is false: Error: DataflowBlock Pass should not rewrite or delete any global-scope Var. under vm on llvm (opt_level 2, default pipeline)
TVM: 0.27.0.post1; built as: vm on llvm (opt_level 2, default pipeline) after AdjustMatmulOrder(), ConvertLayout(desired_layouts={'relax.nn.conv2d': ['NHWC', 'OHWI']})
Needs: Python 3.10 or later, apache-tvm 0.27 (Relax) and numpy
Run: python repro.py   (exit status 0 means the bug no longer reproduces)
"""
import sys

import numpy as np
import tvm
from tvm import relax

TARGET = 'llvm'
OPT_LEVEL = 2
PIPELINE = 'default'
EXEC_MODE = 'bytecode'
RUN = True


def prepare_for_build(mod: tvm.IRModule) -> tvm.IRModule:
    """What TVM 0.27 requires of a module before `relax.build`.

    Precondition, not a bug: the VM build pipeline (VMShapeLower) cannot handle local
    functions (closures); TVM documents `relax.transform.LambdaLift` as the pass that must
    run first, so it runs here whenever a function contains a nested function. A failure
    of LambdaLift on a well-formed module, a lifted module that is not well-formed, or a
    build failure on a well-formed lifted module is a TVM bug (see lower.KNOWN_TVM_BUGS).
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

def passes():
    return [relax.transform.AdjustMatmulOrder(), relax.transform.ConvertLayout(desired_layouts={'relax.nn.conv2d': ['NHWC', 'OHWI']})]

from tvm.script import ir as I, relax as R, tirx as T  # noqa: E402,E741

def TypeVar(name):  # how the printer spells a global function's symbolic dimension
    return tvm.tirx.Var(name, 'int64')

_c = [  # the module's tensor constants
]

# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x0: R.Tensor((3, 4), dtype="bool"), x1: R.Tensor((), dtype="bool"), x3: R.Tensor((4, 6, 3), dtype="uint32")) -> R.Tuple(R.Tensor((3, 4), dtype="bool"), R.Tensor((4,), dtype="uint32")):
        n3 = T.int64()
        n4 = T.int64()
        n6 = T.int64()
        gv: R.Tensor((n3, n4), dtype="bool") = R.match_cast(x0, R.Tensor((n3, n4), dtype="bool"))
        if n3 >= 1:
            gv1: R.Tensor((3, 4), dtype="bool") = R.logical_and(x0, x1)
            gv3: R.Tensor((3, 4), dtype="bool") = gv1
        else:
            gv2: R.Tensor((3, 4), dtype="bool") = R.zeros(R.shape([3, 4]), dtype="bool")
            gv3: R.Tensor((3, 4), dtype="bool") = gv2
        with R.dataflow():
            lv: R.Tuple(R.Tensor((4, 6, 3), dtype="uint32")) = (x3,)
            lv1: R.Tensor((4, 6, 3), dtype="uint32") = lv[0]
            lv2: R.Tensor((n4, n6, n3), dtype="uint32") = R.match_cast(lv1, R.Tensor((n4, n6, n3), dtype="uint32"))
            lv3: R.Tensor((n4,), dtype="uint32") = R.sum(lv2, axis=[-2, -1], keepdims=False)
            lv4: R.Tensor((4,), dtype="uint32") = R.match_cast(lv3, R.Tensor((4,), dtype="uint32"))
            gv4: R.Tensor((4,), dtype="uint32") = lv4
            R.output(gv4)
        return (gv3, gv4)


def build_module():
    return Module

EXPECT_REJECTION = False  # a valid program
INPUTS = [
    np.array([[True, True, True, True], [True, False, True, False], [True, True, False, False]], dtype='bool'),
    np.array(True, dtype='bool'),
    np.array([[[2, 7, 0], [2, 4, 7], [1, 7, 2], [0, 2, 3], [8, 8, 8], [7, 8, 3]], [[1, 3, 5], [3, 4, 8], [6, 3, 1], [5, 7, 4], [4, 1, 6], [1, 6, 2]], [[3, 3, 8], [0, 7, 1], [1, 0, 2], [3, 0, 2], [2, 3, 5], [7, 4, 6]], [[8, 7, 5], [5, 1, 4], [4, 8, 7], [1, 5, 4], [0, 0, 3], [6, 6, 3]]], dtype='uint32'),
]
EXPECTED = None

def flatten(value):
    if isinstance(value, tvm.runtime.Tensor):
        return [value.numpy()]
    return [a for v in value for a in flatten(v)]


def check_well_formed_after(pass_, mod):
    """The first pass whose output is not well-formed is the one to blame."""
    try:
        relax.analysis.well_formed(mod)
    except Exception as exc:
        print(f"well_formed before {pass_.info.name}: True")
        print(f"well_formed after {pass_.info.name}: False: {str(exc).strip().splitlines()[0]}")
        raise


def main():
    stage = "setup"  # what the script needs besides TVM (a user's pass module): not the bug
    try:
        pass_list = passes()
        stage = "lower"
        mod = build_module()
        print(mod.script())
        stage = "well_formed"
        relax.analysis.well_formed(mod)
        with tvm.transform.PassContext(opt_level=OPT_LEVEL):
            for pass_ in pass_list:  # one at a time, each output checked, as hirfuzz does
                stage = "passes"
                mod = tvm.transform.Sequential([pass_])(mod)
                stage = "ill_formed_after_pass"
                check_well_formed_after(pass_, mod)
            stage = "build"
            mod = prepare_for_build(mod)
            executable = relax.build(mod, target=TARGET, relax_pipeline=PIPELINE, exec_mode=EXEC_MODE)
        if not RUN:
            print("HIRFUZZ-REPRO ok")
            return 0
        stage = "run"
        dev = tvm.cuda(0) if TARGET.startswith("cuda") else tvm.cpu(0)
        vm = relax.VirtualMachine(executable, dev)
        outputs = flatten(vm["main"](*[tvm.runtime.tensor(a, dev) for a in INPUTS]))
    except Exception as exc:
        print(f"HIRFUZZ-REPRO stage={stage} error={type(exc).__name__}")
        raise

    if EXPECT_REJECTION:
        print("HIRFUZZ-REPRO accepted")
        return 1
    if EXPECTED is None:
        print("HIRFUZZ-REPRO ok")
        return 0
    failed = False
    for i, (got, (want, rtol, atol)) in enumerate(zip(outputs, EXPECTED)):
        if want is None:
            continue  # not comparable: rounding may have been amplified
        if got.dtype != want.dtype or got.shape != want.shape:
            print(f"result {i}: got {got.dtype}{list(got.shape)}, expected {want.dtype}{list(want.shape)}")
            failed = True
        elif atol == 0 and rtol == 0:
            if not np.array_equal(got, want):
                print(f"result {i}: {int(np.sum(got != want))} elements differ\n got {got}\n expected {want}")
                failed = True
        elif not np.allclose(got.astype("float64"), want.astype("float64"), rtol=rtol, atol=atol):
            print(f"result {i}: outside rtol={rtol} atol={atol}\n got {got}\n expected {want}")
            failed = True
    print("HIRFUZZ-REPRO mismatch" if failed else "HIRFUZZ-REPRO ok")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
