"""The oracles: what decides that what TVM did with a case is a bug. One file each.

An oracle is a class on `OracleDefinition` (base.py), one instance of it registered in
`ORACLES` below. It provides:

- `name`: its `Oracle` (the value finding.json and summary.json spell it with, and the
  `ORACLE_FIELD` of each configuration it judges: `oracle_of`);
- `case_configs(maker, rng, lowering)`: the configurations it adds to a strict case (a
  case's configurations come in the order of `ORACLES`, the baseline first); an oracle
  that judges the baseline itself builds on `BaselineOracle` (and says under which oracle
  the baseline's crashes are filed: `crash_oracle`);
- how it judges its configuration's reply: `compared_outputs` (which outputs meet the
  NumPy reference, by the shared comparison in core/oracle.py, as judge.Judge applies it)
  and `wrong_result` (the finding it makes of results that differ); the disruptive oracle
  judges its cases whole (`judge`);
- how it keys and words its findings: `crash_prefix` (its crashes' signatures start with
  it), `wrong_result_key`, `under` (the configuration its messages name);
- what reduction may do: `against_baseline` (the baseline stays beside its configuration,
  and its reproducers build both), `narrows_passes` (its passes may be dropped and
  minimised: pass-order's `without_passes`, `minimal_signature`);
- how triage and titles read its findings: `wrong_result_component` (the part of TVM its
  wrong results point at) and `elsewhere` (a wrong result's title says where it was seen).

Adding an oracle: write its file here with its class (override only what differs from
the defaults), then register it: its name in `base.Oracle` and its instance in `ORACLES`.
"""
from __future__ import annotations

from ...core.targets import target_kind
from .base import ORACLE_FIELD, BaselineOracle, Component, Oracle, OracleDefinition
from .crash import CrashOracle
from .cross_ir import CrossIROracle
from .disruptive import DisruptiveOracle
from .executor import ExecutorOracle
from .gradient import GradientOracle
from .mutation import MutationOracle
from .pass_order import PassOrderOracle
from .reference import ReferenceOracle
from .target import TargetOracle

# in the order a case's configurations come: the baseline (the reference's, or the second
# IR's in a cross-IR campaign), then a pass sequence, the mutant, other executors, other targets
# (a gradient case's gradient configuration comes right after the baseline: campaign.cases)
ORACLES: dict[Oracle, OracleDefinition] = {o.name: o for o in (
    CrashOracle(),
    ReferenceOracle(),
    CrossIROracle(),
    PassOrderOracle(),
    MutationOracle(),
    ExecutorOracle(),
    TargetOracle(),
    DisruptiveOracle(),
    GradientOracle(),
)}


def definition(oracle: Oracle | str) -> OracleDefinition:
    """The registered oracle of a name (an `Oracle`, or its value as a finding holds it)."""
    return ORACLES[Oracle(oracle)]


def oracle_of(config: dict) -> Oracle:
    """The oracle that judges a configuration other than the baseline (whose results are
    checked against the reference: `Judge.baseline`): the one it names. A configuration
    from before configurations named theirs (an older campaign's case.json) is judged as
    then, by what sets it apart from the baseline (a mutant, a pass sequence, or another
    executor or target)."""
    if ORACLE_FIELD in config:
        return Oracle(config[ORACLE_FIELD])
    if config.get("module"):
        return Oracle.MUTATION
    if config["passes"]:
        return Oracle.PASS_ORDER
    return Oracle.EXECUTOR if target_kind(config["target"]) == "llvm" else Oracle.TARGET


__all__ = ["BaselineOracle", "Component", "ORACLE_FIELD", "ORACLES", "Oracle", "OracleDefinition", "definition",
           "oracle_of"]
