"""Judging a worker's answer to a case: what the oracles make of it.

An `Outcome` (outcome.py) is how far the case got (`Status`, and the stage that failed)
and the finding it shows, if any. Each oracle (campaign/oracles/) says how its findings
are keyed and worded; a configuration other than the baseline is judged by the oracle
it names (`oracles.oracle_of`). Judging has no side effects: the campaign counts and
records outcomes, and the reducer judges its trial runs with the same `Judge`.
"""
from __future__ import annotations

from typing import Callable

from ..core.finding import Finding, crash_signature, death_signature, error_line, ill_formed_signature
from ..dialects.base import ILL_FORMED_STAGE
from ..protocol import CHECK_ONLY, PAST_DROPPED, PAST_FAILURES, decode_array, without_passes
from .cases import Case
from .oracles import ORACLE_FIELD, ORACLES, Oracle, oracle_of
from .outcome import Outcome, Status
from .sandbox import Death, memory_evidence, short_of_room


class Judge:
    """The oracles, applied to one answer at a time.

    A cross-IR campaign's second IR is judged by a Judge whose `baseline` oracle is
    CROSS_IR: its crashes and wrong results are that oracle's (their signatures say so, apart
    from the first IR's), and its messages name the IR and TVM (`label`).
    """

    def __init__(self, specs, mutators: dict[int, list[str]], baseline: Oracle = Oracle.REFERENCE,
                 label: Callable[[], str] = lambda: ""):
        self.specs = specs
        # case -> the mutators its mutant went through, as the campaign recorded them from
        # its answer (a mutant's wrong result is keyed on them); read here, never written
        self._mutators = mutators
        self.baseline = baseline
        self.crash_oracle = ORACLES[baseline].crash_oracle()  # the crash oracle, for the reference
        self.label = label  # "Relax on TVM 0.27.0": known once the workers have said so

    def classify(self, case: Case, answer, known: Callable[[str], bool] | None = None) -> Outcome:
        """What an answer means; no side effects, so the reducer can use it too.

        `known` (the campaign's, when it judges a case it drew) says whether a signature is
        a finding the campaign already holds: a configuration failing so does not hide
        a later one of the case that fails otherwise (the worker ran them all), whose
        finding is the outcome instead; a known one is the outcome only where no later
        configuration fails with something new. The reducer passes none: a trial is judged
        by its first failing configuration, as the finding it reduces was."""
        if isinstance(answer, Death) and answer.memory_limit_mb is not None:
            # no finding: a reduction's trial that runs out of memory fails unlike any
            return Outcome(Status.OUT_OF_MEMORY, log=answer.log_tail)
        if case.disruption is not None:
            return self.classify_disruptive(case, answer)
        if isinstance(answer, Death):
            return self._death(case, answer)
        if answer["status"] == "error" and answer["stage"] in ("lower", "well_formed"):
            # TVM refused a program the specs call valid: a spec to fix (or a type inference
            # bug to look at by hand), never reported as a TVM crash
            outcome = self._judge_config(case, answer, case.configs[0], self.crash_oracle, short_of_room(answer))
            if outcome.finding is not None:  # not out of memory
                outcome.finding.kind = "spec-disagreement"
            return outcome
        cramped = short_of_room(answer)
        first = self._first_oracle(case.configs[0])
        if ORACLES[first].not_judged(case, case.configs[0]):
            return Outcome(Status.RAN)
        if answer["status"] == "skipped":  # nothing built: nothing of the case's to judge
            return Outcome(Status.SKIPPED)
        base = self._judge_config(case, answer, case.configs[0], first, cramped)
        if base.finding is not None or answer["status"] == "error":
            return base
        memory = None  # a configuration that ran out of memory: the case's outcome, where none fails
        seen_before = None  # the first configuration failing with a finding `known` holds
        for config, other in zip(case.configs[1:], answer.get("others", [])):
            if other["status"] == "skipped":  # the mutator failed (hirfuzz's own bug), or the
                continue                      # executor cannot take the program by design
            if config.get(CHECK_ONLY) and other["status"] != "error":
                continue  # its passes ran and left a well-formed module: nothing was built to compare
            if ORACLES[oracle_of(config)].not_judged(case, config):
                continue  # outside what its oracle judges (a gradient case outside the autodiff's contract)
            outcome = self._judge_other(case, other, config, cramped)
            if outcome.finding is None:
                memory = memory or (outcome if outcome.status is Status.OUT_OF_MEMORY else None)
                continue
            found = Outcome(base.status, base.stage, outcome.finding, outcome.log)  # the baseline's status counts
            if known is None or not known(outcome.finding.signature):
                found.past_known = seen_before is not None
                return found
            seen_before = seen_before or found
            hidden = self._hidden_past(case, other, config, known, cramped)
            if hidden is not None:
                return Outcome(base.status, base.stage, hidden.finding, hidden.log, past_known=True)
        return seen_before or memory or base

    def _judge_other(self, case: Case, reply: dict, config: dict, cramped: bool) -> Outcome:
        """A configuration other than the baseline, judged by the oracle it names."""
        outcome = self._judge_config(case, reply, config, oracle_of(config), cramped)
        if outcome.finding is not None and config.get("module"):
            # a mutant's: the rewrites named, and every configuration before it (the
            # original after the same passes among them) passed (oracles/mutation.py)
            outcome.finding.extra["mutators"] = list(self._mutators.get(case.index, []))
        return outcome

    def _hidden_past(self, case: Case, reply: dict, config: dict, known: Callable[[str], bool],
                     cramped: bool) -> Outcome | None:
        """The first failure the worker met going on past the failed passes of `config`'s
        sequence (worker.failures_past) that `known` does not hold, judged under the sequence
        without them (the configuration its reduction and reproducer use); None: none."""
        for past in reply.get(PAST_FAILURES) or []:
            outcome = self._judge_other(case, past, without_passes(config, past[PAST_DROPPED]), cramped)
            if outcome.finding is not None and not known(outcome.finding.signature):
                return outcome
        return None

    def _death(self, case: Case, death: Death) -> Outcome:
        """A worker that died on the case: keyed on where it died, where it said (a crash in
        one pass is not a crash in another), and pinned to the configuration it died in."""
        kind = "hang" if death.reason == "timeout" else "crash"
        place = death.place if kind == "crash" else None
        config = case.configs[0]
        extra = {"signal": death.signal or death.reason}
        if place is not None:
            extra["died_in"] = place.as_extra()
            if place.config is not None and place.config < len(case.configs):
                config = case.configs[place.config]
            if place.dropped:  # it died going on past passes that failed (worker.failures_past)
                config = without_passes(config, place.dropped)
        oracle = self._first_oracle(config)  # an oracle that stands alone keys its own deaths
        oracle = self.crash_oracle if oracle is self.baseline else oracle
        finding = Finding(kind=kind, oracle=oracle.value, stage="worker",
                          signature=self._prefix(oracle) + death_signature(
                              death.reason, death.signal, place.key() if place else None),
                          message=death.describe(), detail=death.log_tail, case=case.index,
                          extra={**extra, "config": config})
        return Outcome(Status(death.reason), finding=finding, log=death.log_tail)

    def _judge_config(self, case: Case, reply: dict, config: dict, oracle: Oracle, cramped: bool = False) -> Outcome:
        """One configuration's reply: a crash, a result that differs from the reference, or fine.

        The baseline's crashes are the crash oracle's; a configuration that fails or differs
        while the baseline did not is the pass-order oracle's (it ran a pass sequence) or
        the executor oracle's (another executor or target). A pass sequence that may change
        results on purpose is compared only within the approximation its passes document
        (oracle.Approximation), never exactly.
        """
        if reply["status"] == "error" and cramped and memory_evidence(f"{reply['exc_type']}: {reply['message']}"):
            # TVM short of its worker's --max-memory raises (a bad_alloc as a TVMError) as often
            # as it dies: near the limit, the limit's doing, no crash (sandbox.short_of_room).
            # (A broken program's, in disruptive mode, is TVM's answer to it: judged there.)
            return Outcome(Status.OUT_OF_MEMORY, reply["stage"], log=reply["traceback"])
        if reply["status"] == "error":
            return self._crash(case, reply, config, self.crash_oracle if oracle is self.baseline else oracle)
        if config.get(CHECK_ONLY):  # a check-only case's baseline: lowered, nothing built to compare
            return Outcome(Status.CHECKED)
        if not case.runnable:
            return Outcome(Status.BUILT)
        mismatches = ORACLES[oracle].mismatches(case, [decode_array(a) for a in reply["outputs"]], config, self.specs)
        if not mismatches:
            return Outcome(Status.OK if any(f.stable for f in case.expected) else Status.RAN)
        return Outcome(Status.MISMATCH, finding=self._wrong_result(case, mismatches, config, oracle))

    def _first_oracle(self, config: dict) -> Oracle:
        """The oracle judging a case's first configuration: the baseline's, unless the
        configuration names one that stands alone (a gradient configuration a reduction
        isolated)."""
        named = config.get(ORACLE_FIELD)
        if named and ORACLES[Oracle(named)].stands_alone:
            return Oracle(named)
        return self.baseline

    @staticmethod
    def _prefix(oracle: Oracle, config: dict | None = None) -> str:
        return ORACLES[oracle].crash_prefix(config)

    def _crash(self, case: Case, reply: dict, config: dict, oracle: Oracle) -> Outcome:
        stage, exc_type = reply["stage"], reply["exc_type"]
        said = error_line(exc_type, reply["message"])
        if stage == ILL_FORMED_STAGE:
            # the first pass whose output is ill-formed is the bug, not what later trips over
            # it: keyed on that pass and what the check says, not on where the module broke
            # (a pass TVM runs inside the one in the sequence, where one fails alike: the
            # innermost, so that a pass run inside several is one finding, not one per wrapper)
            blamed, inner = reply["blamed_pass"], reply.get("inner_passes") or []
            innermost = inner[-1] if inner else blamed
            within = f" (inside {blamed})" if inner else ""
            finding = Finding(kind="crash", oracle=oracle.value, stage=stage,
                              signature=self._prefix(oracle, config) + ill_formed_signature(innermost, reply["message"]),
                              message=f"{innermost}{within} left an ill-formed module: {said[:300]}"
                                      f"{self._under(config, oracle)}",
                              detail=reply["traceback"], case=case.index,
                              extra={"exc_type": exc_type, "config": config, "blamed_pass": blamed,
                                     **_inner_passes(inner)})
            return Outcome(Status.ERROR, stage, finding, reply["traceback"])
        finding = Finding(kind="crash", oracle=oracle.value, stage=stage,
                          signature=self._prefix(oracle, config) + crash_signature(stage, exc_type, reply["message"],
                                                                           reply["traceback"]),
                          message=f"{said[:320]}{self._under(config, oracle)}", detail=reply["traceback"],
                          case=case.index, extra={"exc_type": exc_type, "config": config,
                                                  **_failed_pass(reply.get("failed_pass")),
                                                  **_inner_passes(reply.get("inner_passes"))})
        return Outcome(Status.ERROR, stage, finding, reply["traceback"])

    def _wrong_result(self, case: Case, mismatches: list, config: dict, oracle: Oracle) -> Finding:
        return ORACLES[oracle].wrong_result(case, mismatches, config, self._under(config, oracle),
                                            self._mutators.get(case.index, []))

    def classify_disruptive(self, case: Case, answer) -> Outcome:
        return ORACLES[Oracle.DISRUPTIVE].judge(self.specs, case, answer)

    def _under(self, config: dict, oracle: Oracle) -> str:
        """" under <configuration>" in the message of a finding not on the first IR's baseline."""
        return ORACLES[oracle].under(config, self.label())


def _failed_pass(name: str | None) -> dict:
    """A finding's extra for the pass of the sequence that raised (the reply's "failed_pass"):
    where no TVM frame says where, it is what the root key names (reducer.root_key_of)."""
    return {"failed_pass": name} if name else {}


def _inner_passes(inner: list[str] | None) -> dict:
    """A finding's extra for the passes within the failing one that fail alike
    (dialects.base.innermost_failing): the innermost is the one to blame (titles)."""
    return {"inner_passes": inner, "innermost_pass": inner[-1]} if inner else {}
