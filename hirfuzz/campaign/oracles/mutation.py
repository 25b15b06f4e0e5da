"""The mutation oracle (`--mutations N`): the case's equivalent mutant (module 1, made by
the dialect's mutators in the worker), built as the baseline, then after each pass
sequence the case was drawn (the pass-order oracle's, same passes and opt level): most
rewrites build the structure function-level passes act on (closures, calls through
globals, several globals) and survive normalisation, but a plain build only lifts and
legalises them (tools/mutation_survival.py).

Whose fault a mutant's failure is (the configurations come in this order, and a case's
first failing configuration is its finding, so each rule holds by construction):

- the plain mutant's wrong results are "mutant disagreements": the mutant is meant to
  equal the original, which agreed with the reference, and a mutator's mistake is the
  first suspect (issue policy): hirfuzz's own bug, logged apart;
- the plain mutant's crashes, with the original's baseline built and run fine, are TVM's
  (a well-formed module, checked in the worker, that TVM fails to build or run);
- after a pass sequence, with the original after the same sequence and the plain mutant
  both agreeing with the reference: the mutant is shown semantics-preserving and valid,
  and the original is handled correctly under that very configuration, so a crash, an
  ill-formed module or a wrong result is TVM's: a pass bug the rewrite's shape exposes.

A follow-up mutant (campaign.followups) is judged by the same rules: its original's
configurations are its original's replies to them, put back before judging (the same
program, inputs and configuration; not built again).
"""
from __future__ import annotations

from ...core.finding import Finding
from ...core.targets import target_kind
from .base import ORACLE_FIELD, Component, Oracle, OracleDefinition, mismatch_detail, result_site
from .crash import CrashOracle
from .pass_order import PassOrderOracle


class MutationOracle(OracleDefinition):
    name = Oracle.MUTATION
    against_baseline = True
    minimises_passes = True

    def derived_configs(self, maker, configs, lowering):
        if not (lowering and lowering.get("mutation")):
            return []
        plain = {**maker.config(maker.info.baseline, maker.targets[0], self.name), "module": 1}
        after = [{**config, ORACLE_FIELD: self.name.value, "module": 1} for config in configs
                 if config.get(ORACLE_FIELD) == Oracle.PASS_ORDER.value and config.get("passes")]
        return [plain, *after]

    def crash_prefix(self, config: dict | None = None) -> str:
        """A mutant's crash is keyed as the same crash of the configuration it mirrors (the
        pass-order oracle's after passes, the baseline's without): one root cause is one
        finding, whichever program showed it first (the finding's oracle and `mutators`
        still say a mutant did)."""
        if config is None:
            return super().crash_prefix()
        mirrored = PassOrderOracle() if config["passes"] else CrashOracle()
        return mirrored.crash_prefix(config)

    def compared_outputs(self, case, outputs):
        return outputs[:len(case.expected)]  # expose_output appends results at the end

    def wrong_result(self, case, mismatches, config, under, mutators) -> Finding:
        first = mismatches[0]
        where = result_site(case, first.index)
        if config["passes"]:
            return self._pass_wrong_result(case, mismatches, config, under, mutators)
        return Finding(
            kind="mutant-disagreement", oracle=self.name.value, stage="run",
            signature=f"mutant-disagreement|{','.join(mutators)}|{where}",
            message=f"the mutant's result {first.index} ({where}) differs from the reference: {first.detail}",
            detail=mismatch_detail(mismatches), case=case.index, extra={"config": config})

    def _pass_wrong_result(self, case, mismatches, config, under, mutators) -> Finding:
        """TVM's: the original after the same passes, and the mutant without them, agreed."""
        first = mismatches[0]
        where = result_site(case, first.index)
        passes = ",".join(step["name"] for step in config["passes"])
        return Finding(
            kind="wrong-result", oracle=self.name.value, stage="run",
            signature=f"wrong-result|{self.name.value}|{config['name']}:{target_kind(config['target'])}|{passes}",
            message=f"result {first.index} ({where}) of the rewritten program ({', '.join(mutators)}) differs from "
                    f"the NumPy reference{under}, while the original program agrees: {first.detail}",
            detail=mismatch_detail(mismatches), case=case.index, extra={"config": config})

    def wrong_result_component(self, finding: Finding) -> tuple[Component, str]:
        passes = [step["name"] for step in finding.extra.get("config", {}).get("passes", [])]
        return Component.PASS, (f"the rewritten program agrees with NumPy without passes, and the original agrees "
                                f"after {passes}; the rewritten one after them does not")
