"""Follow-up mutants (`--followup-mutants N`): cases of their own, made from the cases that
were interesting, instead of a mutant glued onto every case (`--mutations`).

A case is interesting, once judged, for one of these reasons (`Reason`, in priority order):

- FINDING: one of its configurations other than the baseline failed (a crash, an
  ill-formed module, a wrong result: TVM's, new or a duplicate): the passes it drew are
  buggy near this program, and a rewrite may show them failing another way;
- NEAR_MISS: every configuration agreed with the reference, but one result's error was
  over NEAR_MISS_SHARE of what its tolerance allows (and the result is not exact);
- NEW_COVERAGE: generating it added coverage keys (core.coverage) no earlier graph had.

A case whose baseline failed (or that did not build at all) is never followed up: a
mutant's failure is TVM's only where the original is handled correctly. Neither is a
disruptive or cross-IR case.

Each interesting case gives N follow-ups. Follow-up j of case i is case
FOLLOWUP_INDEX + i * MAX_FOLLOWUPS + j: apart from the generated cases, whose indices (and
so graphs, inputs and plans) are the same with follow-ups on or off, and fixed by the seed
(its mutation seed is [seed, its index, Stream.MUTATION]). It reuses the original's graph,
lowering plan, inputs and NumPy reference (no generation, no input search, no reference;
made again after a resume or in a reduction, it draws from its original's input and
configuration streams: cases.streams_index), and draws FOLLOWUP_REWRITES rewrites among
the structure-building mutators alone (dialects.mutation). Its configurations are the
original's baseline, the original's pass sequence (where the original passed it), then
what the mutation oracle derives from those: the plain mutant and the mutant after that
sequence. The original's configurations come first so that, within the follow-up itself,
a mutant's failure is filed only where the original passed the same configuration
(oracles/mutation.py), and its finding is reduced, titled and reported like any other
mutant's.

The original's configurations are not run again: the same program, inputs and
configuration gave those replies once, and they passed. The follow-up carries them
(`Case.given`: the status and outputs of each reply that was "ok"), its worker request
names them (`worker_request`: protocol.GIVEN_CONFIGS) and the worker answers each without
building it; before the answer is judged, `put_back_given` puts the original's replies back,
so the judge and the mutation oracle see what running everything would have shown. Only
the campaign's own request carries the marks: a finding's reduction, its replays and its
reproducers make their cases anew (no `given`) and run every configuration, and a
checkpoint keeps a follow-up's configurations without them (resumed, it runs them all).

Follow-ups wait in a queue, best reason first (ties: more new coverage, then earlier), and
are handed out before new cases while they are at most MAX_SHARE of the cases run; the
queue keeps the MAX_WAITING best.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, replace
from enum import IntEnum
from typing import TYPE_CHECKING

from ..core.oracle import Approximation, TargetTolerance, compare_tensor, judged_facts
from ..protocol import CHECK_ONLY, GIVEN_CONFIGS, GIVEN_STATUS, decode_array
from .cases import Case, Stream
from .oracles import ORACLE_FIELD, ORACLES, Oracle
from .outcome import Outcome, Status

if TYPE_CHECKING:
    from .cases import CaseMaker

FOLLOWUP_INDEX = 2 * 10**9      # follow-up case indices start here (the pass probe's: 10**9)
MAX_FOLLOWUPS = 16              # follow-ups per case at most (--followup-mutants is capped to it)
FOLLOWUP_REWRITES = 2           # structure-building rewrites per follow-up mutant
NEAR_MISS_SHARE = 0.5           # a result off by over this share of its tolerance is a near miss
MAX_SHARE = 0.5                 # follow-ups handed out while at most this share of the cases run
MAX_WAITING = 64                # follow-ups kept waiting, the best first
# a case's status is its baseline's (judge.py): these say it built (and ran, where it could)
BASELINE_PASSED = (Status.OK, Status.RAN, Status.BUILT)
# what a follow-up keeps of a reply of its original's: all the judge reads of a passing one
TRUSTED_KEYS = ("status", "outputs")


class Reason(IntEnum):
    """Why a case is followed up; lower is better (handed out first)."""
    FINDING = 0
    NEAR_MISS = 1
    NEW_COVERAGE = 2


@dataclass(frozen=True)
class Original:
    """What a follow-up is made from: the case, the configurations it passed and its replies
    to them."""
    case: Case
    passed: list[dict]  # the original's configurations that passed, the baseline first
    verdicts: list[dict | None]  # per passed configuration: its reply's TRUSTED_KEYS, None if not "ok"
    reason: Reason


def is_followup(index: int) -> bool:
    return index >= FOLLOWUP_INDEX


def trusted(reply: dict) -> dict | None:
    """What a follow-up keeps of its original's reply to a configuration it passed: the
    reply's TRUSTED_KEYS where it built and ran ("ok"); None otherwise (run it again)."""
    if reply.get("status") != "ok":
        return None
    return {key: reply[key] for key in TRUSTED_KEYS if key in reply}


def worker_request(case: Case) -> dict:
    """What the campaign sends a worker for the case: its request, naming, for a follow-up,
    the configurations whose replies it is given (its original's), which the worker skips.
    Nothing else (a reduction's trial, a replay) sends these marks."""
    if not case.given:
        return case.request
    return {**case.request, GIVEN_CONFIGS: sorted(case.given)}


def saved_configs(case: Case) -> dict:
    """What a checkpoint keeps of a case's configurations: a follow-up's, which are not the
    ones its original's streams draw (it keeps only what the original passed); none of a
    generated case's, drawn again from its index. Its given replies are not kept: resumed,
    it runs every configuration."""
    return {"configs": case.configs} if is_followup(case.index) else {}


def put_back_given(case: Case, answer):
    """The answer as running every configuration would give it: each reply the worker
    marked given is the original's again (its status and outputs; no timings, the worker
    spent none), marked "given". Anything else is left as it is (a dead worker, a failure
    before the configurations)."""
    if not case.given or not isinstance(answer, dict):
        return answer
    replies = [answer, *answer.get("others", [])]
    for position, verdict in case.given.items():
        if position < len(replies) and replies[position].get("status") == GIVEN_STATUS:
            replies[position].update(verdict, given=True)
    return answer


class FollowUps:
    """The follow-up mutants a campaign makes and hands out (see the module's docstring)."""

    def __init__(self, maker: "CaseMaker"):
        self.maker = maker
        self.per_case = min(max(0, maker.s.followups), MAX_FOLLOWUPS)
        self.enabled = (self.per_case > 0 and maker.info.mutators and maker.s.mode != "disruptive"
                        and maker.s.cross_dialect is None)
        self.waiting: list[tuple] = []  # heap of (reason, -new coverage, original index, j, case)
        self.made: dict[str, int] = {reason.name.lower(): 0 for reason in Reason}  # follow-ups made, by reason
        self.handed_out = 0
        self.run_total = 0  # cases handed out, follow-ups included (for MAX_SHARE)

    def consider(self, case: Case, answer, outcome: Outcome):
        """A judged case: if it is interesting, queue its follow-ups."""
        if not self.enabled or is_followup(case.index) or not isinstance(answer, dict):
            return
        original = self.interesting(case, answer, outcome)
        if original is None:
            return
        self.made[original.reason.name.lower()] += self.per_case
        for j in range(self.per_case):
            item = (int(original.reason), -case.new_coverage, case.index, j, self.followup(original, j))
            heapq.heappush(self.waiting, item)
        if len(self.waiting) > MAX_WAITING:
            self.waiting = heapq.nsmallest(MAX_WAITING, self.waiting)
            heapq.heapify(self.waiting)

    def interesting(self, case: Case, answer: dict, outcome: Outcome) -> Original | None:
        """Why the case is followed up, and which of its configurations it passed; None if
        it is not, or cannot be (its baseline failed)."""
        if case.disruption is not None or case.cross is not None or outcome.status not in BASELINE_PASSED:
            return None
        finding = outcome.finding
        if finding is not None and finding.kind not in ("crash", "wrong-result", "hang"):
            return None  # a spec's or hirfuzz's own: says nothing of TVM's passes
        failing = (finding.extra or {}).get("config") if finding is not None else None
        if failing is not None and failing == case.configs[0]:
            return None  # the baseline itself failed
        passed = []
        for config in case.configs:
            if failing is not None and config == failing:
                break
            passed.append(config)
        replies = [answer, *answer.get("others", [])]
        verdicts = [trusted(replies[i]) if i < len(replies) else None for i in range(len(passed))]
        if finding is not None:
            return Original(case, passed, verdicts, Reason.FINDING)
        if self.near_miss(case, answer):
            return Original(case, passed, verdicts, Reason.NEAR_MISS)
        if case.new_coverage > 0:
            return Original(case, passed, verdicts, Reason.NEW_COVERAGE)
        return None

    def near_miss(self, case: Case, answer: dict) -> bool:
        """Whether a configuration's results agreed with the reference, one of them by less
        than its tolerance allows times (1 - NEAR_MISS_SHARE)."""
        if not case.comparable:
            return False
        replies = [answer, *answer.get("others", [])]
        for config, reply in zip(case.configs, replies):
            if reply.get("status") != "ok" or "outputs" not in reply or config.get("module"):
                continue
            facts = judged_facts(case.expected, Approximation.of_passes(config["passes"]),
                                 TargetTolerance.of(self.maker.specs, config["target"]))
            outputs = [decode_array(a) for a in reply["outputs"]][:len(facts)]
            for fact, output in zip(facts, outputs):
                if fact.exact or not fact.stable or fact.failed:
                    continue
                tighter = replace(fact, rtol=fact.rtol * NEAR_MISS_SHARE, atol=fact.atol * NEAR_MISS_SHARE)
                if compare_tensor(fact, output) is None and compare_tensor(tighter, output) is not None:
                    return True
        return False

    def followup(self, original: Original, j: int) -> Case:
        """Follow-up `j` of the original: its mutant through its baseline and pass sequence,
        given the original's replies to those."""
        case = original.case
        index = FOLLOWUP_INDEX + case.index * MAX_FOLLOWUPS + j
        lowering = {key: value for key, value in case.lowering.items() if key != "mutation"}
        lowering["mutation"] = {"seed": [self.maker.s.seed, index, int(Stream.MUTATION)],
                                "count": FOLLOWUP_REWRITES, "structural": True, "of_case": case.index}
        # positions in original.passed: the baseline, and the pass sequences of the original's module
        # (not its check-only sequences: nothing of theirs was built, nor would be of the mutant's)
        kept = [0] + [i for i, config in enumerate(original.passed) if i and not config.get("module")
                      and config.get(ORACLE_FIELD) == Oracle.PASS_ORDER.value and not config.get(CHECK_ONLY)]
        originals = [original.passed[i] for i in kept]
        configs = originals + ORACLES[Oracle.MUTATION].derived_configs(self.maker, originals, lowering)
        # shared by the original's follow-ups, not copied: what a waiting follow-up holds stays small
        given = {position: original.verdicts[i] for position, i in enumerate(kept) if original.verdicts[i] is not None}
        request = {key: value for key, value in case.request.items() if key not in ("mutation", "kind", "how")}
        request.update({"case": index, "configs": configs, **lowering})
        return replace(case, index=index, configs=configs, lowering=lowering, request=request, cross=None,
                       gen_ms=0.0, timings={}, new_coverage=0, given=given)

    def next_case(self, paced: bool = True) -> Case | None:
        """The best waiting follow-up; `paced`: only while follow-ups are at most MAX_SHARE
        of the cases run (counting this one). None if there is none to hand out."""
        if not self.waiting or paced and self.handed_out + 1 > MAX_SHARE * (self.run_total + 1):
            return None
        self.handed_out += 1
        return heapq.heappop(self.waiting)[-1]

    def counted(self):
        """A case (any) was handed out."""
        self.run_total += 1

    def unjudged(self) -> list[Case]:
        """The follow-ups waiting (a checkpoint keeps them, as cases made but not run)."""
        return [item[-1] for item in sorted(self.waiting)]

    def figures(self) -> dict:
        """summary.json's: follow-ups made by reason, handed out, and waiting."""
        return {"per_case": self.per_case, "made": dict(self.made), "run": self.handed_out,
                "waiting": len(self.waiting)}
