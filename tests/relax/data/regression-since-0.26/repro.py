import numpy as np
import tvm
from tvm import relax
from tvm.script import ir as I, relax as R, tirx as T

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

mod = Module
with tvm.transform.PassContext(opt_level=2):
    mod = tvm.transform.Sequential([relax.transform.AdjustMatmulOrder(), relax.transform.ConvertLayout(desired_layouts={'relax.nn.conv2d': ['NHWC', 'OHWI']})])(mod)
    ex = relax.build(mod, target='llvm')
