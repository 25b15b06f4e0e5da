"""The mutator registry: `@mutator` adds a rewrite to MUTATORS, `mutate` draws from it (see
the package's docstring). Apart from the package so that the families' modules, which the
package imports to fill it, import `mutator` from a module that does not import them."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import tvm


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
