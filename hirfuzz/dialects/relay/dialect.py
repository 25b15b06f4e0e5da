"""The Relay dialect on TVM 0.19, behind the Dialect interface (workers only)."""
from __future__ import annotations

import contextlib

import functools
import os
import sys

import numpy as np
import tvm
from tvm import relay

from ...core.graph import Graph
from ...core.plan import LoweringPlan
from ...core.gradients import float_results, float_variables
from ...protocol import GRADIENT
from ..base import Dialect, ExecutorCannotTake, installation_of
from .dynamic import dynamic_limits
from .executors import build, load, run
from .gradients import NOT_DIFFERENTIABLE_FEATURES, Autodiff, autodiff_of
from .lower import lower_graph, lower_loss, lower_planned_loss
from .ops import relay_op
from .violate import apply_violation

# building would otherwise try to download tuning logs (TopHub), and fail offline
os.environ.setdefault("TOPHUB_LOCATION", "NONE")


def print_diagnostics(ctx) -> list[str]:
    """Render TVM's diagnostics as their messages, one a line on stderr; returns them. TVM's
    own renderer shows each at its place in the source, and raises a TVMError instead of a
    DiagnosticError where the module's source map lacks that place."""
    messages = [str(d.message) for d in ctx.diagnostics]
    for message in messages:
        print(f"diagnostic: {message}", file=sys.stderr)
    return messages


def install_renderer(render) -> None:
    """Have every diagnostic context rendered by `render`, through one renderer made here.
    `tvm.ir.diagnostics.override_renderer` registers a factory that makes a new renderer (an
    FFI object around the Python function) for each context, and a build makes thousands
    (one per InferType: 7,460 in a 40-operator case's two vm builds). Made once, a context
    costs one call into Python, to `render`, which returns at once when it has nothing."""
    renderer = tvm.ir.diagnostics.DiagnosticRenderer(render)
    tvm.register_func("diagnostics.OverrideRenderer", lambda: renderer, override=True)


def cache_build_info() -> None:
    """TVM 0.19's te_compiler asks `libinfo()` (a dict of the ~100 build flags, made anew
    through the FFI, ~10 ms) once per output dimension of every operator it lowers: 222
    calls, about a tenth of a 40-operator vm build. The flags are fixed for the process, so
    the worker asks once; what TVM compiles is unchanged."""
    from tvm.relay.backend import te_compiler
    if not hasattr(te_compiler.libinfo, "cache_info"):
        te_compiler.libinfo = functools.lru_cache(maxsize=None)(te_compiler.libinfo)


class RelayDialect(Dialect):
    name = "relay"

    def __init__(self):
        # Relay's type errors are diagnostics: rendered (to stderr by default) before a
        # DiagnosticError that says only "see the diagnostic render"; keep their text
        self.diagnostics: list[str] = []
        install_renderer(self._render_diagnostics)
        cache_build_info()

    def _render_diagnostics(self, ctx):
        if len(ctx.diagnostics):  # nearly every context (one per InferType) has none
            self.diagnostics += print_diagnostics(ctx)

    def take_diagnostics(self) -> list[str]:
        taken, self.diagnostics = self.diagnostics, []
        return taken

    @contextlib.contextmanager
    def diagnostics_unchanged(self):
        """What runs inside adds no diagnostics to the failure's (trials after it: their type
        errors would join its message)."""
        kept = list(self.diagnostics)
        try:
            yield
        finally:
            self.diagnostics = kept

    def describe_installation(self) -> dict:
        return installation_of(tvm, "relay")

    def lower(self, request: dict):
        plan = LoweringPlan.from_json(request["plan"]) if request.get("plan") else None
        mod = lower_graph(Graph.from_json(request["graph"]), request["calls"], plan=plan)
        if request.get("violation") is not None:
            mod = apply_violation(mod, request["violation"], relay_op)
        return mod

    def lower_loss(self, request: dict, gradient: dict):
        graph = Graph.from_json(request["graph"])
        if not float_results(graph) or not float_variables(graph):
            raise ExecutorCannotTake("no float result or no float variable: nothing to differentiate")
        if autodiff_of(gradient) is not Autodiff.HIGHER_ORDER:
            return lower_loss(graph, request["calls"], gradient[GRADIENT])
        plan = LoweringPlan.from_json(request["plan"]) if request.get("plan") else None
        if plan is not None:  # dynamic shapes under the autodiff: not tried yet
            plan, _ = plan.stripped((*NOT_DIFFERENTIABLE_FEATURES, "dynamic_param"))
        return lower_planned_loss(graph, request["calls"], plan, gradient[GRADIENT])

    def check_well_formed(self, module) -> None:
        # type inference is Relay's check that a program is valid; lowering ran it, and a
        # module that stops type-checking raises here
        relay.transform.InferType()(module)

    def mutate(self, module, seed: int, count: int, traits: dict, structural_only: bool = False):
        from .mutators import mutate
        return mutate(module, np.random.default_rng(seed), count, traits, structural_only=structural_only)

    def apply_passes(self, module, config: dict):
        if config.get(GRADIENT):  # the gradient configuration's one pass: its autodiff
            from .passes import differentiate
            return differentiate(module, autodiff_of(config))
        if not config.get("passes"):
            return module
        from .passes import apply_passes
        with dynamic_limits(module):
            return apply_passes(module, config, self.diagnostics_unchanged)

    def build(self, module, config: dict):
        with dynamic_limits(module):
            return build(module, config)

    def load(self, built, config: dict):
        return load(built, config)

    def run(self, executable, config: dict, inputs: list[np.ndarray]) -> list[np.ndarray]:
        return run(executable, config, inputs)

    def render(self, module):
        # constants print exactly in the metadata section (lower.constant keeps scalars
        # there), which the text leaves out: they travel as arrays
        from .text import module_to_text
        return module_to_text(module)


DIALECT = RelayDialect()
