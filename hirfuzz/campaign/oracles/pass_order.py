"""The pass-order oracle: the baseline's executor after a pass sequence (`--passes`, or one
drawn from the catalog with `--pass-fuzz`), judged against the reference within the
approximation its passes document (core.oracle.Approximation). Reduction drops or
minimises the sequence, and a wrong result is one bug per minimal sequence."""
from __future__ import annotations

from ...core.finding import Finding
from ...core.passes import draw_sequence
from ...core.targets import target_kind
from .base import ORACLE_FIELD, Component, Oracle, OracleDefinition


class PassOrderOracle(OracleDefinition):
    name = Oracle.PASS_ORDER
    against_baseline = True
    narrows_passes = True

    def case_configs(self, maker, rng, lowering):
        seq = maker.s.pass_seq
        if seq is None and maker.s.pass_fuzz:
            seq = draw_sequence(maker.catalog, rng, max_len=maker.s.max_passes)
        if not seq:
            return []
        levels = maker.info.pass_opt_levels
        return [maker.config(maker.info.baseline, maker.targets[0], self.name, passes=seq,
                             opt_level=levels[int(rng.integers(len(levels)))])]

    def wrong_result_key(self, config: dict, where: str) -> str:
        # one bug per (minimal) sequence, whichever result shows it
        return f"{config['name']}:{target_kind(config['target'])}|{','.join(step['name'] for step in config['passes'])}"

    def minimal_signature(self, signature: str, passes: list[dict]) -> str:
        """A wrong result's signature once its sequence is minimised to `passes`."""
        return "|".join(signature.split("|")[:3] + [",".join(step["name"] for step in passes)])

    def without_passes(self, config: dict) -> dict:
        """Its configuration with no pass at all: the executor oracle's, at that opt level."""
        return {**config, "passes": [], ORACLE_FIELD: Oracle.EXECUTOR.value}

    def wrong_result_component(self, finding: Finding) -> tuple[Component, str]:
        return Component.PASS, (f"the program without passes agrees with NumPy; after {finding.extra.get('passes')} "
                                "it does not")
