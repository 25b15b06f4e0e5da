"""The cross-IR oracle (`--ir relay,relax`): one graph, two IRs, two TVMs.

Each case's graph is lowered to both IRs and run in both TVMs, each in workers under its
own interpreter. The first IR gets the whole configuration matrix (pass sequences, the
mutant, other executors); the second builds and runs its baseline. Each side's answer is
judged as a campaign of its IR would judge it, the second's by the CROSS_IR oracle (so its
findings are keyed apart, and are reduced and reproduced in its own TVM). Then the two
baselines are compared result by result, with the reference and with each other
(`core.oracle.compare_across`):

- a result that both TVMs compute alike and NumPy does not points at the reference or the
  spec first: the case files one spec disagreement instead of two TVM findings;
- otherwise each side's finding stands and says what the other TVM made of the program
  (`extra["cross_ir"]`, shown in its bug report).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable

from ..core.finding import Finding
from ..core.oracle import CrossMismatch, compare_across
from ..core.passes import load_catalog
from ..core.spec import load_specs
from ..dialects import DialectInfo, dialect_info
from ..protocol import decode_array
from .cases import Case, CaseMaker
from .judge import Judge
from .oracles import Oracle
from .outcome import Outcome, Status
from .sandbox import Death

if TYPE_CHECKING:
    from .settings import Settings


@dataclass
class CrossSide:
    """The second IR of a cross-IR campaign: how it makes its half of a case and judges it."""
    settings: "Settings"   # the campaign's, as that IR's own campaign would have them
    info: DialectInfo
    specs: object          # its spellings of the ops the campaign generates
    maker: CaseMaker
    judge: Judge

    def half(self, case: Case) -> Case:
        """The second IR's half of a case: the same graph, and so the same inputs and
        expected results (the inputs' stream is the case's); its own lowering plan, op
        calls and baseline configuration."""
        return self.maker.make_case(case.index, case.graph)


def open_cross_side(settings: "Settings", specs, tvm_version: Callable[[], str]) -> CrossSide:
    """The second IR's side; `specs` are the ops both IRs share (SpecSet.shared_with)."""
    info = dialect_info(settings.cross_dialect)
    own = replace(settings, dialect=info.name, tvm_python=settings.cross_python, tvm_env=settings.cross_env,
                  executors=[info.baseline], targets=settings.targets[:1], pass_fuzz=False, pass_seq=None,
                  pass_files=[], mutations=0, cross_dialect=None, cross_python=None, cross_env={})
    side_specs = load_specs(settings.spec_dir, dialect=info.name).restrict(specs.names())
    maker = CaseMaker(own, side_specs, info, load_catalog([], builtin=info.catalog), baseline_oracle=Oracle.CROSS_IR)
    judge = Judge(side_specs, {}, baseline=Oracle.CROSS_IR, label=lambda: ir_label(info.name, tvm_version()))
    return CrossSide(own, info, side_specs, maker, judge)


def ir_label(dialect: str, tvm_version: str | None) -> str:
    return f"{dialect.capitalize()} on TVM {tvm_version or '?'}"


def baseline_outputs(case: Case, answer) -> list | None:
    """The results a side's baseline computed, or None when it has none to compare."""
    if isinstance(answer, Death) or answer.get("status") != "ok" or not case.runnable:
        return None
    return [decode_array(a) for a in answer["outputs"]]


@dataclass
class CrossVerdict:
    """What comparing the two sides of a case found."""
    mismatches: list[CrossMismatch]   # results where the two are not both right
    suspect: Finding | None = None    # a result both compute alike against NumPy's

    def note(self, other: str, mine: str, theirs: str) -> str:
        """What the other IR (`other`, its side of each mismatch `theirs`) made of the first
        result this IR (its side `mine`) got wrong: "ours" and "theirs" for the first IR's
        finding, the other way round for the second's."""
        first = next((m for m in self.mismatches if getattr(m, mine) is not None), None)
        if first is None:
            return f"{other} agrees with the reference"
        said = getattr(first, theirs)
        return f"{other}: result {first.index} " + ("agrees with the reference" if said is None
                                                     else f"differs too: {said}")


def compare_sides(case: Case, answer, half_answer, labels: tuple[str, str]) -> CrossVerdict | None:
    """Both baselines' results against the reference and each other; None when either
    side has no results (a crash is each side's own finding)."""
    ours, theirs = baseline_outputs(case, answer), baseline_outputs(case.cross, half_answer)
    if ours is None or theirs is None or len(ours) != len(case.expected) or len(theirs) != len(case.expected):
        return None
    verdict = CrossVerdict(compare_across(case.expected, ours, theirs))
    suspect = next((m for m in verdict.mismatches if m.reference_suspect), None)
    if suspect is not None:
        verdict.suspect = _suspect_finding(case, suspect, labels)
    return verdict


def _suspect_finding(case: Case, m: CrossMismatch, labels: tuple[str, str]) -> Finding:
    results = case.graph.results()
    node = case.graph.nodes[results[m.index].node]
    where = f"{node.op}:{node.dtype}"
    return Finding(kind="spec-disagreement", oracle=Oracle.REFERENCE.value, stage="run",
                   signature=f"reference-suspect|{where}",
                   message=f"result {m.index} ({where}): {labels[0]} and {labels[1]} agree with each other, "
                           f"not with the NumPy reference ({m.ours}); the reference or the spec is the suspect",
                   detail=f"{labels[0]}: {m.ours}\n{labels[1]}: {m.theirs}", case=case.index,
                   extra={"config": case.configs[0]})


def settle(outcome: Outcome, half_outcome: Outcome, verdict: CrossVerdict | None,
           labels: tuple[str, str]) -> tuple[Outcome, Outcome]:
    """Each side's outcome once the other is known: a reference suspect replaces both
    sides' wrong results on the baseline; any other finding notes what the other TVM did."""
    if verdict is not None and verdict.suspect is not None:
        if _baseline_wrong_result(outcome, Oracle.REFERENCE):
            outcome = replace(outcome, finding=verdict.suspect)
        if _baseline_wrong_result(half_outcome, Oracle.CROSS_IR):
            half_outcome = replace(half_outcome, finding=None)
        return outcome, half_outcome
    _note(outcome.finding, verdict.note(labels[1], "ours", "theirs") if verdict
          else _status_note(labels[1], half_outcome))
    _note(half_outcome.finding, verdict.note(labels[0], "theirs", "ours") if verdict
          else _status_note(labels[0], outcome))
    return outcome, half_outcome


def _baseline_wrong_result(outcome: Outcome, oracle: Oracle) -> bool:
    f = outcome.finding
    return f is not None and f.kind == "wrong-result" and f.oracle == oracle


def _status_note(label: str, outcome: Outcome) -> str:
    if outcome.status is Status.ERROR:
        return f"{label} fails at {outcome.stage} too"
    if outcome.status in (Status.SIGNAL, Status.EXIT, Status.TIMEOUT, Status.OUT_OF_MEMORY):
        return f"{label}: its worker died too ({outcome.status.value})"
    return f"{label}: {outcome.status_text}"


def _note(finding: Finding | None, note: str):
    if finding is not None:
        finding.extra["cross_ir"] = note
