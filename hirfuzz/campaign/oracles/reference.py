"""The reference oracle: the baseline (the dialect's baseline executor on the first target)
built and run, its results compared with the NumPy reference (core.oracle.compare_results).
Its crashes are the crash oracle's (judge.Judge.crash_oracle)."""
from __future__ import annotations

from .base import Oracle, OracleDefinition


class ReferenceOracle(OracleDefinition):
    name = Oracle.REFERENCE
    elsewhere = False

    def case_configs(self, maker, rng, lowering):
        """The baseline, first of every case (but a cross-IR campaign's second IR's, whose
        baseline is the cross-IR oracle's)."""
        if maker.baseline_oracle is not self.name:
            return []
        return [maker.config(maker.info.baseline, maker.s.targets[0], self.name)]

    def wrong_result_key(self, config: dict, where: str) -> str:
        return f"{config['target']}|{where}"

    def under(self, config: dict, label: str) -> str:
        return ""
