"""What a campaign counts of the cases it judged: `Counters` (saved in the checkpoint, so a
resumed campaign counts on) and the tables summary.json alone shows; `Tallies` counts one
judged case into them."""
from __future__ import annotations

from dataclasses import dataclass, field, fields

from ..core.plan import LoweringPlan
from ..core.targets import target_kind
from ..protocol import CHECK_ONLY
from .cases import Case
from .oracles import Oracle, oracle_of
from .outcome import Outcome, Status
from .timings import add_totals

# the statuses of a case whose baseline ran, or at least built
RAN = (Status.OK, Status.RAN, Status.MISMATCH)
BUILT = RAN + (Status.BUILT,)


@dataclass
class Counters:
    cases: int = 0
    valid: int = 0            # passed relax.analysis.well_formed
    built: int = 0
    ran: int = 0
    compared: int = 0         # ran, and at least one result was compared
    compared_fully: int = 0   # strict cases compared whose inputs left no result uncompared
    not_run: int = 0          # built only: every input draw may trap
    checked: int = 0          # check-only cases (--check-cases): well-formed, passes checked, never built
    out_of_memory: int = 0    # cases whose worker ran out of --max-memory (not findings)
    spec_disagreements: int = 0
    unconfirmed: int = 0
    findings_hits: int = 0
    tvm_s: float = 0.0
    gen_s: float = 0.0
    verify_s: float = 0.0
    reduce_s: float = 0.0
    finish_first_s: float = 0.0  # while fuzzing, seconds no case was handed out: findings were finished first (--time)
    elapsed_s: float = 0.0    # of earlier runs of this campaign (resumed)
    max_rss_kb: int = 0
    hirfuzz_bugs: int = 0
    skipped: dict = field(default_factory=dict)  # executor -> configurations it cannot take by design
    cross: dict = field(default_factory=dict)    # the second IR's statuses, and reference suspects
    domain_unmet: dict = field(default_factory=dict)  # op -> cases whose inputs could not keep it in its domain
    known: dict = field(default_factory=dict)    # signature -> hits of a finding --known names
    stage_s: dict = field(default_factory=dict)  # seconds per stage over all cases (campaign.timings)
    builds_saved: int = 0     # builds a worker reused instead of building again (worker.BuildCache)
    builds_saved_across_cases: int = 0  # of which an earlier case's
    builds_saved_reducing: int = 0  # by the reducer's trial runs (not in builds_saved)
    pass_checks: int = 0      # check-only pass sequences a worker ran (--pass-checks; protocol.CHECK_ONLY)
    pass_checks_s: float = 0.0  # the seconds the passes of those that passed took (a failure's are not timed)
    # cases whose finding came from a configuration after one failing with a finding already
    # held (outcome.Outcome.past_known): one a known bug would have hidden
    found_past_known: int = 0
    # target -> how far its baseline configuration got, case by case: "compared" (ran and
    # met the reference), "ran", "built" (not run: its inputs may trap), "error:<stage>"
    # (whatever the oracle made of it), "skipped"; what `--target llvm,cuda` asks of CUDA
    targets: dict = field(default_factory=dict)

    @staticmethod
    def restore(d: dict) -> "Counters":
        names = {f.name for f in fields(Counters)}
        return Counters(**{k: v for k, v in d.items() if k in names})


class Tallies:
    """The counters, and the tables of IR features, mutators and disruptive outcomes."""

    def __init__(self, counters: Counters):
        self.counters = counters
        self.disruptive: dict[str, dict[str, int]] = {}  # class -> stage -> count
        self.ir_features: dict[str, int] = {}
        self.mutators_used: dict[str, int] = {}
        self.mutants_built: dict[str, int] = {}  # mutator -> mutants through it whose plain build built
        # case -> mutators its mutant went through: the judge reads it (the mutation oracle)
        self.mutators_of: dict[int, list[str]] = {}

    def count_features(self, case: Case, answer: dict):
        """IR-feature coverage: which lowering features and mutators each case used (before
        the case is judged: the judge reads its mutators)."""
        if case.lowering.get("plan"):
            for name in LoweringPlan.from_json(case.lowering["plan"]).features_used():
                self.ir_features[name] = self.ir_features.get(name, 0) + 1
        self.mutators_of[case.index] = answer.get("mutators", [])
        for name in answer.get("mutators", []):
            self.mutators_used[name] = self.mutators_used.get(name, 0) + 1
        if any(config.get("module") == 1 and not config["passes"] and reply.get("status") == "ok"
               for config, reply in zip(case.configs[1:], answer.get("others", []))):
            for name in answer.get("mutators", []):
                self.mutants_built[name] = self.mutants_built.get(name, 0) + 1

    def count_judged(self, case: Case, answer, outcome: Outcome, timings: dict):
        """One judged case: its stage times, how far it got, what the workers spent on it."""
        self._count_timings(answer, timings)
        self.counters.cases += 1
        if isinstance(answer, dict):
            self._count_worker_figures(case, answer)
        if case.disruption is not None:
            table = self.disruptive.setdefault(outcome.status.value, {})
            table[outcome.stage] = table.get(outcome.stage, 0) + 1
        self._count_progress(outcome)
        self._count_input_search(case, outcome)
        self.counters.found_past_known += outcome.past_known

    def count_cross(self, half_answer, half_outcome: Outcome, reference_suspect: bool):
        """The second IR's half of a cross-IR case: its status, and its time in TVM."""
        tally = self.counters.cross
        tally[half_outcome.status_text] = tally.get(half_outcome.status_text, 0) + 1
        if reference_suspect:
            tally["reference-suspect"] = tally.get("reference-suspect", 0) + 1
        if isinstance(half_answer, dict):
            self.counters.tvm_s += tvm_seconds(half_answer)

    def _count_timings(self, answer, timings: dict):
        """Stage totals and builds saved, for summary.json."""
        c = self.counters
        add_totals(c.stage_s, timings)
        if isinstance(answer, dict):
            c.builds_saved += answer.get("builds_saved", 0)
            c.builds_saved_across_cases += sum(1 for r in [answer] + answer.get("others", [])
                                               if r.get("reused_build") == "cache")

    def _count_worker_figures(self, case: Case, answer: dict):
        """Time in TVM, memory, and the configurations an executor skipped by design."""
        c = self.counters
        c.tvm_s += tvm_seconds(answer)
        c.max_rss_kb = max(c.max_rss_kb, answer.get("rss_peak_kb", 0), answer.get("rss_kb", 0))
        for config, reply in zip(case.configs, [answer] + answer.get("others", [])):
            if reply.get("status") == "skipped" and reply.get("reason"):
                c.skipped[config["name"]] = c.skipped.get(config["name"], 0) + 1
            if config.get(CHECK_ONLY):  # no target's build: what a target got to is of built cases
                if config["passes"] and reply.get("status") in ("ok", "error"):
                    c.pass_checks += 1
                    c.pass_checks_s += (reply.get("stages") or {}).get("passes", 0.0)
                continue
            if config is case.configs[0] or oracle_of(config) is Oracle.TARGET:
                row = c.targets.setdefault(target_kind(config["target"]), {})
                got = target_progress(case, reply)
                row[got] = row.get(got, 0) + 1

    def _count_progress(self, outcome: Outcome):
        """How far the case got (disruptive cases count in none of these): a program that
        failed to build was well-formed, one that failed to run was built too."""
        c, status = self.counters, outcome.status
        failed_at = outcome.stage if status is Status.ERROR else None
        c.valid += status in BUILT or status is Status.CHECKED or failed_at in ("build", "run")
        c.checked += status is Status.CHECKED
        c.built += status in BUILT or failed_at == "run"
        c.ran += status in RAN
        c.compared += status in (Status.OK, Status.MISMATCH)
        c.not_run += status is Status.BUILT

    def _count_input_search(self, case: Case, outcome: Outcome):
        """What the input search achieved: strict cases compared with every result in its
        ops' domains, and the ops whose domain it could not keep (the generator's hint)."""
        c = self.counters
        if case.disruption is None:
            c.compared_fully += case.comparable and outcome.status in (Status.OK, Status.MISMATCH)
        if case.unmet_op:
            c.domain_unmet[case.unmet_op] = c.domain_unmet.get(case.unmet_op, 0) + 1


def target_progress(case: Case, reply: dict) -> str:
    """How far one target's configuration got with a case (Counters.targets)."""
    if reply.get("status") == "error":
        return f"error:{reply.get('stage')}"
    if reply.get("status") != "ok":
        return reply.get("status", "unknown")
    if not case.runnable:
        return "built"
    return "compared" if any(f.stable for f in case.expected) else "ran"


def tvm_seconds(answer: dict) -> float:
    """What a worker's answer spent in TVM, over all its configurations."""
    return sum(sum(r.get("timings", {}).values()) for r in [answer] + answer.get("others", []))
