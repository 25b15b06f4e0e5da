"""The executor oracle: the baseline program under the campaign's other executors
(`--executors`) on the first target, judged against the reference."""
from __future__ import annotations

from ...core.finding import Finding
from .base import Component, Oracle, OracleDefinition


class ExecutorOracle(OracleDefinition):
    name = Oracle.EXECUTOR
    against_baseline = True

    def case_configs(self, maker, rng, lowering):
        base, first = maker.info.baseline, maker.targets[0]
        return [maker.config(e, first, self.name) for e in maker.s.executors if e != base]

    def wrong_result_component(self, finding: Finding) -> tuple[Component, str]:
        return Component.CODEGEN, "the baseline build agrees with NumPy; another executor does not"
