"""The mutation oracle (`--mutations N`): the case's equivalent mutant (module 1, made by
the dialect's mutators in the worker), built as the baseline. The mutant is meant to equal
the original, which agreed with the reference: its wrong results are "mutant
disagreements", hirfuzz's mutator the first suspect (issue policy), logged apart."""
from __future__ import annotations

from ...core.finding import Finding
from .base import Oracle, OracleDefinition, mismatch_detail, result_site


class MutationOracle(OracleDefinition):
    name = Oracle.MUTATION
    against_baseline = True

    def case_configs(self, maker, rng, lowering):
        if not (lowering and lowering.get("mutation")):
            return []
        return [{**maker.config(maker.info.baseline, maker.targets[0], self.name), "module": 1}]

    def compared_outputs(self, case, outputs):
        return outputs[:len(case.expected)]  # expose_output appends results at the end

    def wrong_result(self, case, mismatches, config, under, mutators) -> Finding:
        first = mismatches[0]
        where = result_site(case, first.index)
        return Finding(
            kind="mutant-disagreement", oracle=self.name.value, stage="run",
            signature=f"mutant-disagreement|{','.join(mutators)}|{where}",
            message=f"the mutant's result {first.index} ({where}) differs from the reference: {first.detail}",
            detail=mismatch_detail(mismatches), case=case.index, extra={"config": config})
