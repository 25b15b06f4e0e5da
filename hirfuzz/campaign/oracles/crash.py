"""The crash oracle: the baseline crashed (an exception at a stage after lowering) or its
worker died. Its signatures are the crash's alone (core.finding.crash_signature), with no
oracle in front: every other oracle's crashes are keyed apart from the baseline's."""
from __future__ import annotations

from .base import Oracle, OracleDefinition


class CrashOracle(OracleDefinition):
    name = Oracle.CRASH
    elsewhere = False

    def crash_prefix(self, config: dict | None = None) -> str:
        return ""

    def under(self, config: dict, label: str) -> str:
        return ""  # the baseline's: no configuration to name
