"""Oracles: decide whether what TVM did is a bug.

The comparison policy (DESIGN.md): integers and booleans exactly; floats within the
tensor's tolerance, |actual - expected| <= atol * max(1, magnitude) + rtol * |expected|,
where magnitude is the largest value on the tensor's path; tensors that a discontinuous op
may have amplified a rounding difference into (`stable` False) are not compared.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .reference import TensorFacts


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


def compare_results(expected: list[TensorFacts], actual: list[np.ndarray]) -> list[Mismatch]:
    if len(expected) != len(actual):
        return [Mismatch(-1, f"main returned {len(actual)} tensors, expected {len(expected)}")]
    out = []
    for i, (e, a) in enumerate(zip(expected, actual)):
        detail = compare_tensor(e, a)
        if detail is not None:
            out.append(Mismatch(i, detail))
    return out
