"""What both sides of the worker pipe share: stages, the array codec, configurations.

The coordinator and a worker speak JSON lines. A request is a case (its graph, lowering
plan, inputs and configurations); a reply says which stage failed and how, or carries the
outputs. Nothing here imports TVM: this module is loaded on both sides, and a worker may
run under another interpreter (`--tvm-python`) with another TVM.
"""
from __future__ import annotations

import base64
import io
import traceback

import numpy as np

from .core.targets import target_label
from .dialects import dialect_info

# the order a case goes through inside a worker; a reply's "stage" is one of these
# ("ill_formed_after_pass": a pass returned an ill-formed module; the reply's "blamed_pass"
# names the first such pass of the sequence)
STAGES = ("lower", "well_formed", "passes", "ill_formed_after_pass", "build", "run")


def encode_array(a: np.ndarray) -> str:
    buf = io.BytesIO()
    np.save(buf, np.asarray(a), allow_pickle=False)  # (ascontiguousarray would make rank 0 rank 1)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def decode_array(text: str) -> np.ndarray:
    return np.load(io.BytesIO(base64.b64decode(text)), allow_pickle=False)


def error_reply(stage: str, exc: BaseException, diagnostics: list[str] | None = None) -> dict:
    """A failure as data. TVM's diagnostics (Relay's type errors), when there are any, lead
    the message: the exception itself only says to look at them."""
    message = str(exc)
    if diagnostics:
        message = f"{type(exc).__name__}: {' | '.join(d.replace(chr(10), ' ') for d in diagnostics)}\n{message}"
    return {"status": "error", "stage": stage, "exc_type": type(exc).__name__,
            "message": message, "traceback": traceback.format_exc()}


def make_config(executor: str = "vm", target: str | dict = "llvm", passes: list | None = None,
                opt_level: int | None = None, dialect: str = "relax") -> dict:
    """A configuration as plain data (it travels to workers and into reproducers):
    (pass sequence, opt level, pipeline, executable mode, target) for one of the
    dialect's executors."""
    settings = dialect_info(dialect).executors[executor]
    config = {"name": executor, "target": target, "passes": passes or [], **settings}
    if opt_level is not None:
        config["opt_level"] = opt_level
    return config


def describe_config(config: dict, with_passes: bool = True) -> str:
    from .core.passes import describe as describe_passes
    pipeline = f", {config['pipeline']} pipeline" if config.get("pipeline") else ""
    text = f"{config['name']} on {target_label(config['target'])} (opt_level {config['opt_level']}{pipeline})"
    return text + (f" after {describe_passes(config['passes'])}" if config["passes"] and with_passes else "")


# what a reproducer prints to say how far it got: "<mark> stage=S error=E", "<mark> ok",
# "<mark> mismatch" or "<mark> accepted"; the checker (campaign.verify) reads it back
REPRO_MARK = "HIRFUZZ-REPRO"
