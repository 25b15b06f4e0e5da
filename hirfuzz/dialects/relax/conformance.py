"""Spec conformance: does TVM agree with an op spec, one operator at a time?

For one op and many sampled data types, shapes and attributes, a one-operator graph is
generated from the spec, lowered to Relax, checked for well-formedness, and TVM's inferred
output type (shape and dtype) is compared with the spec's output rule. The module is then
built for ``llvm``, run on the Relax VM with inputs drawn in the spec's value domains, and
the result compared with the spec's NumPy reference under the spec's tolerance (or for another
target: ``target_config("cuda")``).

Anything that goes wrong for a data type the spec lists is a *problem*: the spec claims
something TVM does not do (or TVM has a bug, which the spec must then keep the generator
away from). ``op_report`` also probes the data types the spec leaves out, to show whether
the spec's dtype list is exactly what TVM accepts. This module imports TVM.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from tvm import relax

from ...core.targets import resolve_target
from ...protocol import make_config
from .executors import build_module, run_module
from ...core.generate import Rejected, single_op_graph
from ...core.graph import Graph, TensorType
from ...core.inputs import choose_inputs
from ...core.calls import call_records
from .lower import lower_graph
from ...core.oracle import TargetTolerance, compare_tensor, judged_facts
from ...core.spec import ALL_DTYPES
from ...campaign.conformance import require_device

# Stages a sample goes through; a sample stops at the first one that fails.
STAGES = ("generate", "lower", "well_formed", "type", "build", "run", "reference", "compare")


@dataclass
class Sample:
    """What happened to one generated single-op case."""
    dtype: str
    stage: str                  # "ok", "incomparable", or the stage of STAGES that failed
    detail: str = ""
    case: str = ""              # op, dtype, attrs and input types, to reproduce it

    @property
    def accepted(self) -> bool:
        """TVM built and ran it (whatever the reference says)."""
        return self.stage in ("ok", "incomparable", "reference", "compare")

    def describe(self) -> str:
        return f"{self.case or self.dtype}: {self.stage}: {self.detail}"


def _short(exc: BaseException, limit: int = 300) -> str:
    """One line from an exception: TVM's messages carry long tracebacks."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    pick = next((ln for ln in reversed(lines) if "Error" in ln or "Check failed" in ln),
                lines[-1] if lines else "")
    text = f"{type(exc).__name__}: {pick}"
    return text if len(text) <= limit else text[:limit] + "..."


def _describe_case(graph: Graph) -> str:
    node = graph.operators[0]

    def t(ref):
        ty = graph.type_of(ref)
        kind = graph.nodes[ref.node].kind
        return f"{kind}:{ty.dtype}{list(ty.shape)}"
    ins = [[t(r) for r in item] if isinstance(item, list) else t(item) for item in node.inputs]
    return f"{node.op}[{node.dtype}] attrs={node.attrs} inputs={ins}"


def _tvm_types(ty) -> list[TensorType] | str:
    """The tensor types in a Relax type (a tensor or a tuple of tensors), or why not."""
    if isinstance(ty, relax.TupleType):
        out = []
        for f in ty.fields:
            got = _tvm_types(f)
            if isinstance(got, str):
                return got
            out.extend(got)
        return out
    if isinstance(ty, relax.TensorType):
        if ty.shape is None:
            return f"tensor of unknown shape ({ty})"
        try:
            dims = tuple(int(d) for d in ty.shape.values)
        except (TypeError, AttributeError, ValueError):
            return f"tensor of non-constant shape ({ty})"
        return [TensorType(dims, str(ty.dtype))]
    return f"not a tensor or tuple of tensors ({ty})"


def _fmt(types: list[TensorType]) -> str:
    return ", ".join(f"{t.dtype}{list(t.shape)}" for t in types)


def run_sample(specs, op_name: str, dtype: str, rng, config: dict | None = None,
               compare: bool = True) -> Sample:
    """Generate, lower, type-check, build, run and compare one single-op case."""
    config = config or make_config()
    try:
        graph = single_op_graph(specs, op_name, dtype, rng)
    except Rejected as exc:
        return Sample(dtype, "generate", str(exc), f"{op_name}[{dtype}]")
    case = _describe_case(graph)

    def fail(stage, detail):
        return Sample(dtype, stage, detail, case)

    try:
        mod = lower_graph(graph, call_records(graph, specs))
    except Exception as exc:  # TVM rejects the call (type inference or op constructor)
        return fail("lower", _short(exc))
    try:
        relax.analysis.well_formed(mod)
    except Exception as exc:
        return fail("well_formed", _short(exc))

    expected = [graph.type_of(r) for r in graph.results()]
    got = _tvm_types(mod["main"].ret_ty)
    if isinstance(got, str):
        return fail("type", f"TVM infers {got}; spec says {_fmt(expected)}")
    if got != expected:
        return fail("type", f"TVM infers {_fmt(got)}; spec says {_fmt(expected)}")

    try:
        executable = build_module(mod, config)
    except Exception as exc:
        return fail("build", _short(exc))
    try:
        inputs = choose_inputs(graph, specs, rng)
    except Exception as exc:  # the reference itself raised
        return fail("reference", _short(exc))
    if not getattr(inputs, "runnable", True):  # an input may trap (integer division by 0)
        return Sample(dtype, "incomparable", f"not run: {inputs.reason}", case)
    try:
        actual = run_module(executable, config, [inputs.values[n.id] for n in graph.variables])
    except Exception as exc:
        return fail("run", _short(exc))
    if not compare:
        return Sample(dtype, "ok", "", case)
    if not inputs.comparable:
        return Sample(dtype, "incomparable", inputs.reason, case)
    refs = graph.results()
    if len(actual) != len(refs):
        return fail("compare", f"main returned {len(actual)} tensors, expected {len(refs)}")
    judged = judged_facts([inputs.facts[r] for r in refs], None, TargetTolerance.of(specs, config["target"]))
    for i, (facts, arr) in enumerate(zip(judged, actual)):
        detail = compare_tensor(facts, arr)
        if detail is not None:
            return fail("compare", f"result {i}: {detail}")
    return Sample(dtype, "ok", "", case)


def _rng(seed: int, op_name: str, dtype: str, i: int) -> np.random.Generator:
    # stable across runs and independent per (op, dtype, sample)
    key = sum(ord(c) * 31 ** k for k, c in enumerate(op_name)) % (2 ** 31)
    return np.random.default_rng([seed, key, ALL_DTYPES.index(dtype), i])


def sample_op(specs, op_name: str, dtype: str, samples: int, seed: int = 0,
              config: dict | None = None, compare: bool = True) -> list[Sample]:
    return [run_sample(specs, op_name, dtype, _rng(seed, op_name, dtype, i), config, compare)
            for i in range(samples)]


MAX_INCOMPARABLE = 0.5   # more than this share of samples without a comparison is a problem


def problems_of(op_name: str, dtype: str, results: list[Sample]) -> list[str]:
    out = [f"{op_name} [{dtype}] {s.describe()}" for s in results
           if s.stage not in ("ok", "incomparable")]
    skipped = [s for s in results if s.stage == "incomparable"]
    if results and len(skipped) > MAX_INCOMPARABLE * len(results):
        out.append(f"{op_name} [{dtype}]: {len(skipped)} of {len(results)} samples had no input "
                   f"inside the domain (e.g. {skipped[0].detail}); its domain rules are too tight")
    return out


def check_op(specs, op_name: str, samples: int = 4, seed: int = 0,
             dtypes: list[str] | None = None, config: dict | None = None) -> list[str]:
    """Problems found checking `op_name` against TVM on `samples` cases per dtype (empty: ok).

    Every dtype the spec lists is tried (or those of `dtypes` it lists)."""
    if op_name not in specs.ops:
        return [f"{op_name}: no such op in the spec set"]
    spec = specs.ops[op_name]
    problems = []
    for dt in spec.dtypes:
        if dtypes is not None and dt not in dtypes:
            continue
        problems += problems_of(op_name, dt, sample_op(specs, op_name, dt, samples, seed, config))
    return problems


@dataclass
class OpReport:
    """One row of the conformance table."""
    op: str
    relax: str
    spec_dtypes: list[str]
    tried: list[str] = field(default_factory=list)       # dtypes sampled
    accepted: list[str] = field(default_factory=list)    # TVM built and ran every sample
    rejected: dict[str, str] = field(default_factory=dict)   # dtype -> first failure
    agreed: list[str] = field(default_factory=list)      # every compared result matched
    samples: int = 0
    compared: int = 0
    mismatches: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def missed(self) -> list[str]:
        """Dtypes TVM accepts that the spec leaves out (only when off-spec dtypes are probed)."""
        return [d for d in self.accepted if d not in self.spec_dtypes]

    @property
    def ok(self) -> bool:
        return not self.problems

    def row(self) -> dict:
        return {
            "op": self.op, "relax": self.relax, "spec_dtypes": list(self.spec_dtypes),
            "tried": list(self.tried), "accepted": list(self.accepted),
            "rejected": dict(self.rejected), "missed": self.missed, "agreed": list(self.agreed),
            "samples": self.samples, "compared": self.compared, "mismatches": self.mismatches,
            "problems": len(self.problems), "ok": self.ok,
        }


def op_report(specs, op_name: str, samples: int = 4, seed: int = 0, probe_all: bool = False,
              config: dict | None = None) -> OpReport:
    """Check one op; with `probe_all`, also try the dtypes its spec leaves out.

    Off-spec dtypes only show whether TVM accepts them (``missed``); they are never problems."""
    spec = specs.ops[op_name]
    rep = OpReport(op_name, spec.dialect_op, list(spec.dtypes))
    dtypes = list(ALL_DTYPES) if probe_all else list(spec.dtypes)
    for dt in dtypes:
        in_spec = dt in spec.dtypes
        results = sample_op(specs, op_name, dt, samples if in_spec else 1, seed, config,
                            compare=in_spec)
        rep.tried.append(dt)
        rep.samples += len(results)
        bad = [s for s in results if not s.accepted]
        if bad:
            rep.rejected[dt] = bad[0].describe()
        else:
            rep.accepted.append(dt)
        if in_spec:
            compared = [s for s in results if s.stage in ("ok", "compare")]
            rep.compared += len(compared)
            rep.mismatches += sum(s.stage == "compare" for s in compared)
            if compared and all(s.stage == "ok" for s in compared):
                rep.agreed.append(dt)
            rep.problems += problems_of(op_name, dt, results)
    return rep


def target_config(target: str = "llvm") -> dict:
    """The VM's configuration on `target` (llvm, cuda); raises campaign.conformance.NoDevice where
    this process's TVM cannot run there (what a worker's handshake would say)."""
    from .dialect import DIALECT
    installation = DIALECT.describe_installation()
    require_device(installation, target, None)
    return make_config("vm", resolve_target(target, installation))


def report_rows(specs, samples: int = 4, seed: int = 0, probe_all: bool = False,
                ops: list[str] | None = None, target: str = "llvm") -> list[dict]:
    """A row per op (see `OpReport.row`), for a tool to print."""
    config = target_config(target)
    return [op_report(specs, n, samples, seed, probe_all, config).row() for n in (ops or specs.names())]
