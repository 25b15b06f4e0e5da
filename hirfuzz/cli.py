"""`python -m hirfuzz`: the command line. Bad input gets one line and exit status 2."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from .campaign import DEFAULT_FOLLOWUPS
from .campaign.settings import defaults_for
from .campaign.raypool import LOCAL as LOCAL_RAY, import_ray
from .core.targets import TARGET_KINDS, target_kind
from .errors import HirfuzzError

EXIT_USAGE = 2


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _at_least_zero(text: str, convert, expected: str):
    """`text` read by `convert` (int or float), refused below 0 with what was `expected`."""
    try:
        value = convert(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected {expected}; got {text!r}")
    return value


def _count(text: str) -> int:
    """A whole number, 0 or more."""
    return _at_least_zero(text, int, "a whole number, 0 or more")


def _dialects(text: str) -> list[str]:
    from .core.spec import DIALECTS
    names = _names(text)
    unknown = [n for n in names if n not in DIALECTS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown IR {', '.join(unknown)}; known: {', '.join(DIALECTS)}")
    if len(names) > 2 or len(set(names)) != len(names):
        raise argparse.ArgumentTypeError("name one IR, or two different ones for the cross-IR oracle (relay,relax)")
    return names


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {text}")
    return value


def _names(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise argparse.ArgumentTypeError("expected a comma-separated list of names")
    return names


def _names_or_none(text: str) -> list[str]:
    return [] if text.strip() == "none" else _names(text)


def _per_ir(name: str) -> str:
    """A setting's default for each IR, as --help says it (settings.DIALECT_DEFAULTS)."""
    def said(value) -> str:
        if isinstance(value, tuple):
            return ",".join(value) or "none"
        return "none" if value is None else f"{value:g}"
    return f"default per IR: relax {said(getattr(defaults_for('relax'), name))}, " \
           f"relay {said(getattr(defaults_for('relay'), name))}"


def _share(text: str) -> float:
    value = _at_least_zero(text, float, "a share of cases, from 0 to 1")
    if value > 1:
        raise argparse.ArgumentTypeError(f"expected a share of cases, from 0 to 1; got {text!r}")
    return value


def _count_or_none(text: str) -> int | None:
    return None if text.strip() == "none" else _positive_int(text)


def _number_or_none(text: str) -> float | None:
    if text.strip() == "none":
        return None
    return _at_least_zero(text, float, "a number, at least 0, or none")


UNSET = object()  # a flag not given: the IR's default (settings.defaults_for)


def _given(value, default):
    return default if value is UNSET else value


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m hirfuzz",
        description="Coverage-guided fuzzing of TVM's high-level IRs: Relax (apache-tvm 0.27) and Relay "
                    "(TVM 0.19), after HIRGen.")
    p.add_argument("--mode", choices=["strict", "disruptive"], default="strict",
                   help="strict: every graph valid (default); disruptive: break constraints on purpose")
    p.add_argument("--ir", type=_dialects, default=["relax"], dest="dialects", metavar="IR[,IR]",
                   help="the IR to fuzz: relax (default, the TVM beside hirfuzz), relay (TVM 0.19, in the "
                        "environment `python -m hirfuzz setup relay` makes), or relay,relax: the cross-IR "
                        "oracle, each graph lowered to both and run in both TVMs, compared with each other "
                        "and the reference (the first IR gets the pass sequences, mutants and --executors)")
    p.add_argument("--seed", type=int, default=0, help="random seed; same seed and settings give the same graphs")
    p.add_argument("--iterations", type=_positive_int, metavar="N", help="stop after N cases")
    p.add_argument("--time", type=_positive_float, metavar="SECONDS", dest="time_s",
                   help="stop after this many seconds (without --iterations or --time: run until Ctrl-C)")
    p.add_argument("--ops", type=_positive_int, metavar="N",
                   help=f"operators per graph ({_per_ir('ops')}: the most distinct findings an hour, measured "
                        "with tools/bench_settings.py)")
    p.add_argument("--out", default="hirfuzz-out", metavar="DIR", help="output folder (default ./hirfuzz-out)")
    p.add_argument("--target", default="llvm", metavar="T,T",
                   help="targets: llvm (default), cuda, or both; the first is the baseline")
    p.add_argument("--executors", type=_names_or_none, metavar="E,E",
                   help="executors besides the baseline: Relax compiled, unoptimised, fused; Relay build, graph, "
                        f"debug, or none ({_per_ir('executors')})")
    p.add_argument("--passes", action="append", default=[], metavar="FILE",
                   help="a pass catalog of your own (YAML, in the form of the top-level passes.yaml: a section "
                        "per dialect, or one 'passes' list) added to the built-in one")
    p.add_argument("--pass-seq", metavar="A,B,C", help="pin this pass sequence instead of drawing one per case")
    p.add_argument("--no-pass-fuzz", action="store_true", help="do not build cases after a drawn pass sequence")
    p.add_argument("--no-direct", action="store_true",
                   help="with --pass-seq: probe the passes, but do not steer generation to what they act on")
    p.add_argument("--no-features", action="store_true",
                   help="lower graphs plainly: no functions, closures or other Relax features")
    p.add_argument("--mutations", type=int, metavar="N",
                   help="mutators applied to make each case's equivalent mutant, the mutation oracle "
                        f"({_per_ir('mutations')}; 0: no mutant, which found more distinct findings an hour)")
    p.add_argument("--followup-mutants", type=int, default=DEFAULT_FOLLOWUPS, metavar="N",
                   help="follow-up cases made from each interesting case (new coverage, a finding, a near miss): "
                        "N rewrites of it by the structure-building mutators, run through its pass sequence on "
                        f"its own inputs and reference (default {DEFAULT_FOLLOWUPS}: none)")
    p.add_argument("--pass-checks", type=_count, default=UNSET, metavar="N",
                   help="extra pass sequences drawn per case that are only run, each pass's output checked for "
                        "well-formedness, and never built: a pass that raises or leaves an ill-formed module is "
                        f"found at a hundredth of a build's cost ({_per_ir('pass_checks')})")
    p.add_argument("--check-cases", type=_count, default=UNSET, metavar="K",
                   help="after each built case, K cases whose graphs are only lowered and run through their "
                        "pass sequences, each output checked, never built: about a twentieth of a built case's "
                        f"time ({_per_ir('check_cases')})")
    p.add_argument("--check-ops", type=_positive_int, metavar="N",
                   help="operators per graph of a check-only case (--check-cases): a pass that raises or "
                        "leaves an ill-formed module mostly needs few, a build fault of several operators "
                        f"needs many ({_per_ir('check_ops')}; none: --ops)")
    p.add_argument("--gradients", type=_share, default=UNSET, metavar="SHARE",
                   help="the share of cases drawn as gradient cases: a graph of the ops the IR's autodiff "
                        "differentiates, its float results summed to a loss, differentiated, built and run, each "
                        "gradient compared with finite differences of the NumPy reference (the gradient oracle: "
                        f"Relax's Gradient, Relay's FirstOrderGradient; 0: none; {_per_ir('gradients')})")
    p.add_argument("--gradient-ops", type=_positive_int, metavar="N",
                   help=f"operators a gradient case's graph draws at most ({_per_ir('gradient_ops')})")
    p.add_argument("--max-passes", type=_positive_int, metavar="N",
                   help=f"passes a drawn pass sequence holds at most ({_per_ir('max_passes')})")
    p.add_argument("--no-coverage", action="store_true",
                   help="disable coverage guidance (HIRGen's random baseline)")
    p.add_argument("--only-ops", type=_names, metavar="OP,OP", help="generate only these ops")
    p.add_argument("--dtypes", type=_names, metavar="DT,DT", help="generate only these data types")
    p.add_argument("--timeout", type=_positive_float, default=60.0, metavar="SECONDS",
                   help="time limit per case before the worker counts as hung (default 60)")
    p.add_argument("--max-memory", type=_positive_int, default=8192, metavar="MB",
                   help="bound on each worker's resident memory: a worker past it is killed, its case "
                        "counted as out of memory, not a finding (default 8192)")
    p.add_argument("--jobs", type=_positive_int, metavar="N",
                   help="parallel workers (default: the number of cores; with --ray, a cap on the workers "
                        "per IR, default: the cluster's CPUs)")
    p.add_argument("--makers", type=_count, metavar="N",
                   help="processes drawing cases ahead of the workers, so that the coordinator only "
                        "hands out and judges (0: the coordinator draws them; default: one per 4 workers, "
                        "at most 8). The same seed draws the same cases whatever N")
    p.add_argument("--ray", nargs="?", const=LOCAL_RAY, metavar="ADDRESS",
                   help="run the workers on a Ray cluster: ADDRESS as `ray start --head` prints it "
                        "(HOST:PORT), ray://HOST:PORT or auto; with no ADDRESS, start Ray on this machine. "
                        "Needs the ray extra: pip install 'hirfuzz[ray]'")
    p.add_argument("--recycle", type=_positive_int, default=500, metavar="N",
                   help="replace each worker after N cases, bounding what TVM leaks (default 500)")
    p.add_argument("--no-reduce", action="store_true", help="save findings as found, without reducing them")
    p.add_argument("--reduce-trials", type=_count_or_none, default=UNSET, metavar="N",
                   help="worker trials a finding's reduction may run; past them it is filed with the smallest "
                        "program found so far, and its finding.json says so "
                        f"({_per_ir('reduce_trials')}; none: no bound)")
    p.add_argument("--reduce-seconds", type=_number_or_none, default=UNSET, metavar="SECONDS",
                   help=f"likewise, seconds a finding's reduction may take ({_per_ir('reduce_seconds')})")
    p.add_argument("--reduce-share", type=_number_or_none, default=UNSET, metavar="F",
                   help="while fuzzing, a reduction starts only while the reductions' worker trials are fewer than F "
                        "per case answered (0: none starts); the others wait in pending/ until fuzzing ends "
                        f"({_per_ir('reduce_share')}; none: no bound)")
    p.add_argument("--specs", metavar="DIR",
                   help="op spec folder (default: the top-level opspecs/, shipped in the package)")
    p.add_argument("--no-verify", action="store_true",
                   help="do not re-run each new finding's reproducer before reporting it")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--known", metavar="FILE",
                   help="findings to count but not file again: a text file of signatures (one a line, # "
                        "comments) or an earlier campaign's --out folder; summary.json counts their hits "
                        "(known_hits), so a nightly campaign reports only what is new; a folder's confirmed "
                        "findings of one operator at one dtype are also avoided from the first case (see "
                        "--no-avoid-found)")
    p.add_argument("--no-avoid-found", action="store_true",
                   help="keep generating the op-dtypes confirmed findings fail on alone (by default generation "
                        "avoids each from the case after its finding is confirmed, so one bug does not stop "
                        "every later case that draws it; summary.json's avoided_constructs)")
    p.add_argument("--baseline", metavar="PYTHON|ENV",
                   help="the TVM your build started from (an interpreter or a managed environment): each "
                        "confirmed finding's repro.py also runs there, and those that pass there are new in "
                        "your build (finding.json's new_in_build; they head report.md and the summary)")
    p.add_argument("--versions", metavar="ENV,ENV|none", type=_names_or_none,
                   help="also run each confirmed finding's repro.py under these TVMs (managed environments or "
                        "interpreters), to date a regression (finding.json's versions and regression_since; "
                        "regressions head report.md); default: every set-up environment of the IR, such as "
                        "relax-0.25 and relax-0.26 (python -m hirfuzz setup relax-0.26); none: no other TVM")
    p.add_argument("--tvm-python", metavar="PYTHON",
                   help="run workers, reproducer checks and reductions under this Python interpreter, which "
                        "holds the TVM to fuzz (default: the managed relay environment for --ir relay, the one running hirfuzz for relax); nothing is installed there. "
                        "A managed environment's name (relay, relax; see `python -m hirfuzz envs`) names its "
                        "interpreter, run with the variables it needs; make it with `python -m hirfuzz setup NAME`")
    p.add_argument("--list-ops", action="store_true", help="print the op names, one a line, and exit")
    p.add_argument("--list-passes", action="store_true", help="print the pass catalog names, one a line, and exit")
    return p


def _cuda_present() -> bool:
    return os.path.exists("/dev/nvidiactl") or os.path.exists("/dev/nvidia0")


def _check_targets(text: str) -> list[str]:
    """Known targets; cuda without a GPU is skipped with one line (an error if nothing is left)."""
    targets = []
    for target in [t.strip() for t in text.split(",") if t.strip()]:
        kind = target_kind(target)
        if kind not in TARGET_KINDS:
            raise HirfuzzError(f"--target {target}: unknown target; use llvm, cuda or llvm,cuda")
        if kind == "cuda" and not _cuda_present():
            print("hirfuzz: no CUDA device found: skipping the cuda target", file=sys.stderr)
            continue
        targets.append(target)
    if not targets:
        raise HirfuzzError(f"--target {text}: no usable target on this machine; use --target llvm")
    return targets


def _check_cross(args):
    """What a cross-IR campaign cannot do, said before anything starts."""
    if args.mode == "disruptive":
        raise HirfuzzError("--ir relay,relax: disruptive mode breaks one IR's rules on purpose; "
                           "run it on one IR at a time")
    if args.tvm_python:
        raise HirfuzzError("--tvm-python names one interpreter, and --ir relay,relax runs two: each IR runs in "
                           "its own environment (relay: the one `python -m hirfuzz setup relay` made, relax: "
                           "the Python running hirfuzz)")


def run(argv=None) -> int:
    args = build_parser().parse_args(argv)
    args.dialect = args.dialects[0]
    cross = args.dialects[1] if len(args.dialects) == 2 else None
    if cross:
        _check_cross(args)
    from .core.spec import ALL_DTYPES, load_specs
    specs = load_specs(args.specs, dialect=args.dialect)
    if cross:
        specs = specs.shared_with(load_specs(args.specs, dialect=cross))
    if args.list_ops:
        print("\n".join(specs.names()))
        return 0
    from .core.passes import load_catalog, parse_sequence
    from .dialects import dialect_info
    info = dialect_info(args.dialect)
    catalog = load_catalog(args.passes, builtin=info.catalog)
    if args.list_passes:
        print("\n".join(catalog.names()))
        return 0
    pass_seq = parse_sequence(args.pass_seq, catalog) if args.pass_seq else None
    defaults = defaults_for(args.dialect)
    executors = info.executors
    chosen = list(defaults.executors) if args.executors is None else args.executors
    unknown = [e for e in chosen if e not in executors]
    if unknown:
        raise HirfuzzError(f"--executors: unknown executor(s) {', '.join(unknown)}; known: {', '.join(executors)}")
    if args.only_ops:
        unknown = [o for o in args.only_ops if o not in specs.ops]
        if unknown:
            raise HirfuzzError(f"--only-ops: unknown op(s) {', '.join(unknown)}; see --list-ops")
    if args.dtypes:
        unknown = [d for d in args.dtypes if d not in ALL_DTYPES]
        if unknown:
            raise HirfuzzError(f"--dtypes: unknown dtype(s) {', '.join(unknown)}; known: {', '.join(ALL_DTYPES)}")
        usable = [o for o in (args.only_ops or specs.names()) if set(specs.ops[o].dtypes) & set(args.dtypes)]
        if not usable:
            raise HirfuzzError("--dtypes: no selected op accepts any of these data types")
    gradients = _given(args.gradients, defaults.gradients)
    if gradients > 0 and info.gradients is None:
        raise HirfuzzError(f"--gradients: hirfuzz knows no autodiff of {args.dialect}'s TVM "
                           f"(Relax and Relay have one); give --gradients 0 or leave it out")
    targets = _check_targets(args.target)
    if args.ray is not None:
        import_ray()  # a missing extra is said now, before anything starts
    from .campaign.environment import tvm_interpreter
    tvm_python, tvm_env, tvm_managed = tvm_interpreter(args.tvm_python or info.environment, args.ray)
    cross_python, cross_env, cross_managed = (tvm_interpreter(dialect_info(cross).environment, args.ray)
                                              if cross else (None, {}, None))
    jobs = args.jobs or (None if args.ray is not None else os.cpu_count() or 1)

    from .campaign.coordinator import Campaign, Settings, format_summary, stop_note, unjudged_note
    from .campaign.makers import default_makers
    settings = Settings(mode=args.mode, seed=args.seed, iterations=args.iterations, time_s=args.time_s,
                        ops=args.ops or defaults.ops, out=args.out, targets=targets, guided=not args.no_coverage,
                        only_ops=args.only_ops, dtypes=args.dtypes, timeout_s=args.timeout,
                        max_memory_mb=args.max_memory, spec_dir=args.specs, verify=not args.no_verify,
                        jobs=jobs, makers=default_makers(jobs) if args.makers is None else args.makers,
                        reduce=not args.no_reduce, recycle_after=args.recycle,
                        executors=[info.baseline] + [e for e in chosen if e != info.baseline],
                        dialect=args.dialect, pass_fuzz=not args.no_pass_fuzz, pass_seq=pass_seq,
                        pass_files=[str(Path(f).resolve()) for f in args.passes],
                        pass_checks=_given(args.pass_checks, defaults.pass_checks),
                        check_cases=_given(args.check_cases, defaults.check_cases),
                        check_ops=args.check_ops or defaults.check_ops, gradients=gradients,
                        gradient_ops=args.gradient_ops or defaults.gradient_ops,
                        features=not args.no_features,
                        mutations=max(0, defaults.mutations if args.mutations is None else args.mutations),
                        followups=max(0, args.followup_mutants),
                        max_passes=args.max_passes or defaults.max_passes,
                        reduce_trials=_given(args.reduce_trials, defaults.reduce_trials),
                        reduce_seconds=_given(args.reduce_seconds, defaults.reduce_seconds),
                        reduce_share=_given(args.reduce_share, defaults.reduce_share),
                        tvm_python=tvm_python, tvm_env=tvm_env,
                        cross_dialect=cross, cross_python=cross_python, cross_env=cross_env,
                        known=str(Path(args.known).absolute()) if args.known else None,
                        versions=args.versions, baseline=args.baseline,
                        ray=args.ray, tvm_managed=tvm_managed, cross_managed=cross_managed,
                        direct=not args.no_direct, avoid_found=not args.no_avoid_found)
    campaign = Campaign(settings, specs, progress=not args.no_progress)
    data = campaign.run()
    print(format_summary(data, args.out))
    note = stop_note(campaign)
    if note:
        print(note)
    own_bug = unjudged_note(data)
    if own_bug:
        print(own_bug, file=sys.stderr)
        return 3
    return 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    from .campaign.conformance import conformance_command
    from .envs import envs_command, setup_command
    subcommands = {"setup": setup_command, "envs": envs_command, "conformance": conformance_command}
    # subcommands come first and are words, never flags: `--mode strict ...` still reaches run()
    command = subcommands.get(argv[0]) if argv else None
    try:
        return command(argv[1:]) if command else run(argv)
    except HirfuzzError as exc:
        print(f"hirfuzz: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
