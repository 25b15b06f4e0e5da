"""The gradient oracle (`--gradients SHARE`, issue 27): the IR's autodiff against finite
differences of the NumPy reference.

A gradient case's graph is drawn from the ops the dialect's autodiff differentiates, at
float64 (campaign.cases). Its configuration (protocol.GRADIENT) has the worker lower the
graph's float results summed to a scalar loss, differentiate `main` with respect to its float
parameters (the "passes" stage, as pass "Gradient": Relax's `relax.transform.Gradient`, then
`main_adjoint` is run; Relay's `FirstOrderGradient` on the VM, dialects/relay/passes.py),
build it on llvm and run it; the reply's outputs are the loss, then each float parameter's
gradient.

What it finds: a crash in the autodiff, build or run (keyed as any crash, after "gradient|");
a loss that differs from the reference's; a gradient whose shape is not its parameter's; a
gradient whose values differ from central finite differences of the reference
(core.gradients: only elements around which the loss is smooth are judged). It judges only
graphs within the autodiff's documented contract (the dialect's `outside_contract`), whose
inputs keep every op in its domain; gradient cases are drawn with few enough elements for
the differences to be cheap (MAX_ELEMENTS), and a trial with more (an operator alone, its
inputs made variables) is judged on as many of its elements, spread evenly. The expected gradients are
computed where it judges, so reduction's trials, which are judged again, get their own.
"""
from __future__ import annotations

from enum import Enum

import numpy as np

from ...core.finding import ROOT, Finding, lone_operator_key
from ...core.gradients import (expected_gradients, float_results, float_variables, judge_estimate,
                              loss_tolerance)
from ...core.oracle import Mismatch
from ...core.targets import target_kind
from ...dialects import dialect_info
from ...protocol import AUTODIFF, GRADIENT, GRADIENT_PASS
from .base import Component, Oracle, OracleDefinition, mismatch_detail, result_site

# the most float variable elements a gradient case has: each costs four evaluations of the
# reference (a few ms for a small graph) on the coordinator, where the judge runs
MAX_ELEMENTS = 256
GRADIENT_DTYPE = "float64"  # the differences are taken in float64: TVM's gradient at float64 is judged tightly


class GradientDiffers(str, Enum):
    """What a wrong gradient finding found differing first: the third field of its signature."""
    LOSS = "loss"
    SHAPE = "shape"
    VALUES = "values"

    @classmethod
    def of(cls, signature: str) -> "GradientDiffers | None":
        """What differs in a gradient oracle's wrong result, by its signature; None for any
        other finding's."""
        fields = signature.split("|")
        if fields[:2] != ["wrong-result", Oracle.GRADIENT.value] or len(fields) < 3:
            return None
        return next((what for what in cls if what.value == fields[2]), None)


class GradientOracle(OracleDefinition):
    name = Oracle.GRADIENT
    # judged by itself wherever it stands, first too (a reduction isolates it alone)
    stands_alone = True

    def config(self, maker, autodiff: str | None = None) -> dict:
        """Its configuration: the baseline executor on llvm, no passes, the loss at
        GRADIENT_DTYPE, naming the dialect whose autodiff's contract judges it; `autodiff`:
        which of the dialect's autodiffs, where it has several (Relay's higher-order one
        runs on the one executor that takes references)."""
        executors = dialect_info(maker.s.dialect).gradient_support().AUTODIFF_EXECUTORS
        executor = executors.get(autodiff, maker.info.baseline)
        config = {**maker.config(executor, "llvm", self.name), GRADIENT: GRADIENT_DTYPE, "dialect": maker.s.dialect}
        return {**config, AUTODIFF: autodiff} if autodiff is not None else config

    def not_judged(self, case, config) -> str | None:
        return why_not_judged(case, dialect_info(config.get("dialect", "relax")).gradient_support())

    def under(self, config: dict, label: str) -> str:
        return " under its autodiff, built on llvm"

    def mismatches(self, case, outputs, config, specs) -> list[Mismatch]:
        """The loss, then each float variable's gradient: its shape, then its values."""
        no_grad = dialect_info(config.get("dialect", "relax")).declared_no_grad()
        variables = float_variables(case.graph, no_grad)
        if len(outputs) != 1 + len(variables):
            return [Mismatch(-1, f"the gradient program returned {len(outputs)} tensors, expected the loss and "
                                 f"{len(variables)} gradients")]
        # a program with more elements than differences are cheap for (an operator of a
        # reduced program alone, its inputs made variables: OperatorBlame) is judged on
        # MAX_ELEMENTS of them: judged on its loss and shapes alone, max_pool2d's gradient
        # ignoring its dilation was not found alone on 540 elements and its finding not
        # keyed as max_pool2d (bench27 relay seed 17, grad40 0013: a missed join)
        expected = expected_gradients(case.graph, case.inputs, specs, no_grad, most_elements=MAX_ELEMENTS)
        loss, want = float(outputs[0]), expected["loss"]
        rtol, atol = loss_tolerance(expected["precision"], want)
        if not np.isclose(loss, want, rtol=rtol, atol=atol):
            return [Mismatch(0, f"the loss is {loss!r}, the reference's {want!r}")]
        found = []
        for position, (node, got) in enumerate(zip(variables, outputs[1:]), start=1):
            if tuple(got.shape) != tuple(node.type.shape):
                found.append(Mismatch(position, f"x{node.id}'s gradient has shape {list(got.shape)}, "
                                                f"its parameter {list(node.type.shape)}"))
                continue
            if node.id not in expected["estimates"]:
                continue
            judged = judge_estimate(expected["estimates"][node.id], node.id, got, expected["precision"])
            if judged.wrong:
                _, index, value, fd = judged.wrong[0]
                sampled = f", {judged.unsampled} not sampled" if judged.unsampled else ""
                found.append(Mismatch(position, f"x{node.id}'s gradient differs from finite differences at "
                                                f"{len(judged.wrong)} of {judged.judged} elements judged "
                                                f"({judged.not_smooth} not smooth, skipped{sampled}); first at "
                                                f"{index}: {value!r}, finite differences {fd!r}"))
        return found

    def wrong_result(self, case, mismatches, config, under, mutators) -> Finding:
        """Keyed on what differs (the loss, a gradient's shape or its values) and the ops of the
        program: a reduced program's ops name the op whose gradient is wrong."""
        first = mismatches[0]
        what = GradientDiffers.LOSS if first.index <= 0 else (
            GradientDiffers.SHAPE if "has shape" in first.detail else GradientDiffers.VALUES)
        ops = ",".join(sorted({n.op for n in case.graph.operators}))
        return Finding(kind="wrong-result", oracle=self.name.value, stage="run",
                       signature=f"wrong-result|{self.name.value}|{what.value}|{ops}",
                       message=f"the gradient of sum(main's float results) differs: {first.detail}{under}",
                       detail=mismatch_detail(mismatches), case=case.index, extra={"config": config})

    def wrong_result_component(self, finding: Finding) -> tuple[Component, str]:
        return Component.OPERATOR, "an op's gradient differs from finite differences of its NumPy reference"

    def operator_key(self, finding: Finding, case) -> str | None:
        """A wrong loss of one operator is its forward result computed wrong on llvm, where the
        gradient program is built: the reference oracle's root key for it. Relay 0.19's
        float64-to-float16 astype returns garbage, seen both ways on seeds 4 and 5 (bench20
        relay-now 0012 and 0020, bench21 0009 and 0012).

        A crash of one operator's gradient program where it is built or run is that operator's
        gradient rule's, as a failure of the autodiff itself on it is (its lone-operator key,
        core.finding.lone_operator_key, on the autodiff pass): TVM 0.19's grouped conv2d
        gradient failed the first-order autodiff's type inference in one finding and the
        higher-order program's run-time shape check in another (bench28 relay seed 19 0024
        and 0018: one fault in conv2d_grad)."""
        if finding.kind == "crash" and finding.stage != "passes":
            return lone_operator_key(GRADIENT_PASS, case.graph.operators[0].op)
        if GradientDiffers.of(finding.signature) is not GradientDiffers.LOSS:
            return None
        target = target_kind(finding.extra["config"]["target"])  # as the reference oracle keys its own
        return f"{ROOT}|wrong-result|{Oracle.REFERENCE.value}|{target}|{result_site(case, 0)}"


OUTSIDE_CONTRACT = "outside the autodiff's contract"


def why_not_judged(case, gradients) -> str | None:
    """Why a case's gradient configuration is not judged (None: it is); `gradients`: the
    dialect's autodiff terms (DialectInfo.gradient_support; None: it has none)."""
    if gradients is None:
        return "the dialect has no autodiff"
    why = why_outside(case.graph, gradients)
    if why:
        return why
    if not case.comparable:
        return "inputs outside an op's domain"
    return None


def why_not_differentiable(graph, gradients) -> str | None:
    """Why a graph is not made a gradient case (None: it may be): nothing to differentiate,
    outside the autodiff's contract, or too many elements for cheap finite differences."""
    why = why_outside(graph, gradients)
    if why:
        return why
    if elements(float_variables(graph, gradients.DECLARED_NO_GRAD)) > MAX_ELEMENTS:
        return f"more than {MAX_ELEMENTS} float input elements"
    return None


def why_outside(graph, gradients) -> str | None:
    """Why a graph's gradient is not judged at all (None: it is): nothing to differentiate,
    or outside the autodiff's contract."""
    if not float_variables(graph, gradients.DECLARED_NO_GRAD) or not float_results(graph):
        return "no float variable or result"
    why = gradients.outside_contract(graph)
    return f"{OUTSIDE_CONTRACT}: {why}" if why else None


def elements(variables) -> int:
    return sum(int(np.prod(n.type.shape, dtype=np.int64)) for n in variables)
