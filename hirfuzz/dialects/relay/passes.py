"""Relay pass sequences (TVM 0.19 only; runs in Relay workers, never in the coordinator).

A step is `{"name", "args", "import"?, "search_dir"?}`, as for Relax: `relay.transform.<name>`,
or a user's factory. A configuration's `passes` run before the executor's own pipeline.

Three things in TVM 0.19 shape `apply_passes`:
- several passes (LambdaLift, ToANormalForm, PartialEvaluate, EtaExpand) update the module
  they are given and return it, so the input is copied first and never changes;
- a Sequential silently skips a pass whose opt_level is above the PassContext's (FastMath and
  the CombineParallel* passes are level 4), so each step's passes are named as required
  passes of its context, which runs them whatever the configured opt_level;
- Relay passes are written for a type-checked module, and many do not say so (those that do
  get InferType from the Sequential); InferType runs before every step, as TVM's own
  pipelines re-infer between passes, so that no step fails only for lack of types.

The catalog is checked against TVM 0.19 by passcheck.py (`python -m hirfuzz.dialects.relay.passcheck`).
"""
from __future__ import annotations

import contextlib

import tvm
from tvm import relay

from ...breadcrumbs import TRAIL, Stage
from ...core.passes import user_factory
from .gradients import Autodiff


def instantiate_pass(step: dict):
    """The tvm.transform.Pass for one step (a user's factory, or relay.transform)."""
    if step.get("import"):
        return user_factory(step)(**step["args"])
    return getattr(relay.transform, step["name"])(**step["args"])


def copy_module(mod):
    """A new IRModule holding the same (immutable) functions and type definitions: a pass that
    updates its module in place updates the copy only."""
    return tvm.IRModule(dict(mod.functions), dict(mod.type_definitions), attrs=mod.attrs)


def pass_names(pass_) -> list[str]:
    """The names a PassContext must require so that the pass and every pass inside it run
    (BatchingOps and FoldScaleAxis are Sequentials of level-3 and level-4 passes), with the
    passes they require."""
    names = [pass_.info.name, *map(str, pass_.info.required)]
    for inner in getattr(pass_, "passes", None) or []:
        names += pass_names(inner)
    return names


def run_step(mod, pass_, opt_level: int):
    """InferType, then the pass (with the passes it requires), under the configured opt_level."""
    with tvm.transform.PassContext(opt_level=opt_level, required_pass=pass_names(pass_)):
        return tvm.transform.Sequential([relay.transform.InferType(), pass_])(mod)


def check_well_formed(mod):
    """Raise unless every global function is well-formed (relay.analysis.well_formed: each
    variable bound once), has no free variable, and the module type-checks."""
    for gv, func in mod.functions.items():
        if not isinstance(func, relay.Function):
            continue
        if not relay.analysis.well_formed(func):
            raise ValueError(f"relay.analysis.well_formed is false for global function {gv.name_hint}")
        free = relay.analysis.free_vars(func)
        if free:
            raise ValueError(f"free variable %{free[0].name_hint} in global function {gv.name_hint}")
    relay.transform.InferType()(mod)


def apply_passes(mod, config: dict, trials_apart=contextlib.nullcontext):
    """Run the configuration's pass sequence (stage 'passes') on a copy of `mod`, checking the
    module after each step: the first pass whose output is not well-formed raises
    IllFormedAfterPass (else the next step's InferType, or the build, would be blamed). A
    failing pass's constituents are tried within `trials_apart()` (the dialect's: their
    diagnostics are not the failure's)."""
    from ..base import INNER_PASSES, IllFormedAfterPass, failure_key
    mod = copy_module(mod)
    for position, step in enumerate(config.get("passes") or []):
        TRAIL.at(Stage.PASSES, step["name"], position)  # where a pass that kills the worker killed it
        pass_, before = instantiate_pass(step), mod
        try:
            mod = run_step(before, pass_, config["opt_level"])
        except Exception as exc:  # the pass raised: the pass within it that raises alike, for titles and keys
            with trials_apart():
                setattr(exc, INNER_PASSES, _innermost(pass_, before, failure_key(exc, ill_formed=False), config))
            raise
        try:
            check_well_formed(mod)
        except Exception as exc:  # noqa: BLE001 - the check's complaint is the finding
            with trials_apart():
                inner = _innermost(pass_, before, failure_key(exc, ill_formed=True), config)
            raise IllFormedAfterPass(step["name"], exc, inner) from exc
    return mod


def _innermost(pass_, mod, key: str, config: dict) -> list[str]:
    """The passes within `pass_` that fail alike on `mod` (dialects.base.innermost_failing):
    FoldScaleAxis is a Sequential of Backward- and ForwardFoldScaleAxis and FoldConstant, and
    FoldConstant's own fault was titled and keyed as FoldScaleAxis's (bench27 relay seed 17
    0007). [] where it runs none, or trying them fails in itself."""
    from ..base import innermost_failing
    try:
        return innermost_failing(pass_, mod, key, lambda m, p: run_step(copy_module(m), p, config["opt_level"]),
                                 check_well_formed)
    except Exception:  # noqa: BLE001 - the search is a refinement; the failure stands without it
        return []


def loss_and_float_gradients(mod):
    """FirstOrderGradient of `main` (the loss program), its result made the loss, then the
    gradient of each float parameter: the pass returns (loss, (every parameter's gradient)),
    integer parameters' too."""
    mod = relay.transform.FirstOrderGradient()(mod)
    return with_float_gradients(mod, mod["main"])


def with_float_gradients(mod, main):
    """`mod` whose `main` is `main` (an autodiff's: it returns (loss, (each parameter's
    gradient))) narrowed to the loss, then the float parameters' gradients; type-inferred.
    A copy: `mod` is left as it was."""
    floats = [i for i, p in enumerate(main.params) if p.checked_type.dtype in ("float16", "float32", "float64")]
    result = relay.var("result")
    picked = relay.Tuple([relay.TupleGetItem(result, 0)]
                         + [relay.TupleGetItem(relay.TupleGetItem(result, 1), i) for i in floats])
    narrowed = copy_module(mod)
    narrowed["main"] = relay.Function(main.params, relay.Let(result, main.body, picked))
    return relay.transform.InferType()(narrowed)


def higher_order_loss_and_float_gradients(mod):
    """The higher-order autodiff of `main` (the loss program, calling `forward`), in A-normal
    form, as it takes it (no graph sharing); then as `loss_and_float_gradients`. It adds
    `forward_grad` (and a _grad for each global function called) to the module. Then
    Legalize, as TVM's own gradient checks run it (relay.testing.check_grad): some
    registered gradients call ops only it decomposes (conv2d_grad's
    conv2d_backward_weight), and the interpreter, which runs the result, does not run it."""
    mod = relay.transform.InferType()(relay.transform.ToANormalForm()(copy_module(mod)))
    mod = with_float_gradients(mod, relay.transform.gradient(mod["main"], mod=mod, mode="higher_order"))
    return relay.transform.Legalize()(mod)


def differentiate(mod, autodiff: Autodiff = Autodiff.FIRST_ORDER):
    """The gradient oracle's one pass (protocol.GRADIENT): `loss_and_float_gradients`, or
    its higher-order kin, its output checked as any pass's."""
    from ...protocol import GRADIENT_PASS
    from ..base import IllFormedAfterPass
    TRAIL.at(Stage.PASSES, GRADIENT_PASS)
    if autodiff is Autodiff.HIGHER_ORDER:
        mod = higher_order_loss_and_float_gradients(mod)
    else:
        mod = loss_and_float_gradients(mod)
    try:
        check_well_formed(mod)
    except Exception as exc:  # noqa: BLE001 - the check's complaint is the finding
        raise IllFormedAfterPass(GRADIENT_PASS, exc) from exc
    return mod
