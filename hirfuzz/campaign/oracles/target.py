"""The target oracle (`--target llvm,cuda`): the baseline program built for the campaign's
other targets (a GPU), judged against the reference within the target's tolerance (the op
specs' `target_tolerances`: CUDA's fast math). It is reached only where the baseline, on
the first target, agreed with the reference, so its wrong results are that target's alone;
they say so, and their reproducers run both targets."""
from __future__ import annotations

from ...core.finding import Finding
from ...core.targets import target_kind, target_label
from .base import Component, Oracle, OracleDefinition


class TargetOracle(OracleDefinition):
    name = Oracle.TARGET
    against_baseline = True

    def case_configs(self, maker, rng, lowering):
        return [maker.config(maker.info.baseline, t, self.name) for t in maker.targets[1:]]

    def wrong_result_key(self, config: dict, where: str) -> str:
        return f"{target_kind(config['target'])}|{where}"  # one bug per target, whatever its arch

    def wrong_result(self, case, mismatches, config, under, mutators) -> Finding:
        finding = super().wrong_result(case, mismatches, config, under, mutators)
        baseline = case.configs[0]
        finding.message += f" ({target_label(baseline['target'])} agrees with the reference)"
        finding.extra["baseline_config"] = baseline
        return finding

    def wrong_result_component(self, finding: Finding) -> tuple[Component, str]:
        return Component.CODEGEN, "the first target's build agrees with NumPy; this target's does not"
