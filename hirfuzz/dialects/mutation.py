"""The mutator contract every dialect follows (runs in workers; imports no TVM itself).

A mutator is a semantics-preserving rewrite of a module: `Mutator(name, sites, rewrite)`,
registered on its dialect's `MutatorRegistry` by the `@registry.mutator(name, sites)`
decorator on its rewrite. `sites(mod, traits)` lists the places the rewrite can be applied
to (none: its precondition fails); `rewrite(mod, site, rng)` returns a new, well-formed
module that computes the same results, drawing every choice from `rng`, so that (graph,
plan, mutation seed) reproduces a mutant exactly. Mutators compose: a mutant can be mutated
again.

`traits` is the case's table of op traits (dialect op name -> traits, from the call
records: core.calls.op_traits): what a rewrite may assume of an op (elementwise,
commutative, associative) is spec data, never a list in code. An op absent from the table
(a mutant may introduce ops the graph lacks) has no traits.

One idea has one name in every dialect: HIRGen's three function rewrites (section 3.3.2)
are `func_to_closure`, `wrap_return` and `call_wrap` wherever they are written, so that
summary.json counts each under one name.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class Mutator:
    name: str
    sites: Callable[[object, dict], list]                          # (mod, traits) -> sites
    rewrite: Callable[[object, object, np.random.Generator], object]  # (mod, site, rng) -> mutant

    def applies(self, mod, traits: dict) -> bool:
        return bool(self.sites(mod, traits))

    def apply(self, mod, rng: np.random.Generator, traits: dict):
        found = self.sites(mod, traits)
        if not found:
            raise ValueError(f"mutator {self.name} does not apply to this module")
        return self.rewrite(mod, found[int(rng.integers(len(found)))], rng)


class MutatorRegistry:
    """A dialect's mutators by name, and the draw that applies them."""

    # how often a draw takes one of the structure-building mutators where one applies:
    # their mutants survive normalisation and give the function-level passes (lambda
    # lifting, inlining, dead-code elimination, unused-output removal) shapes generation
    # does not, and they are the ones that failed where the original did not
    # (tools/mutation_survival.py); the others stay in the draw
    P_STRUCTURAL = 0.75

    def __init__(self):
        self.mutators: dict[str, Mutator] = {}
        self.structural: set[str] = set()  # names of the structure-building mutators

    def mutator(self, name: str, sites: Callable, structural: bool = False):
        """Register the decorated rewrite(mod, site, rng) as mutator `name`, applied at one
        of the sites that `sites(mod, traits)` finds; `structural`: it builds functions,
        closures, calls between globals or control flow (preferred by the draw)."""
        def register(rewrite: Callable) -> Callable:
            if name in self.mutators:
                raise ValueError(f"mutator {name} is registered twice")
            self.mutators[name] = Mutator(name, sites, rewrite)
            if structural:
                self.structural.add(name)
            return rewrite
        return register

    def mutate(self, mod, rng: np.random.Generator, count: int = 1, traits: dict | None = None,
               names: list[str] | None = None, structural_only: bool = False) -> tuple[object, list[str]]:
        """Apply up to `count` mutators, each drawn among those that apply (of `names`, or
        all; `structural_only`: of the structure-building ones alone, as follow-up mutants
        draw: campaign.followups), a structure-building one with probability P_STRUCTURAL
        where one applies; returns the mutant and the names applied, in order."""
        traits = traits or {}
        applied = []
        pool = [self.mutators[n] for n in (names or sorted(self.mutators))
                if not structural_only or n in self.structural]
        for _ in range(count):
            ok = [m for m in pool if m.applies(mod, traits)]
            if not ok:
                break
            structural = [m for m in ok if m.name in self.structural]
            if structural and len(structural) < len(ok) and rng.random() < self.P_STRUCTURAL:
                ok = structural
            chosen = ok[int(rng.integers(len(ok)))]
            mod = chosen.apply(mod, rng, traits)
            applied.append(chosen.name)
        return mod, applied
