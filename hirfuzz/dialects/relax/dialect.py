"""Relax on apache-tvm 0.27 behind the Dialect interface (imported by workers only)."""
from __future__ import annotations


import numpy as np
import tvm
from tvm import relax

from ...core.graph import Graph
from ...core.plan import LoweringPlan
from ...core.gradients import float_results, float_variables
from ...protocol import GRADIENT
from ..base import Dialect, ExecutorCannotTake, build_pass_watcher, installation_of
from .executors import build_module, load_vm, run_vm
from .gradients import DECLARED_NO_GRAD
from .lower import lower_graph, lower_loss
from .mutators import mutate, prepare_for_build
from .passes import apply_passes
from .text import module_to_script
from .violate import apply_violation


class RelaxDialect(Dialect):
    name = "relax"

    def describe_installation(self) -> dict:
        return installation_of(tvm, "relax")

    def lower(self, request: dict):
        plan = LoweringPlan.from_json(request["plan"]) if request.get("plan") else None
        mod = lower_graph(Graph.from_json(request["graph"]), request["calls"], plan=plan)
        if request.get("violation") is not None:
            mod = apply_violation(mod, request["violation"])
        return mod

    def lower_loss(self, request: dict, gradient: dict):
        graph = Graph.from_json(request["graph"])
        if not float_results(graph) or not float_variables(graph, DECLARED_NO_GRAD):
            raise ExecutorCannotTake("no float result or no float variable: nothing to differentiate")
        return lower_loss(graph, request["calls"], gradient[GRADIENT])

    def check_well_formed(self, module) -> None:
        relax.analysis.well_formed(module)

    def mutate(self, module, seed: int, count: int, traits: dict, structural_only: bool = False):
        mutant, applied = mutate(module, np.random.default_rng(seed), count, traits, structural_only=structural_only)
        relax.analysis.well_formed(mutant)
        return mutant, applied

    def apply_passes(self, module, config: dict):
        return apply_passes(module, config)

    def build(self, module, config: dict):
        # LambdaLift where closures remain: TVM 0.27's precondition for building, watched as
        # the build's own passes are, so that a failure in it is said to be LambdaLift's
        with tvm.transform.PassContext(opt_level=config["opt_level"], instruments=[build_pass_watcher()]):
            module = prepare_for_build(module)
        return build_module(module, config)

    load_stage = "run"  # the VM was made inside run_module, and a JIT failure reported there

    def load(self, built, config: dict):
        return load_vm(built, config)

    def run(self, executable, config: dict, inputs: list[np.ndarray]) -> list[np.ndarray]:
        return run_vm(executable, config, inputs)

    def render(self, module):
        return module_to_script(module)


DIALECT = RelaxDialect()
