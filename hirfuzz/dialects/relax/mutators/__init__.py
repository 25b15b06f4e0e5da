"""Mutators: semantics-preserving rewrites of a Relax IRModule (runs inside workers).

Each mutator follows the contract of dialects/mutation.py (`Mutator(name, sites, rewrite)`,
`traits`), registered on Relax's registry (registry.py) by `@mutator(name, sites)` on its
rewrite. `mutate(mod, rng, count, traits)` draws applicable mutators; `prepare_for_build`
(ir.py) runs what TVM requires before `relax.build`.

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

from ...mutation import Mutator
from . import algebra, functions, structure  # noqa: F401 - each registers its mutators
from .ir import prepare_for_build
from .registry import MUTATORS, REGISTRY, mutator

__all__ = ["MUTATORS", "Mutator", "mutate", "mutator", "prepare_for_build", "algebra", "functions", "structure"]

mutate = REGISTRY.mutate
