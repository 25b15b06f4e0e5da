"""The Dialect interface: what a worker needs of an IR to fuzz it.

A dialect turns hirfuzz's plain-data cases into its TVM's IR and runs them. Every method
runs in a worker process, under the interpreter that holds that TVM, and may import it;
the coordinator only ever sees `DialectInfo` (dialects/info.py). Errors are raised as
they come: the worker turns each into data for the oracles, tagged with the stage
(protocol.STAGES) it happened in.

`ReproducerWriter` is the coordinator's side of a dialect: it writes a finding's scripts.
Which exception names are one failure (`FailureAlias`, `same_failure`) is TVM-free: the
reproducer checks in the coordinator compare a script's failure with a worker's by it.
"""
from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np


def installation_of(tvm, dialect: str) -> dict:
    """What a worker's handshake says of its TVM and machine: the version, the targets the
    TVM was built for, and the devices it sees: `cuda`, and for the first GPU its name and
    `cuda_target`, the target TVM is to build for it (its architecture and the limits dlight's
    schedules read), which configurations then name: no build depends on TVM detecting it."""
    built_with_cuda = bool(tvm.runtime.enabled("cuda"))
    cuda = built_with_cuda and bool(tvm.cuda(0).exist)
    devices = {"cuda": cuda}
    if cuda:
        gpu = tvm.cuda(0)
        devices["cuda_name"] = gpu.device_name
        devices["cuda_target"] = {"kind": "cuda", "arch": "sm_" + gpu.compute_version.replace(".", ""),
                                  "max_shared_memory_per_block": gpu.max_shared_memory_per_block,
                                  "max_num_threads": gpu.max_threads_per_block, "thread_warp_size": gpu.warp_size}
    return {"tvm": tvm.__version__, "dialects": [dialect],
            "targets": ["llvm"] + (["cuda"] if built_with_cuda else []), "devices": devices}


class Dialect(ABC):
    """What a worker does with a case. Which exception names are one failure is the
    coordinator's to know, TVM-free: the dialect's `DialectInfo.failure_aliases` (see
    `FailureAlias`)."""
    name: str

    @abstractmethod
    def describe_installation(self) -> dict:
        """The worker's handshake: {"tvm": version, "targets": [...], "devices": {...}}."""

    @abstractmethod
    def lower(self, request: dict):
        """The case's module: its graph lowered under its plan, with its violation if any.
        Each operator node's call is in `request["calls"]` (core.calls)."""

    @abstractmethod
    def check_well_formed(self, module) -> None:
        """Raise if the module is not well-formed IR."""

    @abstractmethod
    def mutate(self, module, seed: int, count: int, traits: dict, structural_only: bool = False):
        """(an equivalent, well-formed module, the mutators applied). `traits` maps each op
        name in the dialect to its traits (core.calls.op_traits): what a rewrite may assume
        of an op; an op not in it has none. `structural_only`: draw among the
        structure-building mutators alone (dialects.mutation)."""

    @abstractmethod
    def apply_passes(self, module, config: dict):
        """The module after the configuration's pass sequence."""

    @abstractmethod
    def build(self, module, config: dict):
        """An executable for the configuration's executor and target."""

    # the stage a failure to load a build is reported at (the stage loading always ran in,
    # so that findings keep their signatures)
    load_stage = "build"

    def load(self, built, config: dict):
        """What `run` takes, made from what `build` returned (a VM, a graph module): the
        step after compiling that a build reused by the worker's cache does again for each
        run. The build itself by default."""
        return built

    @abstractmethod
    def run(self, executable, config: dict, inputs: list[np.ndarray]) -> list[np.ndarray]:
        """The entry function's results on the inputs, flattened to arrays."""

    @abstractmethod
    def render(self, module) -> tuple[str, list[np.ndarray]]:
        """The module as text that parses back, and its tensor constants."""


    def lower_loss(self, request: dict, gradient: dict):
        """The case's graph as a program its autodiff takes: its float results summed to one
        scalar of the dtype `gradient[protocol.GRADIENT]` names (`gradient`: the gradient
        oracle's configuration, whose protocol.AUTODIFF, where set, says which autodiff). A
        dialect without autodiff cannot take it; nor can a graph with no float result or
        variable."""
        raise ExecutorCannotTake(f"the {self.name} dialect has no autodiff")

    def take_diagnostics(self) -> list[str]:
        """What TVM reported through its diagnostics since the last call (an error whose
        message says only "see the diagnostics" needs them); none by default."""
        return []


class ReproducerWriter(ABC):
    """What the coordinator needs of a dialect to write a finding's scripts (see
    dialects/reproducer.py for what they share): TVM-free, since reproducers are written in
    the coordinator. A dialect's `DialectInfo.reproducer` names the module whose `WRITER` is
    one; `DialectInfo.reproducer_writer()` loads it."""

    @abstractmethod
    def render_reproducer(self, graph, specs, finding, config: dict, inputs: list[np.ndarray], run: bool,
                          expected: list | None, tvm_version: str | None, violation_plan: dict | None = None,
                          module_script: dict | None = None) -> str:
        """check.py, hirfuzz's harness: a standalone script that exits 1 (an exception, a
        mismatch) or dies while the bug is present, and prints marks saying how far it got.
        `module_script` is the module's text as the worker rendered it (Dialect.render); the
        writer lowers `graph` itself where it is None."""

    def render_gradient(self, graph, specs, finding, config: dict, inputs: list[np.ndarray], run: bool,
                        expected: dict | None, tvm_version: str | None, module_script: dict | None = None) -> str:
        """repro.py of a gradient finding (the gradient oracle's): a harness with marks that
        differentiates the loss program, builds and runs it, and checks the loss and the
        gradients against `expected`; only a dialect with autodiff writes one. `module_script`:
        the worker's text of the loss program, for a dialect that does not write it itself.
        A dialect without autodiff (DialectInfo.gradients None) is never asked: the command line
        refuses --gradients for it, so no gradient configuration is made."""
        raise TypeError(f"{type(self).__name__}: a gradient finding of a dialect without autodiff "
                        "(DialectInfo.gradients is None), which no campaign makes")

    @abstractmethod
    def render_short(self, finding, config: dict, inputs: list[np.ndarray], run: bool, expected: list | None,
                     module_script: dict) -> str:
        """repro.py, the script a maintainer reads: the module's text, its inputs, the pass,
        build and run lines and the check; nothing of hirfuzz's."""

    @abstractmethod
    def render_violation_short(self, finding, config: dict, call, wrapped: bool) -> str:
        """repro.py for a disruptive finding: the violating call (reproducer.ViolatingCall)
        alone, in a function or closure too where `wrapped`."""


class ExecutorCannotTake(Exception):
    """The executor does not accept this kind of program by design (Relay's graph executor
    and closures): the configuration is skipped and counted, never reported."""


# the stage of a pass sequence's first pass whose output is not well-formed (protocol.STAGES)
ILL_FORMED_STAGE = "ill_formed_after_pass"


class IllFormedAfterPass(Exception):
    """A pass returned a module that is not well-formed. A dialect checks the module after
    each pass of a sequence, and the first pass whose output fails is blamed (stage
    ILL_FORMED_STAGE), not a later pass or the build that trips over what it left. `cause`
    is the well-formedness check's own error; a pass that raises is no such case."""

    def __init__(self, pass_name: str, cause: BaseException, inner_passes: list[str] | None = None):
        super().__init__(f"{pass_name} left an ill-formed module: {cause}")
        self.pass_name = pass_name
        self.cause = cause
        self.inner_passes = inner_passes or []  # innermost_failing: the pass within it to blame, last


# the passes the build in progress is running, outermost first, as a pass instrument sees them
# (build_pass_watcher): a pass that raises leaves itself, and those it runs within, here
BUILD_PASSES: list[str] = []


def build_pass_watcher():
    """A pass instrument for a build's PassContext that keeps BUILD_PASSES, so that a build
    that raises with no TVM frame to say where (TVM 0.19's checks print none) is keyed on the
    pass inside it that raised (worker._build: the reply's "failed_pass"), as a crash in a pass
    of the sequence is. Imports TVM: call it in a worker."""
    from tvm.ir.instrument import pass_instrument

    @pass_instrument
    class WatchBuildPasses:
        def enter_pass_ctx(self):
            BUILD_PASSES.clear()

        def run_before_pass(self, mod, info):
            BUILD_PASSES.append(info.name)

        def run_after_pass(self, mod, info):
            if BUILD_PASSES:
                BUILD_PASSES.pop()
    return WatchBuildPasses()


# the attribute of an exception a pass raised that names the passes within it that raise alike
INNER_PASSES = "hirfuzz_inner_passes"


def failure_key(exc: BaseException, ill_formed: bool) -> str:
    """What one failure of a pass is known by, whichever pass shows it: the well-formedness
    check's complaint, or the exception raised and its normalised message."""
    from ..core.finding import ill_formed_key, normalize_message
    if ill_formed:
        return f"ill-formed|{ill_formed_key(str(exc))}"
    return f"raised|{type(exc).__name__}|{normalize_message(str(exc))}"


def _failure_of(pass_, mod, run, check) -> tuple[str | None, object]:
    """The failure key of running `pass_` on `mod` (None where it runs to a well-formed
    module), and the module it returned."""
    try:
        out = run(mod, pass_)
    except Exception as exc:  # noqa: BLE001 - what the pass raised is what is compared
        return failure_key(exc, ill_formed=False), None
    try:
        check(out)
    except Exception as exc:  # noqa: BLE001 - the check's complaint is what is compared
        return failure_key(exc, ill_formed=True), out
    return None, out


def innermost_failing(pass_, mod, key: str, run, check, runs_inside: list | None = None) -> list[str]:
    """The passes within a pass that fails (key `key`: failure_key) on `mod` that fail alike
    when tried alone, outermost first: blame goes to the last. TVM runs passes inside
    others (Relax 0.27: ConvertToDataflow, RemoveUnusedOutputs and ExpandTupleArguments end
    with CanonicalizeBindings, FuseTIR starts with ExpandTupleArguments; such a wrapper is
    a Sequential, whose `passes` are its constituents). Each constituent runs, in order, on
    what the ones before it returned (`run(mod, pass)`; `check(mod)` raises where a module
    is ill-formed); the first that fails alike is descended into, one that fails otherwise
    ends the search. A pass may also run others inside itself that are no constituents
    (Relax's pattern-rewrite passes run CanonicalizeBindings: the catalog's
    `runs_inside_it`): those, `runs_inside`, are tried first, each alone on `mod`, and the
    first that fails alike is descended into. [] where none does, or the pass runs no others."""
    inner = _first_failing_alike(runs_inside or [], mod, key, run, check)
    if inner is not None:
        return [inner.info.name] + innermost_failing(inner, mod, key, run, check)
    path: list[str] = []
    while True:
        current = mod
        for sub in list(getattr(pass_, "passes", None) or []):
            found, after = _failure_of(sub, current, run, check)
            if found == key:
                path.append(sub.info.name)
                pass_, mod = sub, current
                break
            if found is not None:
                return path
            current = after
        else:
            return path


def _first_failing_alike(passes: list, mod, key: str, run, check):
    """The first of `passes` that, run alone on `mod`, fails alike (`key`); None if none does."""
    return next((p for p in passes if _failure_of(p, mod, run, check)[0] == key), None)


# --- which exception names are one failure --------------------------------------------------

@dataclass(frozen=True)
class FailureAlias:
    """A failure TVM reports under another exception name than the one a worker sees, for
    how it is reported rather than for what failed: one failure, two names (its family;
    Relay's is in dialects/relay/__init__.py).

    A worker's failure (`name`) is the same failure as a script's exception `raised` only
    where the script's output holds TVM's `report` of it, and what that report says of the
    failure (the pattern's one group: a line, as a signature keys any error on its first)
    is in the worker's message."""
    name: str
    raised: str
    report: re.Pattern

    def says(self, output: str, message: str) -> bool:
        """Does `output` hold this report of the failure `message` describes?"""
        found = self.report.search(output)
        said = _words(found.group(1)) if found else ""
        return bool(said) and said in _words(message)


def _words(text: str) -> str:
    return " ".join(text.split())


def same_failure(aliases: tuple[FailureAlias, ...], name: str, message: str, raised: str, output: str) -> bool:
    """Is the exception a script raised (`raised`, its output `output`) the failure a
    worker saw (exception `name`, described by `message`)? The same name, or an alias of it
    the dialect defines whose report the output holds."""
    if raised == name:
        return True
    return any(a.name == name and a.raised == raised and a.says(output, message) for a in aliases)
