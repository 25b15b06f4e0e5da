"""Relax pass sequences: a configuration's passes run on a module (in workers).

A configuration (`protocol.make_config`) is (pass sequence, opt level, pipeline,
executable mode, target). A pass sequence runs before relax.build (executors.py), inside the
configuration's PassContext.
"""
from __future__ import annotations

import tvm
from tvm import relax

from ...core.passes import user_factory
from ..base import IllFormedAfterPass


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
