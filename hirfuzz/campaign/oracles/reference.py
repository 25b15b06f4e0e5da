"""The reference oracle: the baseline (the dialect's baseline executor on the first target)
built and run, its results compared with the NumPy reference (core.oracle.compare_results).
Its crashes are the crash oracle's."""
from __future__ import annotations

from .base import BaselineOracle, Oracle


class ReferenceOracle(BaselineOracle):
    name = Oracle.REFERENCE
    elsewhere = False

    def crash_oracle(self) -> Oracle:
        return Oracle.CRASH

    def under(self, config: dict, label: str) -> str:
        return ""
