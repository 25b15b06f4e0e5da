"""Spec conformance for any dialect, through the worker pipe.

`python -m hirfuzz conformance --ir relay` checks that the TVM under test agrees with each
op spec as that dialect spells it: for every op and every dtype its spelling lists, a few
one-operator graphs are generated here (specs, z3 and NumPy live in the coordinator), sent
to a worker under the dialect's interpreter, lowered (type inference included), built and
run on the requested executors, and their results compared with the spec's NumPy reference:
values, shapes and dtypes. A crash, a wrong result or a dead worker is a problem: the spec
claims something TVM does not do, or TVM has a bug the spec must keep the generator from.

Relax has a faster in-process check as well (`dialects.relax.conformance`), which also
compares TVM's inferred types before building; this one serves every dialect, whatever
Python holds its TVM.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..core.calls import call_records
from ..core.finding import error_line
from ..core.generate import Rejected, single_op_graph
from ..core.inputs import choose_inputs
from ..core.oracle import compare_results
from ..core.spec import ALL_DTYPES, load_specs
from ..dialects import dialect_info, dialect_names
from ..errors import HirfuzzError
from ..protocol import decode_array, encode_array, make_config
from .environment import tvm_interpreter
from .sandbox import Death, Pool, WorkerError

CASE_TIMEOUT_S = 120.0


@dataclass
class OpResult:
    """What the samples of one op showed."""
    op: str
    dialect_op: str
    dtypes: list[str]
    samples: int = 0
    compared: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass
class _Sample:
    op: str
    dtype: str
    description: str
    expected: list
    runnable: bool
    comparable: bool


def _describe(graph, op: str, dtype: str) -> str:
    node = graph.operators[0]
    types = []
    for item in node.inputs:
        refs = item if isinstance(item, list) else [item]
        types.append(",".join(f"{graph.type_of(r).dtype}{list(graph.type_of(r).shape)}" for r in refs))
    return f"{op}[{dtype}] attrs={node.attrs} inputs=({'; '.join(types)})"


def _rng(seed: int, op: str, dtype: str, i: int) -> np.random.Generator:
    # stable across runs and independent per (op, dtype, sample)
    key = sum(ord(c) * 31 ** k for k, c in enumerate(op)) % (2 ** 31)
    return np.random.default_rng([seed, key, ALL_DTYPES.index(dtype), i])


def make_samples(specs, ops: list[str], samples: int, seed: int, configs: list[dict]):
    """(sample, request) pairs, or a problem string where no graph can be generated."""
    for op in ops:
        spec = specs.ops[op]
        for dtype in spec.dtypes:
            for i in range(samples):
                rng = _rng(seed, op, dtype, i)
                try:
                    graph = single_op_graph(specs, op, dtype, rng)
                except Rejected as exc:
                    yield op, f"{op} [{dtype}] generate: {exc}"
                    break
                try:
                    chosen = choose_inputs(graph, specs, rng)
                except Exception as exc:  # the reference itself raised: the spec's bug
                    yield op, f"{op} [{dtype}] reference: {type(exc).__name__}: {exc}"
                    continue
                sample = _Sample(op, dtype, _describe(graph, op, dtype),
                                 [chosen.facts[r] for r in graph.results()], chosen.runnable, chosen.comparable)
                request = {"case": i, "graph": graph.to_json(), "calls": call_records(graph, specs),
                           "configs": configs, "run": chosen.runnable,
                           "inputs": [encode_array(chosen.values[n.id]) for n in graph.variables]}
                yield op, (sample, request)


def judge(sample: _Sample, answer, configs: list[dict]) -> tuple[list[str], int]:
    """Problems one answer shows, and how many results were compared with the reference."""
    where = sample.description
    if isinstance(answer, Death):
        return [f"{where}: the worker died ({answer.describe()})"], 0
    replies = [answer] + list(answer.get("others", []))
    problems, compared = [], 0
    for config, reply in zip(configs, replies):
        label = config["name"]
        if reply.get("status") == "skipped":
            continue
        if reply.get("status") == "error":
            said = error_line(reply["exc_type"], reply["message"])
            problems.append(f"{where} on {label}: {reply['stage']}: {said[:320]}")
            continue
        if not sample.runnable or not sample.comparable:
            continue
        outputs = [decode_array(a) for a in reply["outputs"]]
        compared += 1
        for m in compare_results(sample.expected, outputs):
            problems.append(f"{where} on {label}: result {m.index}: {m.detail}")
    return problems, compared


def check(specs, dialect: str, ops: list[str], samples: int = 3, seed: int = 0,
          executors: list[str] | None = None, python: str | None = None, extra_env: dict | None = None,
          jobs: int = 1, log_dir: Path | None = None, progress=None) -> list[OpResult]:
    """Check `ops` (their `dialect` spelling) on workers under `python`; one result per op."""
    info = dialect_info(dialect)
    configs = [make_config(e, "llvm", dialect=dialect) for e in (executors or [info.baseline])]
    results = {op: OpResult(op, specs.ops[op].dialect_op, list(specs.ops[op].dtypes)) for op in ops}
    log_dir = Path(log_dir or tempfile.mkdtemp(prefix="hirfuzz-conformance-"))
    pool = Pool(jobs, log_dir, None, None, python, extra_env, dialect)
    pool.start()
    try:
        pending = make_samples(specs, ops, samples, seed, configs)
        exhausted = False
        while True:
            for worker in pool.idle():
                item = None if exhausted else next(pending, None)
                while item is not None and isinstance(item[1], str):  # no case: a problem
                    results[item[0]].problems.append(item[1])
                    item = next(pending, None)
                if item is None:
                    exhausted = True
                    break
                worker.submit(item[1][0], item[1][1], CASE_TIMEOUT_S)
            done = pool.wait()
            if exhausted and not done and not pool.in_flight():
                break
            for _, sample, answer in done:
                result = results[sample.op]
                problems, compared = judge(sample, answer, configs)
                result.samples += 1
                result.compared += compared
                result.problems += problems
                if progress:
                    progress(sample)
    finally:
        pool.close()
    return [results[op] for op in ops]


def format_table(results: list[OpResult]) -> str:
    width = max([len(r.op) for r in results] + [2])
    lines = [f"{'op':<{width}}  {'samples':>7}  {'compared':>8}  problems  dtypes"]
    for r in results:
        lines.append(f"{r.op:<{width}}  {r.samples:>7}  {r.compared:>8}  {len(r.problems):>8}  {','.join(r.dtypes)}")
    bad = [p for r in results for p in r.problems]
    ok = sum(r.ok for r in results)
    lines.append(f"{ok} of {len(results)} ops conform; {len(bad)} problems")
    return "\n".join(lines + bad)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m hirfuzz conformance",
        description="Check the op specs against the TVM under test, one operator at a time: every dtype a "
                    "spec lists, a few sampled shapes and attributes, built and run on a worker and "
                    "compared with the NumPy reference. Exit status 1 if any op does not conform.")
    p.add_argument("--ir", dest="dialect", default="relax", choices=dialect_names())
    p.add_argument("--tvm-python", metavar="PATH|ENV", default=None,
                   help="the interpreter holding the TVM under test, or a managed environment's name "
                        "(default: relay's managed environment for --ir relay, this Python otherwise)")
    p.add_argument("--ops", default=None, help="comma-separated op names (default: every op the dialect has)")
    p.add_argument("--samples", type=int, default=3, help="cases per op and dtype (default 3)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--executors", default=None,
                   help="comma-separated executors to run each case on (default: the dialect's baseline)")
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--spec-dir", default=None,
                   help="op spec folder to check (default: the top-level opspecs/, shipped in the package)")
    return p


def conformance_command(argv) -> int:
    args = build_parser().parse_args(argv)
    try:
        specs = load_specs(args.spec_dir, dialect=args.dialect)
        ops = args.ops.split(",") if args.ops else specs.names()
        unknown = [o for o in ops if o not in specs.ops]
        if unknown:
            raise HirfuzzError(f"--ops: no {args.dialect} spelling for {', '.join(unknown)}")
        info = dialect_info(args.dialect)
        executors = args.executors.split(",") if args.executors else None
        bad = [e for e in executors or [] if e not in info.executors]
        if bad:
            raise HirfuzzError(f"--executors: {args.dialect} has no executor {', '.join(bad)} "
                               f"(known: {', '.join(info.executors)})")
        python, env, _ = tvm_interpreter(args.tvm_python or info.environment)
        total = sum(len(specs.ops[o].dtypes) for o in ops) * args.samples
        seen = [0]

        def progress(sample):
            seen[0] += 1
            if sys.stderr.isatty():
                print(f"\r{seen[0]}/{total} {sample.op} [{sample.dtype}]".ljust(60), end="", file=sys.stderr)
        results = check(specs, args.dialect, ops, args.samples, args.seed, executors, python, env,
                        args.jobs, progress=progress)
    except (HirfuzzError, WorkerError) as exc:
        print(f"hirfuzz conformance: error: {exc}", file=sys.stderr)
        return 2
    if sys.stderr.isatty():
        print(file=sys.stderr)
    print(format_table(results))
    return 0 if all(r.ok for r in results) else 1
