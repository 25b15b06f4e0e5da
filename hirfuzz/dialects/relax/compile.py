"""Compilation: an IRModule becomes an executable under one configuration (in workers).

A configuration (`protocol.make_config`) is (pass sequence, opt level, pipeline,
executable mode, target). A pass sequence runs before relax.build, inside the
configuration's PassContext.
"""
from __future__ import annotations

import tvm
from tvm import relax

from ...core.passes import user_factory
from ...protocol import make_config
from ..base import IllFormedAfterPass


def device_for(target):
    """The device for a target string or a configuration."""
    target = target if isinstance(target, str) else target["target"]
    kind = tvm.target.Target(target).kind.name
    return tvm.cuda(0) if kind == "cuda" else tvm.cpu(0)


def instantiate_pass(step: dict):
    """The tvm.transform.Pass for one step of a sequence (a user's factory, or relax.transform)."""
    if step.get("import"):
        return user_factory(step)(**step["args"])
    return getattr(relax.transform, step["name"])(**step["args"])


def apply_passes(mod, config: dict):
    """Run the configuration's pass sequence (stage 'passes'), checking the module after each
    pass: the first pass whose output is not well-formed raises IllFormedAfterPass.

    Each pass runs as a one-pass Sequential, which skips it above the context's opt_level
    and runs the passes it requires, as one Sequential of them all would."""
    if not config.get("passes"):
        return mod
    passes = [instantiate_pass(step) for step in config["passes"]]
    with tvm.transform.PassContext(opt_level=config["opt_level"]):
        for step, pass_ in zip(config["passes"], passes):
            mod = tvm.transform.Sequential([pass_])(mod)
            try:
                relax.analysis.well_formed(mod)
            except Exception as exc:  # noqa: BLE001 - the check's complaint is the finding
                raise IllFormedAfterPass(step["name"], exc) from exc
    return mod


def build_module(mod, config: dict | None = None):
    """relax.build under the configuration (stage 'build')."""
    config = config or make_config()
    with tvm.transform.PassContext(opt_level=config["opt_level"]):
        return relax.build(mod, target=config["target"], relax_pipeline=config["pipeline"],
                           exec_mode=config["exec_mode"])
