"""Spec conformance for any dialect, through the worker pipe.

`python -m hirfuzz conformance --ir relay` checks that the TVM under test agrees with each
op spec as that dialect spells it: for every op and every dtype its spelling lists, a few
one-operator graphs are generated here (specs, z3 and NumPy live in the coordinator), sent
to a worker under the dialect's interpreter, lowered (type inference included), built and
run on the requested executors, and their results compared with the spec's NumPy reference:
values, shapes and dtypes. A crash, a wrong result or a dead worker is a problem: the spec
claims something TVM does not do, or TVM has a bug the spec must keep the generator from.

`--target cuda` builds and runs every sample on llvm and on cuda alike, so a failure on cuda
alone is told from the spec's own: one the op spec records (`targets: cuda:`) is known, not a
problem; `--write-targets FILE` writes the unknown ones as such entries (tools/
merge_target_exclusions.py adds them to the specs). A wrong result on cuda is a problem and
listed apart: a finding, never an exclusion.

Relax has a faster in-process check as well (`dialects.relax.conformance`), which also
compares TVM's inferred types before building; this one serves every dialect, whatever
Python holds its TVM.
"""
from __future__ import annotations

import argparse
import datetime
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..core.calls import call_records
from ..core.finding import error_line
from ..core.generate import Rejected, single_op_graph
from ..core.inputs import choose_inputs
from ..core.oracle import TargetTolerance, compare_results
from ..core.targets import TARGET_KINDS, resolve_target, target_kind
from ..core.spec import ALL_DTYPES, DEFAULT_SPEC_DIR, load_specs
from ..dialects import dialect_info, dialect_names
from ..errors import HirfuzzError
from ..protocol import decode_array, encode_array, make_config
from .environment import tvm_interpreter
from .sandbox import Death, Pool, WorkerError
from .target_failures import (BASELINE_TARGET, Outcome, SampleResult, is_known, new_entries,
                              read_known_entries, target_specific_failures, write_entries, wrong_results)

CASE_TIMEOUT_S = 120.0


class NoDevice(HirfuzzError):
    """The target asked for has no device here, or the TVM under test was built without it."""


@dataclass
class OpResult:
    """What the samples of one op showed."""
    op: str
    dialect_op: str
    dtypes: list[str]
    samples: int = 0
    compared: int = 0
    problems: list[str] = field(default_factory=list)
    known: int = 0              # failures on the target that the op spec records
    results: list[SampleResult] = field(default_factory=list)   # every sample on every target

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass
class _Sample:
    op: str
    dtype: str
    index: int
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
                sample = _Sample(op, dtype, i, _describe(graph, op, dtype),
                                 [chosen.facts[r] for r in graph.results()], chosen.runnable, chosen.comparable)
                request = {"case": i, "graph": graph.to_json(), "calls": call_records(graph, specs),
                           "configs": configs, "run": chosen.runnable,
                           "inputs": [encode_array(chosen.values[n.id]) for n in graph.variables]}
                yield op, (sample, request)


def _label(config: dict, target_run: bool) -> str:
    # an llvm-only run names the executor alone, as it always has
    return f"{config['name']} on {target_kind(config['target'])}" if target_run else config["name"]


def outcomes(sample: _Sample, answer: dict, configs: list[dict], specs=None) -> list[tuple[SampleResult, list[str]]]:
    """What each configuration that answered showed, and its problem lines (none where it
    passed); a target's results within its tolerance (`specs`' target_tolerances)."""
    target_run = any(target_kind(c["target"]) != BASELINE_TARGET for c in configs)
    where = sample.description
    out = []
    for config, reply in zip(configs, [answer] + list(answer.get("others", []))):
        label = _label(config, target_run)
        base = dict(op=sample.op, dtype=sample.dtype, index=sample.index, target=target_kind(config["target"]),
                    description=where)
        if reply.get("status") == "skipped":
            continue
        if reply.get("status") == "error":
            said = error_line(reply["exc_type"], reply["message"])
            out.append((SampleResult(outcome=Outcome.FAILED, stage=reply["stage"], error=said, **base),
                        [f"{where} on {label}: {reply['stage']}: {said[:320]}"]))
            continue
        if not sample.runnable or not sample.comparable:
            out.append((SampleResult(outcome=Outcome.NOT_COMPARED, **base), []))
            continue
        outputs = [decode_array(a) for a in reply["outputs"]]
        wrong = [f"{where} on {label}: result {m.index}: {m.detail}"
                 for m in compare_results(sample.expected, outputs, target=TargetTolerance.of(specs, config["target"]))]
        outcome = Outcome.WRONG if wrong else Outcome.PASSED
        out.append((SampleResult(outcome=outcome, error="; ".join(wrong), **base), wrong))
    return out


def judge(sample: _Sample, answer, configs: list[dict], dialect: str = "relax",
          known=None, specs=None) -> tuple[list[str], int, int, list[SampleResult]]:
    """Problems one answer shows, how many results were compared with the reference, how many
    failures on the target the specs know (`known`: read_known_entries), and each result."""
    if isinstance(answer, Death):
        return [f"{sample.description}: the worker died ({answer.describe()})"], 0, 0, []
    shown = outcomes(sample, answer, configs, specs)
    results = [r for r, _ in shown]
    specific = {id(r) for r in target_specific_failures(results, target=_the_target(configs))}
    problems, compared, known_count = [], 0, 0
    for result, lines in shown:
        compared += result.outcome in (Outcome.PASSED, Outcome.WRONG)
        if id(result) in specific and is_known(known or {}, result, dialect):
            known_count += 1
            continue
        problems += lines
    return problems, compared, known_count, results


def _the_target(configs: list[dict]) -> str:
    kinds = [target_kind(c["target"]) for c in configs]
    return next((k for k in kinds if k != BASELINE_TARGET), BASELINE_TARGET)


def require_device(installation: dict, target: str, python: str | None) -> None:
    """Raise NoDevice unless the workers' TVM offers `target` and sees its device (the
    handshake's `targets` and `devices`). Without a driver TVM reports cuda as not enabled even
    where its build has it, so the two causes are named together."""
    if target == BASELINE_TARGET:
        return
    if target in installation.get("targets", []) and installation.get("devices", {}).get(target):
        return
    name = target.upper()
    raise NoDevice(f"no {name} device on this machine (or the TVM under {python or sys.executable} "
                   f"was built without {name}): nothing checked")


def make_configs(dialect: str, executors: list[str] | None, target) -> list[dict]:
    """Each executor on llvm; on `target` too where it is not llvm (llvm tells its failures apart)."""
    executors = executors or [dialect_info(dialect).baseline]
    targets = [BASELINE_TARGET] + ([target] if target_kind(target) != BASELINE_TARGET else [])
    return [make_config(e, t, dialect=dialect) for t in targets for e in executors]


def check(specs, dialect: str, ops: list[str], samples: int = 3, seed: int = 0,
          executors: list[str] | None = None, python: str | None = None, extra_env: dict | None = None,
          jobs: int = 1, log_dir: Path | None = None, progress=None, target: str = BASELINE_TARGET,
          known=None, installation: dict | None = None) -> list[OpResult]:
    """Check `ops` (their `dialect` spelling) on workers under `python`; one result per op.
    Failures on `target` alone that `known` (read_known_entries) records are not problems.
    `installation`, where given, is filled with the workers' handshake."""
    results = {op: OpResult(op, specs.ops[op].dialect_op, list(specs.ops[op].dtypes)) for op in ops}
    log_dir = Path(log_dir or tempfile.mkdtemp(prefix="hirfuzz-conformance-"))
    # no memory bound: single-op samples are small (a campaign bounds resident memory, sandbox.Worker)
    pool = Pool(jobs, log_dir, None, None, python, extra_env, dialect)
    pool.start()
    try:
        if installation is not None:
            installation.update(pool.installation)
        require_device(pool.installation, target, python)
        # a GPU named with the architecture the workers see (core.targets.resolve_target)
        configs = make_configs(dialect, executors, resolve_target(target, pool.installation))
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
                problems, compared, known_count, sample_results = judge(sample, answer, configs, dialect, known, specs)
                result.samples += 1
                result.compared += compared
                result.problems += problems
                result.known += known_count
                result.results += sample_results
                if progress:
                    progress(sample)
    finally:
        pool.close()
    return [results[op] for op in ops]


def format_table(results: list[OpResult], target: str = BASELINE_TARGET) -> str:
    width = max([len(r.op) for r in results] + [2])
    lines = [f"{'op':<{width}}  {'samples':>7}  {'compared':>8}  problems  dtypes"]
    for r in results:
        lines.append(f"{r.op:<{width}}  {r.samples:>7}  {r.compared:>8}  {len(r.problems):>8}  {','.join(r.dtypes)}")
    bad = [p for r in results for p in r.problems]
    ok = sum(r.ok for r in results)
    summary = f"{ok} of {len(results)} ops conform; {len(bad)} problems"
    if target != BASELINE_TARGET:
        summary += f" ({sum(r.known for r in results)} failures on {target} known to the specs)"
    return "\n".join(lines + [summary] + bad + _target_sections(results, target))


def _target_sections(results: list[OpResult], target: str) -> list[str]:
    """On a target other than llvm: its wrong results, listed apart (findings, not exclusions)."""
    if target == BASELINE_TARGET:
        return []
    wrong = [w for r in results for w in wrong_results(r.results, target)]
    if not wrong:
        return []
    return [f"wrong results on {target} (findings to report, not exclusions): {len(wrong)}"] + \
        [f"  {w.error}" for w in wrong]


def measured_note(target: str, installation: dict) -> str:
    """Where a run measured what it writes: "conformance --target cuda on <device>, TVM <version>, <date>"."""
    devices = installation.get("devices", {})
    device = devices.get(f"{target}_name") or f"a {target} device"
    return (f"conformance --target {target} on {device}, TVM {installation.get('tvm', '?')}, "
            f"{datetime.date.today().isoformat()}")


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
    p.add_argument("--target", default=BASELINE_TARGET,
                   help="llvm (default) or cuda: cuda builds and runs every case on llvm as well, so a "
                        "failure on cuda alone is told apart; one the op spec records (targets: cuda:) "
                        "is known, not a problem")
    p.add_argument("--write-targets", metavar="FILE", default=None,
                   help="with --target cuda: write the failures on cuda alone that the specs do not record, "
                        "as op spec `targets:` entries (YAML, op -> target -> entries); "
                        "tools/merge_target_exclusions.py adds them to opspecs/")
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
        if args.target not in TARGET_KINDS:
            raise HirfuzzError(f"--target {args.target}: unknown target; use {' or '.join(TARGET_KINDS)}")
        if args.write_targets and args.target == BASELINE_TARGET:
            raise HirfuzzError("--write-targets: needs --target cuda (llvm is the baseline the target is told from)")
        known = read_known_entries(args.spec_dir or DEFAULT_SPEC_DIR)
        python, env, _ = tvm_interpreter(args.tvm_python or info.environment)
        total = sum(len(specs.ops[o].dtypes) for o in ops) * args.samples
        seen = [0]

        def progress(sample):
            seen[0] += 1
            if sys.stderr.isatty():
                print(f"\r{seen[0]}/{total} {sample.op} [{sample.dtype}]".ljust(60), end="", file=sys.stderr)
        installation: dict = {}
        results = check(specs, args.dialect, ops, args.samples, args.seed, executors, python, env,
                        args.jobs, progress=progress, target=args.target, known=known,
                        installation=installation)
    except NoDevice as exc:
        print(f"hirfuzz conformance: {exc}", file=sys.stderr)
        return 2
    except (HirfuzzError, WorkerError) as exc:
        print(f"hirfuzz conformance: error: {exc}", file=sys.stderr)
        return 2
    if sys.stderr.isatty():
        print(file=sys.stderr)
    print(format_table(results, args.target))
    if args.write_targets:
        failures = [f for r in results for f in target_specific_failures(r.results, args.target)]
        entries = new_entries(failures, known, args.dialect, measured_note(args.target, installation))
        write_entries(args.write_targets, entries,
                      f"failures on {args.target} alone (llvm builds and runs the same samples), not yet in the "
                      f"op specs;\nwritten by: python -m hirfuzz conformance --ir {args.dialect} --target {args.target}; "
                      f"merge with tools/merge_target_exclusions.py")
        print(f"{sum(len(es) for t in entries.values() for es in t.values())} new {args.target} entries "
              f"for {len(entries)} ops written to {args.write_targets}")
    return 0 if all(r.ok for r in results) else 1
