"""Mutators: semantics-preserving rewrites of a Relax IRModule (runs inside workers).

Each mutator is a `Mutator(name, sites, rewrite)`, registered by the `@mutator(name, sites)`
decorator on its rewrite: `applies(mod, traits)` states its precondition (the module has
a site the rewrite can be applied to); `apply(mod, rng, traits)` returns a new,
well-formed module that computes the same results, drawing every choice from `rng`, so
(graph, plan, mutation seed) reproduces a mutant exactly. Mutators compose: a mutant can
be mutated again. `mutate(mod, rng, count, traits)` draws applicable mutators;
`prepare_for_build` (ir.py) runs what TVM requires before `relax.build`.

`traits` is the case's table of op traits (dialect op name -> traits, from the call
records: core.calls.op_traits): what a rewrite may assume of an op (elementwise,
commutative, associative) is spec data, never a list in code. An op absent from the
table (a mutant may introduce ops the graph lacks) has no traits.

The rewrites, one file per family (sites are bindings at the top level of a global Relax
function's body; helpers in ir.py):

- functions.py: HIRGen function rewrites (``func_to_closure``, ``wrap_return``,
  ``call_wrap``) and TorchProbe's functionalization and inlining (``outline_closure``,
  ``outline_global``, ``inline_call``).
- algebra.py: PolyJuice algebraic rules (``commute``, ``reassociate``, ``const_split``,
  ``const_merge``, ``distribute``).
- structure.py: PolyJuice structural rules (``transpose_pair``, ``concat_split``,
  ``matmul_transpose``, ``expose_output``) and TorchProbe's ``resolve`` and
  ``always_true_if``.
  EXTRA OUTPUTS: ``expose_output`` appends the exposed tensor *after* main's existing
  results (main then returns a tuple), so a comparison with the unmutated module must
  compare the common prefix: the first len(original results) flattened outputs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import tvm

from .ir import prepare_for_build

__all__ = ["MUTATORS", "Mutator", "mutate", "mutator", "prepare_for_build", "algebra", "functions", "structure"]


@dataclass
class Mutator:
    name: str
    sites: Callable[[tvm.IRModule, dict], list]                               # (mod, traits)
    rewrite: Callable[[tvm.IRModule, object, np.random.Generator], tvm.IRModule]  # (mod, site, rng)

    def applies(self, mod: tvm.IRModule, traits: dict) -> bool:
        return bool(self.sites(mod, traits))

    def apply(self, mod: tvm.IRModule, rng: np.random.Generator, traits: dict) -> tvm.IRModule:
        found = self.sites(mod, traits)
        if not found:
            raise ValueError(f"mutator {self.name} does not apply to this module")
        return self.rewrite(mod, found[int(rng.integers(len(found)))], rng)


MUTATORS: dict[str, Mutator] = {}


def mutator(name: str, sites: Callable):
    """Register the decorated rewrite(mod, site, rng) as mutator `name`, applied at one of
    the sites that `sites(mod, traits)` finds."""
    def register(rewrite: Callable) -> Callable:
        MUTATORS[name] = Mutator(name, sites, rewrite)
        return rewrite
    return register


def mutate(mod: tvm.IRModule, rng: np.random.Generator, count: int = 1, traits: dict | None = None,
           names: list[str] | None = None) -> tuple[tvm.IRModule, list[str]]:
    """Apply up to `count` mutators, each drawn among those that apply; returns the mutant
    and the names applied, in order. ``expose_output`` in the list means main's results
    gained extra tensors at the end (compare the common prefix)."""
    traits = traits or {}
    applied = []
    pool = [MUTATORS[n] for n in (names or sorted(MUTATORS))]
    for _ in range(count):
        ok = [m for m in pool if m.applies(mod, traits)]
        if not ok:
            break
        m = ok[int(rng.integers(len(ok)))]
        mod = m.apply(mod, rng, traits)
        applied.append(m.name)
    return mod, applied


from . import algebra, functions, structure  # noqa: E402 - each registers its mutators
