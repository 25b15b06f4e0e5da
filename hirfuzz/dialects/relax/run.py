"""Running: an executable on the Relax VM with given inputs (runs inside workers)."""
from __future__ import annotations

import numpy as np
import tvm
from tvm import relax

from .compile import device_for


def _flatten(value) -> list[np.ndarray]:
    if isinstance(value, tvm.runtime.Tensor):
        return [value.numpy()]
    if isinstance(value, (list, tuple)) or hasattr(value, "__len__"):
        out = []
        for v in value:
            out.extend(_flatten(v))
        return out
    return [np.asarray(value)]


def run_module(executable, config, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Run `main` on the configuration's device; its results flattened to a list of arrays."""
    dev = device_for(config)
    vm = relax.VirtualMachine(executable, dev)
    args = [tvm.runtime.tensor(a, dev) for a in inputs]
    return _flatten(vm["main"](*args))
