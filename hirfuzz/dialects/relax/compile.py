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
    """Run the configuration's pass sequence (stage 'passes')."""
    if not config.get("passes"):
        return mod
    with tvm.transform.PassContext(opt_level=config["opt_level"]):
        return tvm.transform.Sequential([instantiate_pass(step) for step in config["passes"]])(mod)


def build_module(mod, config: dict | None = None):
    """relax.build under the configuration (stage 'build')."""
    config = config or make_config()
    with tvm.transform.PassContext(opt_level=config["opt_level"]):
        return relax.build(mod, target=config["target"], relax_pipeline=config["pipeline"],
                           exec_mode=config["exec_mode"])
