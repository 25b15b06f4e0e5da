"""A user's pass that kills the worker as a TVM pass that crashes would (either IR, either
TVM): for tests of where a worker died (hirfuzz.breadcrumbs)."""
import ctypes

import tvm


def segfault():
    @tvm.transform.module_pass(opt_level=0, name="PlantedSegfault")
    def apply(mod, _ctx):
        ctypes.string_at(0)  # SIGSEGV
        return mod
    return apply
