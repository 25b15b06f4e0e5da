"""The cross-IR oracle (`--ir relay,relax`): a cross-IR campaign's second IR, which builds
and runs the baseline of each case's graph in its own TVM (campaign.cross makes that half
and compares the two baselines). Its crashes and wrong results are its own, keyed apart
from the first IR's, and its messages name the IR and TVM."""
from __future__ import annotations

from ...protocol import describe_config
from .base import BaselineOracle, Oracle


class CrossIROracle(BaselineOracle):
    name = Oracle.CROSS_IR

    def under(self, config: dict, label: str) -> str:
        return f" under {label}, {describe_config(config, with_passes=False)}"
