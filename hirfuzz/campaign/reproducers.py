"""A finding's folder: the files it holds, and the reproducer scripts among them rendered
for its case."""
from __future__ import annotations

import json
from dataclasses import asdict
from enum import Enum
from typing import TYPE_CHECKING, Callable

from ..core.finding import Finding
from ..core.gradients import GRAD, expected_gradients, float_variables, loss_tolerance
from ..core.oracle import Approximation, TargetTolerance, judged_facts
from ..dialects.reproducer import violating_call, with_small_inputs
from ..protocol import GRADIENT

if TYPE_CHECKING:
    from ..dialects import DialectInfo
    from .settings import Settings

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


def expected_for(case, config: dict, specs) -> list[tuple]:
    """What a script checks a configuration's results against, as the oracle compared them
    (judge._judge_config): (value or None where not comparable, rtol, atol) per result."""
    facts = judged_facts(case.expected, Approximation.of_passes(config["passes"]),
                         TargetTolerance.of(specs, config["target"]))
    return [((f.value if f.stable else None), 0.0 if f.exact else f.rtol,
             0.0 if f.exact else f.atol * max(1.0, f.magnitude)) for f in facts]


def gradient_expectation(case, specs, no_grad: dict) -> dict:
    """What a gradient finding's script checks, as the gradient oracle judged it: the
    reference's loss and its tolerance, and per variable asked for its name, the gradient
    finite differences give, the mask of the elements judged (smooth) and the tolerances."""
    expected = expected_gradients(case.graph, case.inputs, specs, no_grad)
    rtol, atol = GRAD[expected["precision"]]
    loss = expected["loss"]
    gradients = [(f"x{n.id}", expected["estimates"][n.id].gradient, expected["estimates"][n.id].smooth, rtol,
                  atol * expected["estimates"][n.id].scale) for n in float_variables(case.graph, no_grad)]
    return {"loss": loss, "loss_tolerance": loss_tolerance(expected["precision"], loss), "gradients": gradients}


class FindingScripts:
    """Renders a finding's scripts for a case through the dialect's reproducer writer
    (DialectInfo.reproducer_writer(), a dialects.base.ReproducerWriter); `module_script(case,
    config)` is the text of the module a configuration builds, as a lent worker prints it
    (Reduction.module_script)."""

    def __init__(self, info: "DialectInfo", specs, settings: "Settings", tvm_version: Callable[[], str],
                 module_script: Callable[[object, dict], dict]):
        # what it needs of the reduction's host (reducer.ReductionHost), and no more: the
        # reducer imports this module
        self.info, self.specs, self.settings, self.tvm_version = info, specs, settings, tvm_version
        self.module_script = module_script

    def violation_scripts(self, case, finding: Finding) -> list[tuple[ReproForm, str]]:
        """A disruptive finding's short scripts, shortest first: the violating call alone in
        main, then in the private function or closure the worker put it in (where it was in
        one). The call's inputs are parameters, passed the case's values (NumPy's for
        results of the valid part it reads); a silent acceptance's, which do not matter to
        it, each a constant tensor (with_small_inputs)."""
        writer = self.info.reproducer_writer()
        call = violating_call(case.disruption, case.graph, self.specs, case.inputs,
                              [facts.value for facts in case.expected])
        if finding.kind == "silent-acceptance":
            call = with_small_inputs(call)
        forms = [ReproForm.CALL] + ([ReproForm.CALL_IN_FUNCTION] if call.wrap else [])
        config = case.configs[-1]
        return [(form, writer.render_violation_short(finding, config, call, wrapped=form is ReproForm.CALL_IN_FUNCTION))
                for form in forms]

    def case_json(self, case) -> dict:
        """case.json: what replays or reduces the case without the generator."""
        return {"case": case.index, "seed": self.settings.seed, "settings": asdict(self.settings),
                "graph": case.graph.to_json(), "runnable": case.runnable, "disruption": case.disruption,
                "configs": case.configs, "lowering": case.lowering}

    def files(self, case, finding: Finding, log: str) -> dict:
        """The files of a finding's folder (finding_files), its scripts rendered for `case`."""
        config = case.configs[-1]  # the failing one: isolation put it last
        writer = self.info.reproducer_writer()
        if config.get(GRADIENT):  # its own program, and one script: the harness, with the gradients to expect
            expected = (gradient_expectation(case, self.specs, self.info.declared_no_grad())
                        if finding.kind == "wrong-result" else None)
            # a dialect that cannot write its loss program itself is given the worker's text of it
            script = None if self.info.writes_plain_modules else self.module_script(case, config)
            harness = writer.render_gradient(case.graph, self.specs, finding, config, case.inputs, case.runnable,
                                             expected, self.tvm_version(), module_script=script)
            return finding_files(finding, self.case_json(case), harness, None, log)
        expected = expected_for(case, config, self.specs) if finding.kind == "wrong-result" else None
        script = self.module_script(case, config)
        # the harness rebuilds a plain lowering itself where the dialect can (robust to a
        # module TVM cannot print); the short script always shows the module's own text
        plain = not case.lowering and self.info.writes_plain_modules
        harness = writer.render_reproducer(case.graph, self.specs, finding, config, case.inputs,
                                           run=case.runnable, expected=expected, tvm_version=self.tvm_version(),
                                           violation_plan=case.disruption["plan"] if case.disruption else None,
                                           module_script=None if plain else script)
        short = None
        if case.disruption is not None:
            short = self.violation_scripts(case, finding)[0][1]
        elif "error" not in script:
            short = writer.render_short(finding, config, case.inputs, case.runnable, expected, script)
        return finding_files(finding, self.case_json(case), harness, short, log)
