"""Relax pass sequences: a configuration's passes run on a module (in workers).

A configuration (`protocol.make_config`) is (pass sequence, opt level, pipeline,
executable mode, target). A pass sequence runs before relax.build (executors.py), inside the
configuration's PassContext.
"""
from __future__ import annotations

import contextlib

import tvm
from tvm import relax

from ...breadcrumbs import TRAIL, Stage
from ...core.passes import user_factory
from ...protocol import GRADIENT, GRADIENT_PASS, REQUIRE_GRADS
from ..base import INNER_PASSES, IllFormedAfterPass, failure_key, innermost_failing
from .returns import check_returns_kept, returned_types


# a PassContext opt level at which no pass is skipped (TVM's passes declare 0 to 4)
EVERY_LEVEL = 4


def instantiate_pass(step: dict):
    """The tvm.transform.Pass for one step of a sequence (a user's factory, or relax.transform)."""
    if step.get("import"):
        return user_factory(step)(**step["args"])
    return getattr(relax.transform, step["name"])(**step["args"])


def apply_passes(mod, config: dict):
    """Run the configuration's pass sequence (stage 'passes'), checking the module after each
    pass: the first pass whose output is not well-formed, or whose public functions return
    a type that contradicts what they returned before the sequence (returns.py), raises
    IllFormedAfterPass.

    Each pass runs as a one-pass Sequential, which skips it above the context's opt_level
    and runs the passes it requires, as one Sequential of them all would. A gradient
    configuration's one pass is Gradient (`differentiate`)."""
    if config.get(GRADIENT):
        return differentiate(mod, config[REQUIRE_GRADS])
    if not config.get("passes"):
        return mod
    passes = [instantiate_pass(step) for step in config["passes"]]
    returned = returned_types(mod)
    with tvm.transform.PassContext(opt_level=config["opt_level"]):
        for position, (step, pass_) in enumerate(zip(config["passes"], passes)):
            before = mod
            TRAIL.at(Stage.PASSES, step["name"], position)  # where a pass that kills the worker killed it
            try:
                mod = _run(before, pass_)
            except Exception as exc:  # the pass raised: the pass within it that raises alike, for titles
                key = failure_key(exc, ill_formed=False)
                setattr(exc, INNER_PASSES, _innermost(pass_, step, before, key, returned))
                raise
            try:
                check_output(returned, mod)
            except Exception as exc:  # noqa: BLE001 - the check's complaint is the finding
                inner = _innermost(pass_, step, before, failure_key(exc, ill_formed=True), returned)
                raise IllFormedAfterPass(step["name"], exc, inner) from exc
    return mod


def check_output(returned: dict, mod) -> None:
    """Raise where a pass's output is not well-formed, or returns other than `returned` says."""
    relax.analysis.well_formed(mod)
    check_returns_kept(returned, mod)


def differentiate(mod, positions: list[int]):
    """relax.transform.Gradient("main") with respect to main's parameters at `positions`
    (the gradient oracle's configuration, protocol.GRADIENT and REQUIRE_GRADS), its output
    checked as any pass's."""
    TRAIL.at(Stage.PASSES, GRADIENT_PASS)
    params = mod["main"].params
    mod = relax.transform.Gradient("main", require_grads=[params[i] for i in positions])(mod)
    try:
        relax.analysis.well_formed(mod)
    except Exception as exc:  # noqa: BLE001 - the check's complaint is the finding
        raise IllFormedAfterPass(GRADIENT_PASS, exc, []) from exc
    return mod


def _run(mod, pass_):
    """One pass, as a one-pass Sequential (skipped above the context's opt level)."""
    return tvm.transform.Sequential([pass_])(mod)


def _innermost(pass_, step: dict, mod, key: str, returned: dict) -> list[str]:
    """The passes within `pass_` (the pass of `step`) that fail alike on `mod`
    (dialects.base.innermost_failing), those it runs inside itself (its catalog entry's
    `runs_inside_it`) made with their default arguments; [] where trying them fails in itself.

    A pass runs those inside itself whatever the opt level (TVM calls them as functions),
    while a Sequential skips a pass above its context's level (CanonicalizeBindings' own
    constituents are at 1): where there are any, the search runs at every level."""
    try:
        inside = [instantiate_pass({"name": name, "args": {}}) for name in step.get("runs_inside_it", [])]
        with tvm.transform.PassContext(opt_level=EVERY_LEVEL) if inside else contextlib.nullcontext():
            return innermost_failing(pass_, mod, key, _run, lambda out: check_output(returned, out), inside)
    except Exception:  # noqa: BLE001 - the search is a refinement; the failure stands without it
        return []
