"""Oracles: decide whether what TVM did is a bug.

The comparison policy (DESIGN.md): integers and booleans exactly; floats within the
tensor's tolerance, |actual - expected| <= atol * max(1, magnitude) + rtol * |expected|,
where magnitude is the largest value on the tensor's path; tensors that a discontinuous op
may have amplified a rounding difference into (`stable` False) are not compared.

A configuration whose pass sequence may change results on purpose (a catalog entry with
`preserves_results: false`: mixed precision, fast math) is judged within the approximation
its passes document (`Approximation`), never exactly, or not numerically at all.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .reference import TensorFacts
from .targets import target_kind


@dataclass
class Mismatch:
    index: int          # which result of main
    detail: str


def compare_tensor(expected: TensorFacts, actual: np.ndarray) -> str | None:
    """None when `actual` agrees with the reference; otherwise a one-line description."""
    want = expected.value
    if tuple(actual.shape) != tuple(want.shape) or actual.dtype != want.dtype:
        return f"type differs: got {actual.dtype}{list(actual.shape)}, expected {want.dtype}{list(want.shape)}"
    if not expected.stable:
        return None
    if want.dtype.kind in "biu" or expected.exact:
        if np.array_equal(actual, want):
            return None
        bad = int(np.sum(actual != want))
        return f"{bad} of {want.size} elements differ exactly"
    a = actual.astype(np.float64)
    w = want.astype(np.float64)
    limit = expected.atol * max(1.0, expected.magnitude) + expected.rtol * np.abs(w)
    with np.errstate(invalid="ignore"):
        diff = np.abs(a - w)
    bad = ~(diff <= limit)
    if not bad.any():
        return None
    worst = float(np.nanmax(np.where(bad, diff, 0))) if np.isfinite(diff[bad]).any() else float("nan")
    return (f"{int(bad.sum())} of {w.size} elements outside tolerance "
            f"(max abs diff {worst:.3g}, rtol {expected.rtol:g}, atol {expected.atol:g} x {max(1.0, expected.magnitude):.3g})")


@dataclass(frozen=True)
class Approximation:
    """How far a pass sequence that may change results may move them: the loosest of its
    non-preserving steps' `approximation` (core.passes puts it in each such step).

    Results are compared with at least `rtol` and `atol`, only where no discontinuous op saw
    a float on their path (the pass may round any float, even an exact one, and a `floor`
    or comparison would turn that into any difference) and, with `max_magnitude`, only
    where every value on the path fits the narrower type the pass computes in. An
    approximation that is not `compared` leaves only the crash and well-formedness oracles.
    """
    compared: bool
    rtol: float = 0.0
    atol: float = 0.0
    max_magnitude: float | None = None

    @staticmethod
    def of_passes(passes: list[dict]) -> "Approximation | None":
        """None when every step preserves results; otherwise the loosest approximation."""
        declared = [step["approximation"] for step in passes if "approximation" in step]
        if not declared:
            return None
        if not all(d["compared"] for d in declared):
            return Approximation(False)
        limits = [d["max_magnitude"] for d in declared if d.get("max_magnitude") is not None]
        return Approximation(True, max(d["rtol"] for d in declared), max(d["atol"] for d in declared),
                             min(limits) if limits else None)

    def judged(self, facts: TensorFacts) -> TensorFacts:
        """The reference's facts as this approximation compares them."""
        within = self.max_magnitude is None or facts.magnitude <= self.max_magnitude
        if not (self.compared and facts.smooth and within):
            return replace(facts, stable=False)
        if facts.value.dtype.kind != "f":
            return facts  # smooth integers never met a float: what the pass leaves alone
        return replace(facts, exact=False, rtol=max(facts.rtol, self.rtol), atol=max(facts.atol, self.atol))


@dataclass(frozen=True)
class TargetTolerance:
    """The least tolerance a target's float results are compared with, per dtype (the op
    specs' `target_tolerances`, each target's with the reason its math may differ: a GPU's
    fast intrinsics, half precision computed in half). Exact results stay exact: a copy is
    a copy on any target."""
    floors: dict  # dtype -> (rtol, atol)

    @staticmethod
    def of(specs, target) -> "TargetTolerance | None":
        """The tolerance of a configuration's target (None: the op classes' own)."""
        floors = getattr(specs, "target_tolerances", {}).get(target_kind(target))
        return TargetTolerance(floors) if floors else None

    def judged(self, facts: TensorFacts) -> TensorFacts:
        floor = self.floors.get(str(facts.value.dtype))
        if floor is None or facts.exact:
            return facts
        return replace(facts, rtol=max(facts.rtol, floor[0]), atol=max(facts.atol, floor[1]))


def judged_facts(expected: list[TensorFacts], approximation: Approximation | None,
                 target: TargetTolerance | None = None) -> list[TensorFacts]:
    """The reference's facts as a configuration is judged: as they are, or within its
    approximation, and its target's tolerance."""
    judged = expected if approximation is None else [approximation.judged(f) for f in expected]
    return judged if target is None else [target.judged(f) for f in judged]


def compare_results(expected: list[TensorFacts], actual: list[np.ndarray],
                    approximation: Approximation | None = None,
                    target: TargetTolerance | None = None) -> list[Mismatch]:
    if len(expected) != len(actual):
        return [Mismatch(-1, f"main returned {len(actual)} tensors, expected {len(expected)}")]
    if approximation is not None and not approximation.compared:
        return []  # not even the result types: Relay's ToMixedPrecision makes them float16
    out = []
    for i, (e, a) in enumerate(zip(judged_facts(expected, approximation, target), actual)):
        detail = compare_tensor(e, a)
        if detail is not None:
            out.append(Mismatch(i, detail))
    return out


@dataclass
class CrossMismatch:
    """One result on which two compilers (two IRs, two TVM versions) are not both right."""
    index: int
    ours: str | None      # how the first differs from the reference (None: it agrees)
    theirs: str | None    # how the second does
    alike: bool           # the two agree with each other, within the reference's tolerance

    @property
    def reference_suspect(self) -> bool:
        """Both wrong the same way: two independent compilers agreeing against NumPy point at
        the reference or the spec first, not at TVM."""
        return self.ours is not None and self.theirs is not None and self.alike


def compare_across(expected: list[TensorFacts], ours: list[np.ndarray],
                   theirs: list[np.ndarray]) -> list[CrossMismatch]:
    """The results where the two compilers are not both right, compared with the reference
    and with each other (only results the reference can judge: unstable ones say nothing)."""
    out = []
    for i, (facts, a, b) in enumerate(zip(expected, ours, theirs)):
        mine, other = compare_tensor(facts, a), compare_tensor(facts, b)
        if mine is None and other is None:
            continue
        alike = (a.dtype == b.dtype and a.shape == b.shape
                 and compare_tensor(replace(facts, value=b), a) is None)
        out.append(CrossMismatch(i, mine, other, alike))
    return out
