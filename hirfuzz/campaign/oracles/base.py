"""What an oracle is: the names of the oracles (`Oracle`), and the base every oracle's class
builds on (`OracleDefinition`), with the behaviour most oracles share.

The package's docstring (campaign/oracles/__init__.py) lists what an oracle provides and
how to add one.
"""
from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, ClassVar, Protocol

import numpy as np

from ...core.finding import Finding
from ...core.oracle import Approximation, Mismatch, TargetTolerance, compare_results
from ...core.passes import input_contract_unmet
from ...core.targets import target_kind
from ...protocol import describe_config

if TYPE_CHECKING:
    from ...core.graph import Graph
    from ...dialects import DialectInfo
    from ..settings import Settings


class Oracle(str, Enum):
    """The oracle that judged a finding. A str, so it compares equal to Finding.oracle,
    which holds its value (finding.json and summary.json spell oracles as they always did)."""
    CRASH = "crash"            # the baseline crashed, or its worker died
    REFERENCE = "reference"    # the baseline's results, against the NumPy reference
    PASS_ORDER = "pass-order"  # a configuration that ran a pass sequence
    EXECUTOR = "executor"      # another executor
    TARGET = "target"          # another target (a GPU), beside the first
    MUTATION = "mutation"      # the mutant, built as the baseline
    DISRUPTIVE = "disruptive"  # what TVM did with a program broken on purpose
    GRADIENT = "gradient"      # the IR's autodiff, against finite differences of the reference
    CROSS_IR = "cross-ir"      # a cross-IR campaign's second IR, in its own TVM (campaign.cross)


# the field of a configuration (a dict) that names the oracle judging it, set where
# configurations are made (cases.CaseMaker.config)
ORACLE_FIELD = "oracle"


class Component(str, Enum):
    """The part of TVM a finding points at (triage.classify_finding)."""
    PASS = "pass"
    OPERATOR = "operator"
    CODEGEN = "codegen"
    VM = "VM"


class CaseMaker(Protocol):
    """What an oracle reads of the case maker (cases.CaseMaker, which imports this package)
    to add its configurations to a case."""
    s: "Settings"
    info: "DialectInfo"
    catalog: object              # the pass catalog sequences are drawn from
    baseline_oracle: Oracle      # the oracle whose baseline a case starts with
    targets: list                # the targets configurations name (the first is the baseline's)

    def config(self, executor: str, target, oracle: Oracle, **kw) -> dict: ...


class Case(Protocol):
    """What an oracle reads of a case it judges (cases.Case)."""
    index: int
    graph: "Graph"
    expected: list               # TensorFacts per result of main
    disruption: dict | None      # disruptive mode: the violation and its plan
    configs: list                # its configurations, the baseline first


class OracleDefinition:
    """One oracle: the configurations it adds to a case, how it keys and words what it
    finds, what reduction may do to its findings, and how triage and titles read them.

    The defaults are those of an oracle that judges a configuration of its own against the
    NumPy reference (core.oracle.compare_results, as judge.Judge applies it); an oracle
    overrides what it does otherwise.
    """
    name: ClassVar[Oracle]
    # reduction keeps the baseline beside this oracle's configuration (its findings are
    # judged against the baseline's run), and a reproducer of its findings builds both
    against_baseline: ClassVar[bool] = False
    # reduction may drop its configuration's passes (the finding is then the executor
    # oracle's: `without_passes`) and minimise them; its wrong results are keyed on the
    # minimal sequence
    narrows_passes: ClassVar[bool] = False
    # reduction may minimise its configuration's pass sequence, though not drop it (the
    # mutation oracle's: without passes its configuration is the plain mutant, which passed)
    minimises_passes: ClassVar[bool] = False
    # its wrong results are not the first IR's baseline against the reference: their
    # titles say where they were seen (titles.Situation.WRONG_RESULT_ELSEWHERE)
    elsewhere: ClassVar[bool] = True
    # its configuration is judged by it wherever it stands in a case, first too (where a
    # reduction isolated it alone), not as a baseline (the gradient oracle's own program)
    stands_alone: ClassVar[bool] = False

    def case_configs(self, maker: CaseMaker, rng: np.random.Generator, lowering: dict | None) -> list[dict]:
        """The configurations it adds to a strict case (drawing from the case's CONFIGS
        stream `rng`): none by default."""
        return []

    def derived_configs(self, maker: CaseMaker, configs: list[dict], lowering: dict | None) -> list[dict]:
        """Configurations it derives from those the oracles drew (`configs`, in order), added
        after them: none by default (the mutation oracle runs the mutant through the drawn
        pass sequences)."""
        return []

    def crash_prefix(self, config: dict | None = None) -> str:
        """What starts the signature of a crash under its configuration `config` (its name:
        apart from the baseline's crashes)."""
        return f"{self.name.value}|"

    def not_judged(self, case: Case, config: dict) -> str | None:
        """Why its configuration's reply is not judged on this case, crash or result (None:
        it is): by default, where the program is outside a pass's documented input
        (core.passes.input_contract_unmet); the gradient oracle judges only programs within
        the autodiff's contract."""
        return input_contract_unmet(config.get("passes") or [], case.graph)

    def mismatches(self, case: Case, outputs: list[np.ndarray], config: dict, specs) -> list[Mismatch]:
        """How its configuration's results differ from what is expected: by default, the
        compared outputs against the NumPy reference (core.oracle.compare_results), within the
        approximation its passes document and its target's tolerance."""
        return compare_results(case.expected, self.compared_outputs(case, outputs),
                               Approximation.of_passes(config["passes"]), TargetTolerance.of(specs, config["target"]))

    def compared_outputs(self, case: Case, outputs: list[np.ndarray]) -> list[np.ndarray]:
        """The outputs of its configuration that are compared with the reference."""
        return outputs

    def wrong_result_key(self, config: dict, where: str) -> str:
        """What its wrong results are keyed on past "wrong-result|<oracle>|": one bug per
        executor, target, operator and dtype (`where`)."""
        return f"{config['name']}:{target_kind(config['target'])}|{where}"

    def under(self, config: dict, label: str) -> str:
        """" under <configuration>" in the message of its findings (`label`: the IR and TVM
        the judge judges, known once the workers have said so)."""
        return f" under {describe_config(config, with_passes=False)}"

    def wrong_result(self, case: Case, mismatches: list[Mismatch], config: dict, under: str,
                     mutators: list[str]) -> Finding:
        """The finding of results that differ from the reference under `config`
        (`mutators`: those the case's mutant went through)."""
        first = mismatches[0]
        where = result_site(case, first.index)
        approximation = Approximation.of_passes(config["passes"])
        beyond = " beyond the approximation its passes document" if approximation is not None else ""
        return Finding(kind="wrong-result", oracle=self.name.value, stage="run",
                       signature=f"wrong-result|{self.name.value}|{self.wrong_result_key(config, where)}",
                       message=f"result {first.index} ({where}) differs from the NumPy reference{beyond}"
                               f"{under}: {first.detail}",
                       detail=mismatch_detail(mismatches), case=case.index, extra={"config": config})

    def operator_key(self, finding: Finding, case: Case) -> str | None:
        """A second root key for its finding on a reduced program of one operator, plainly
        lowered (`case`), where that finding is another oracle's failure of the operator
        (findings.FindingTables.join_root joins by either); None by default."""
        return None

    def wrong_result_component(self, finding: Finding) -> tuple[Component, str]:
        """The part of TVM its wrong results point at, and why (triage)."""
        return Component.OPERATOR, "the built program's result differs from NumPy's for the operator named"


class BaselineOracle(OracleDefinition):
    """An oracle that judges a case's baseline (configs[0], judge.Judge.baseline): the
    dialect's baseline executor on the first target, its wrong results keyed on the target,
    operator and dtype. A case maker's `baseline_oracle` says which one a case starts with."""

    def case_configs(self, maker, rng, lowering):
        if maker.baseline_oracle is not self.name:
            return []
        return [maker.config(maker.info.baseline, maker.targets[0], self.name)]

    def wrong_result_key(self, config: dict, where: str) -> str:
        return f"{target_kind(config['target'])}|{where}"

    def crash_oracle(self) -> Oracle:
        """The oracle the baseline's crashes are filed under: its own by default."""
        return self.name


def result_site(case: Case, index: int) -> str:
    """The op and dtype of result `index` of main ("arity" where there is no such result)."""
    results = case.graph.results()
    node = case.graph.nodes[results[index].node] if 0 <= index < len(results) else None
    return f"{node.op}:{node.dtype}" if node is not None else "arity"


def mismatch_detail(mismatches: list[Mismatch]) -> str:
    return "\n".join(f"result {m.index}: {m.detail}" for m in mismatches)
