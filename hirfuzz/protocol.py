"""What both sides of the worker pipe share: stages, the array codec, configurations.

The coordinator and a worker speak JSON lines. A request is a case (its graph, lowering
plan, inputs and configurations); a reply says which stage failed and how, or carries the
outputs. Nothing here imports TVM: this module is loaded on both sides, and a worker may
run under another interpreter (`--tvm-python`) with another TVM.
"""
from __future__ import annotations

import base64
import io
import re
import traceback

import numpy as np

from .core.targets import target_label
from .dialects import dialect_info

# the order a case goes through inside a worker; a reply's "stage" is one of these
# ("ill_formed_after_pass": a pass returned an ill-formed module; the reply's "blamed_pass"
# names the first such pass of the sequence; an error in "passes" has "failed_pass", the pass
# of the sequence that raised, and one in "build" may have it: the pass inside the build that
# raised)
STAGES = ("lower", "well_formed", "passes", "ill_formed_after_pass", "build", "run")

# a request's configurations the coordinator already holds replies for (positions in its
# "configs": a follow-up mutant's original's, campaign.followups); the worker builds none
# of them and answers each with GIVEN_STATUS, for the coordinator to put its reply back
GIVEN_CONFIGS = "given"
GIVEN_STATUS = "given"

# a configuration's field (true or absent) marking it check-only: the worker runs its passes,
# each output checked for well-formedness as always, and answers "ok" with no outputs; it
# never builds, loads or runs it (worker.run_config). The pass-order oracle's extra drawn
# sequences (--pass-checks): a pass that raises or leaves an ill-formed module is found
# without a build, which costs about a hundred times the passes; an "ok" is compared with
# nothing (judge.Judge.classify)
CHECK_ONLY = "check_only"

# a configuration's field marking it the gradient oracle's (campaign/oracles/gradient.py), its
# value the loss's dtype: the worker lowers the graph's float results summed to that scalar
# (no lowering plan, but for Relay's higher-order autodiff: AUTODIFF), differentiates main
# with respect to its float parameters (REQUIRE_GRADS; the "passes" stage, as pass
# "Gradient"), builds it and runs main_adjoint; the outputs are the loss, then each of those
# parameters' gradient in parameter order
GRADIENT = "gradient"
GRADIENT_PASS = "Gradient"
# a gradient configuration's field naming which of the dialect's autodiffs runs, where it has
# more than one (Relay: dialects/relay/gradients.Autodiff); absent: its first
AUTODIFF = "autodiff"
# the parameter positions a gradient configuration's autodiff is asked for
# (core.gradients.differentiated_positions): the worker sets it from the request's graph, so
# that a reduction's trial, with fewer variables, asks for its own
REQUIRE_GRADS = "require_grads"


def lowered_only(config: dict) -> dict:
    """`config` check-only and with no pass: the worker lowers the program and checks it is
    well-formed, nothing more. The baseline of a check-only case (campaign.cases), and of a
    check-only sequence's reduction trials, whose failure needs no build to show."""
    return {**config, "passes": [], CHECK_ONLY: True}


# a reply's field: the failures a failed pass of its sequence hid (worker.failures_past), each a
# reply of the same form with the positions of the sequence it ran without (PAST_DROPPED)
PAST_FAILURES = "past"
PAST_DROPPED = "dropped"


def without_passes(config: dict, dropped) -> dict:
    """`config` check-only and without the passes at positions `dropped` of its sequence: what
    a worker runs to go on past passes that failed, and the configuration a failure met so is
    judged, reduced and reproduced under (the module each later pass is given is the same)."""
    left_out = set(dropped)
    passes = [step for position, step in enumerate(config["passes"]) if position not in left_out]
    return {**config, "passes": passes, CHECK_ONLY: True}


def encode_array(a: np.ndarray) -> str:
    buf = io.BytesIO()
    np.save(buf, np.asarray(a), allow_pickle=False)  # (ascontiguousarray would make rank 0 rank 1)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def decode_array(text: str) -> np.ndarray:
    data = base64.b64decode(text)
    array = _plain_npy(data)
    return array if array is not None else np.load(io.BytesIO(data), allow_pickle=False)


# the header np.save writes for a plain C-ordered array (format 1.0)
_NPY_HEADER = re.compile(rb"\{'descr': '([<>|=][a-zA-Z]\d*)', 'fortran_order': False, 'shape': \(([\d, ]*)\), \} *\n")


def _plain_npy(data: bytes) -> np.ndarray | None:
    """The array of an .npy file np.save wrote for a plain array, read without np.load's
    parse of its header (a Python literal evaluated: most of the coordinator's time on a
    case's outputs); None for anything else, which np.load reads."""
    if data[:8] != b"\x93NUMPY\x01\x00":
        return None
    end = 10 + int.from_bytes(data[8:10], "little")
    match = _NPY_HEADER.fullmatch(data[10:end])
    if match is None:
        return None
    shape = tuple(int(n) for n in match.group(2).split(b",") if n.strip())
    dtype = np.dtype(match.group(1).decode())
    if len(data) - end != dtype.itemsize * int(np.prod(shape, dtype=np.int64)):
        return None
    return np.frombuffer(data, dtype=dtype, offset=end).reshape(shape).copy()


# TVM 0.27 names an op in its errors by its whole repr (ir.Op(span=None, ty=...,
# name="relax.collapse_sum_to", description=..., arguments=(...), ..., support_level=10)),
# some 400 characters before what went wrong: a finding's message, cut shorter, kept the
# op's argument descriptions and lost TVM's words (bench24 relax-now 0046, 0047)
_OP_REPR = re.compile(r'\bir\.Op\(span=.*?name="([^"]+)".*?support_level=\d+\)', re.S)


def short_op_reprs(message: str) -> str:
    """`message` with each op's repr as its name: ``Op(relax.collapse_sum_to)``."""
    return _OP_REPR.sub(r"Op(\1)", message)


def error_reply(stage: str, exc: BaseException, diagnostics: list[str] | None = None) -> dict:
    """A failure as data. TVM's diagnostics (Relay's type errors), when there are any, lead
    the message: the exception itself only says to look at them. An op's repr is its name
    (short_op_reprs)."""
    message = short_op_reprs(str(exc))
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

# how many times a built program is run on one set of inputs, by the worker and by a
# finding's scripts: a kernel that reads memory it never wrote is right on a fresh process's
# zeroed pages and wrong on what an earlier run left. Relax's max_pool2d gradient with
# padding (bench27 seed 18) gave 1, 1, 3, 3, 7 in one process where 1 is right; its one-run
# script passed, and the finding was filed as unconfirmed
REPEAT_RUNS = 3
