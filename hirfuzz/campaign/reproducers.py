"""A finding's folder: the files it holds and the reproducer scripts among them."""
from __future__ import annotations

import json
from enum import Enum

from ..core.finding import Finding

REPRO = "repro.py"     # the short script a maintainer reads
HARNESS = "check.py"   # hirfuzz's harness beside it: every pass's output checked, marks printed


class ReproForm(str, Enum):
    """What a disruptive finding's repro.py holds (finding.json's extra.reproducer)."""
    CALL = "call"                          # the violating call alone, in main
    CALL_IN_FUNCTION = "call-in-function"  # the call alone, in the private function or closure it was in
    HARNESS = "harness"                    # the whole program: the call alone did not fail alike


def finding_files(finding: Finding, case_json: dict, harness: str, short: str | None, log: str) -> dict:
    """A finding's files: repro.py is the short script where there is one, with the harness
    beside it as check.py; otherwise the harness is repro.py."""
    scripts = {REPRO: short, HARNESS: harness} if short is not None else {REPRO: harness}
    return {
        "finding.json": json.dumps(finding.to_json(), indent=2) + "\n",
        "case.json": json.dumps(case_json) + "\n",
        **scripts,
        "log.txt": log,
    }
