"""The pass-order oracle: the baseline's executor after a pass sequence (`--passes`, or one
drawn from the catalog with `--pass-fuzz`), judged against the reference within the
approximation its passes document (core.oracle.Approximation). Reduction drops or
minimises the sequence, and a wrong result is one bug per minimal sequence.

With `--pass-checks N`, each case also gets N more drawn sequences that are check-only
(protocol.CHECK_ONLY): their passes run, each output checked, and nothing is built. They are
this oracle's configurations, not another oracle's, so that a pass crash or an ill-formed
output is keyed alike (pass-order|...) whether a built or a check-only sequence showed it:
one bug, one finding."""
from __future__ import annotations

from ...core.finding import Finding
from ...core.passes import draw_sequence
from ...core.targets import target_kind
from ...protocol import CHECK_ONLY
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
        return [self._sequence_config(maker, rng, seq)]

    def check_configs(self, maker, rng) -> list[dict]:
        """The case's check-only configurations (`--pass-checks`), drawn from its PASS_CHECKS
        stream `rng`, so that the sequence it builds and everything else drawn stay as they
        were; none where the sequence is pinned (--pass-seq) or not drawn at all."""
        if maker.s.pass_seq is not None or not maker.s.pass_fuzz:
            return []
        return [{**self._sequence_config(maker, rng, draw_sequence(maker.catalog, rng, max_len=maker.s.max_passes)),
                 CHECK_ONLY: True} for _ in range(maker.s.pass_checks)]

    def _sequence_config(self, maker, rng, seq: list[dict]) -> dict:
        levels = maker.info.pass_opt_levels
        return maker.config(maker.info.baseline, maker.targets[0], self.name, passes=seq,
                            opt_level=levels[int(rng.integers(len(levels)))])

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
