"""What finishing findings needs of a campaign, and all it gets (reducer.py's docstring
says how it is used); a module of its own so that the reduction steps can name it without
importing the reducer that runs them."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from ..core.finding import Finding

if TYPE_CHECKING:
    from ..dialects import DialectInfo
    from .cases import Case
    from .outcome import Outcome
    from .outdir import OutDir
    from .settings import Settings
    from .tallies import Counters


@dataclass
class ReductionHost:
    """What finishing findings needs of a campaign, and all it gets."""
    settings: "Settings"      # reads reduce, verify, timeout_s, tvm_python, tvm_env; case.json keeps all
    out: "OutDir"             # pending/, .staging/ and workers/reduction-errors.log live there
    specs: object             # the op specs reproducers are rendered from
    info: "DialectInfo"       # the dialect's reproducer writer, and whether it needs a worker
    catalog: object           # the pass catalog a pass sequence is minimised against
    lock: object              # held wherever the fields below, or the host's tables, change
    counters: "Counters"      # reduce_s and verify_s grow, under the lock
    make_case: Callable[..., "Case"]                 # CaseMaker.make_case
    classify: Callable[["Case", object], "Outcome"]  # Judge.classify: no side effects
    tvm_version: Callable[[], str]                   # the workers' TVM (known once they started)
    installation: Callable[[], dict]                 # what the workers' TVM said of itself
    say: Callable[[str], None]                       # a line on screen (thread-safe)
    # a pass-order finding's signature becomes its minimal sequence's; returns whether a
    # finding is saved or known (--known) under that signature, its hits counted there
    # (call with the lock held)
    rename_finding: Callable[[Finding, str], bool]
    file_finding: Callable[[str, Finding, dict], None]  # save a finished one to a folder, and list it
    # a confirmed finding with the root key of one filed before joins it (findings.FindingTables.join_root):
    # (finding, its signature as first seen, its files) -> whether it did
    join_root: Callable[[Finding, str, dict], bool]
    # a failure met while finishing another finding, filed as the campaign files any: a hit
    # of a known finding, or a new one to finish (Campaign.file_found)
    record: Callable[["Case", Finding, str], None]
    # the other TVM releases a confirmed finding's repro.py is tried under (versions.py),
    # known once the workers have said which TVM the campaign's is
    releases: Callable[[], list] = field(default=lambda: [])
    baseline: Callable[[], object] = field(default=lambda: None)  # --baseline's versions.Release, or None
    # a cross-IR campaign's other IR, where a confirmed finding's reduced program is also
    # tried (counterpart.CounterpartSide), or None
    counterpart: object = None
