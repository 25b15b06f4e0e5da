"""Relax's executors: a module built under a configuration (relax.build) and run on the
Relax VM with given inputs (runs inside workers)."""
from __future__ import annotations

import numpy as np
import tvm
from tvm import relax

from ...core.targets import target_kind
from ...protocol import GRADIENT, make_config
from ..base import build_pass_watcher
from . import TARGET_DEFAULT_PIPELINE


def device_for(config: dict):
    """The device a configuration's target runs on."""
    return tvm.cuda(0) if target_kind(config["target"]) == "cuda" else tvm.cpu(0)


def build_module(mod, config: dict | None = None):
    """relax.build under the configuration (stage 'build')."""
    config = config or make_config()
    target = tvm.target.Target(config["target"])
    with tvm.transform.PassContext(opt_level=config["opt_level"], instruments=[build_pass_watcher()]):
        return relax.build(mod, target=target, relax_pipeline=relax_pipeline(config, target),
                           exec_mode=config["exec_mode"])


def relax_pipeline(config: dict, target):
    """What relax.build is given as its pipeline: a name it resolves itself, or the target's
    own default pipeline (TARGET_DEFAULT_PIPELINE), which relax.build never picks on llvm."""
    if config["pipeline"] == TARGET_DEFAULT_PIPELINE:
        return relax.get_default_pipeline(target)
    return config["pipeline"]


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
    return run_vm(load_vm(executable, config), config, inputs)


def load_vm(executable, config):
    """A new VM for an executable (the first for it JIT-compiles its code, which the
    executable then keeps: a reused build is loaded again, not compiled again)."""
    return relax.VirtualMachine(executable, device_for(config))


def run_vm(vm, config, inputs: list[np.ndarray]) -> list[np.ndarray]:
    dev = device_for(config)
    args = [tvm.runtime.tensor(a, dev) for a in inputs]
    # a gradient configuration's (protocol.GRADIENT): the loss, then each float parameter's gradient
    entry = "main_adjoint" if config.get(GRADIENT) else "main"
    return _flatten(vm[entry](*args))
