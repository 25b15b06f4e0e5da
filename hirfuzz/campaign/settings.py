"""A campaign's settings: what the command line asked for (cli.py fills them), saved with the
campaign folder (outdir: some must match on resume) and read by every part of the campaign."""
from __future__ import annotations

from dataclasses import dataclass, field

from . import DEFAULT_FOLLOWUPS, DEFAULT_MUTATIONS, DEFAULT_OPS

DEFAULT_MAX_PASSES = 6  # the most passes a drawn sequence holds (core.passes.draw_sequence)


@dataclass(frozen=True)
class DialectDefaults:
    """What a campaign of one IR runs with unless told otherwise: each chosen by distinct
    findings an hour with tools/bench_settings.py on that IR (README.md has the tables)."""
    ops: int                        # operators per graph (--ops)
    mutations: int                  # mutators per case's mutant (--mutations; 0: none)
    executors: tuple[str, ...]      # executors besides the baseline (--executors)
    max_passes: int                 # passes a drawn sequence holds at most (--max-passes)
    # what finishing a finding may take (campaign.reduction_budget; None: no bound): its
    # reduction's worker trials (--reduce-trials) and seconds (--reduce-seconds), and, while
    # fuzzing, the reductions' trials per case answered before another one starts (--reduce-share)
    reduce_trials: int | None = None
    reduce_seconds: float | None = None
    reduce_share: float | None = None
    # extra pass sequences drawn per case that are only run and checked, never built
    # (--pass-checks; the pass-order oracle's check-only configurations)
    pass_checks: int = 0
    # cases made after each built case that are only lowered and passed through check-only
    # sequences, never built (--check-cases)
    check_cases: int = 0
    # operators per graph of a check-only case (--check-ops; None: --ops)
    check_ops: int | None = None
    # the share of cases drawn as gradient cases (--gradients; the gradient oracle's): 0 for
    # an IR whose TVM has no autodiff hirfuzz knows
    gradients: float = 0.0
    # the operators a gradient case draws at most (--gradient-ops): small programs keep the
    # differences cheap and a failure's reduction short
    gradient_ops: int = 8


DIALECT_DEFAULTS = {
    # 4 check-only sequences a case found 11 and 10 distinct root causes in 900 s where none
    # found 9 and 7 (two seeds side by side, README.md); 8 found no more than 4
    # 4 check-only cases after each built one: 21 real root causes against 15 in 20 minutes
    # side by side (seed 1, hand-counted; 14 shared), within --time (README.md)
    # 0.15 of cases gradient cases (the gradient oracle): 27 distinct root keys against 20 in
    # 600 s side by side (seed 3, --jobs 1), five of them gradient bugs, confirmed, no false alarm
    "relax": DialectDefaults(ops=DEFAULT_OPS, mutations=DEFAULT_MUTATIONS, executors=(),
                             max_passes=DEFAULT_MAX_PASSES, pass_checks=4, check_cases=4, gradients=0.15),
    # Relay (TVM 0.19, LLVM with assertions) builds a 40-operator graph for 20-40 s, twice a
    # case: on a loaded 2-core machine every such case ran past the 60-s limit. 10 and 5
    # operators found about as many root causes an hour, 10 the more kinds on two seeds
    # (README.md); a second executor (graph) and shorter sequences (3) found nothing more.
    # Its reductions are bounded and wait for fuzzing. 4 check-only cases after each built
    # one: 13 real root causes against 11 in 20 minutes side by side (seed 1, hand-counted).
    # 0.2 of cases gradient cases (FirstOrderGradient): 15 findings against 12 in 600 s side by
    # side (seed 5, --jobs 1; 213 cases against 416), every one confirmed; its 5 gradient
    # findings are real TVM 0.19 bugs (take_grad's negative axis, conv2d_grad's groups and
    # dilation, a float64-to-float16 cast on llvm), no false alarm (README.md)
    "relay": DialectDefaults(ops=10, mutations=DEFAULT_MUTATIONS, executors=(),
                             max_passes=DEFAULT_MAX_PASSES, reduce_trials=40, reduce_seconds=180.0,
                             reduce_share=0.25, check_cases=4, gradients=0.2),
}


def defaults_for(dialect: str) -> DialectDefaults:
    return DIALECT_DEFAULTS.get(dialect, DIALECT_DEFAULTS["relax"])


@dataclass
class Settings:
    mode: str = "strict"
    seed: int = 0
    iterations: int | None = None
    time_s: float | None = None
    ops: int = DEFAULT_OPS
    out: str = "hirfuzz-out"
    guided: bool = True
    only_ops: list[str] | None = None
    dtypes: list[str] | None = None
    timeout_s: float = 60.0
    max_memory_mb: int | None = 8192
    spec_dir: str | None = None
    verify: bool = True
    jobs: int | None = 1                   # workers per IR; with --ray a cap (None: the cluster's CPUs)
    makers: int = 0                        # case-maker processes (campaign.makers; 0: the coordinator draws)
    reduce: bool = True
    recycle_after: int | None = 500
    targets: list[str] = field(default_factory=lambda: ["llvm"])
    executors: list[str] = field(default_factory=lambda: ["vm"])
    pass_fuzz: bool = True                 # also build each case after a drawn pass sequence
    pass_seq: list[dict] | None = None     # a pinned sequence (--pass-seq), instead of drawing
    pass_files: list[str] = field(default_factory=list)
    pass_checks: int = 0                   # extra drawn sequences per case, passes checked, never built
    check_cases: int = 0                   # check-only cases after each built one (campaign.cases)
    check_ops: int | None = None           # operators per graph of a check-only case (None: ops)
    gradients: float = 0.0                 # share of cases that are gradient cases (oracles/gradient.py)
    gradient_ops: int = 8                  # operators a gradient case draws at most
    features: bool = True                  # lower with functions, closures and Relax features
    mutations: int = DEFAULT_MUTATIONS     # mutators applied to make each case's mutant (0: none)
    followups: int = DEFAULT_FOLLOWUPS     # follow-up mutant cases per interesting case (campaign.followups)
    max_passes: int = DEFAULT_MAX_PASSES   # passes a drawn sequence holds at most
    reduce_trials: int | None = None       # a finding's reduction: at most this many worker trials
    reduce_seconds: float | None = None    # ... and seconds (campaign.reduction_budget)
    reduce_share: float | None = None      # while fuzzing, reductions' trials per case answered
    dialect: str = "relax"                 # the IR fuzzed (--ir)
    tvm_python: str | None = None          # the interpreter holding the TVM under test (None: this one)
    tvm_env: dict = field(default_factory=dict)  # what it needs in its environment
    cross_dialect: str | None = None       # the cross-IR oracle's second IR (--ir relay,relax)
    cross_python: str | None = None        # the interpreter holding its TVM (None: this one)
    cross_env: dict = field(default_factory=dict)
    known: str | None = None               # --known: a signature list or an earlier campaign's folder
    # --versions: the TVMs (managed environments or interpreters) each confirmed finding's
    # repro.py is also run under, to date a regression; None: every set-up environment of the dialect
    versions: list[str] | None = None
    # --baseline: the TVM a pass developer's build started from (a managed environment or an
    # interpreter); a confirmed finding whose repro.py passes there is new in the build under test
    baseline: str | None = None
    ray: str | None = None                 # --ray: the cluster's address ("local": start one here)
    tvm_managed: str | None = None         # the managed environment --tvm-python names, made on each Ray node
    cross_managed: str | None = None       # likewise for the second IR
    direct: bool = True                    # steer generation to what the pinned passes' probe found
    avoid_found: bool = True               # stop generating what a confirmed finding fails on alone (campaign.avoidance)
