"""The cross-IR oracle (`--ir relay,relax`): a cross-IR campaign's second IR, which builds
and runs the baseline of each case's graph in its own TVM (campaign.cross makes that half
and compares the two baselines). Its crashes and wrong results are keyed apart from the
first IR's, and its messages name the IR and TVM."""
from __future__ import annotations

from ...protocol import describe_config
from .base import Oracle, OracleDefinition


class CrossIROracle(OracleDefinition):
    name = Oracle.CROSS_IR

    def case_configs(self, maker, rng, lowering):
        """The second IR's baseline, the one configuration of its half of a case."""
        if maker.baseline_oracle is not self.name:
            return []
        return [maker.config(maker.info.baseline, maker.s.targets[0], self.name)]

    def wrong_result_key(self, config: dict, where: str) -> str:
        return f"{config['target']}|{where}"

    def under(self, config: dict, label: str) -> str:
        return f" under {label}, {describe_config(config, with_passes=False)}"
