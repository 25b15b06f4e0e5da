"""Compilation: an IRModule becomes an executable for one target (runs inside workers).

A configuration is the target and the executable mode; pass sequences, pipelines and opt
levels are added by the compilation-matrix work (passes.yaml). Today every case is built
with TVM's default pipeline, as `relax.build` does.
"""
from __future__ import annotations

from dataclasses import dataclass

import tvm
from tvm import relax


@dataclass(frozen=True)
class BuildConfig:
    target: str = "llvm"
    exec_mode: str = "bytecode"

    def describe(self) -> str:
        return f"{self.target}/{self.exec_mode}"


def device_for(target: str):
    kind = tvm.target.Target(target).kind.name
    return tvm.cuda(0) if kind == "cuda" else tvm.cpu(0)


def build_module(mod: tvm.IRModule, config: BuildConfig):
    return relax.build(mod, target=config.target, exec_mode=config.exec_mode)
