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

from . import algebra, functions, structure  # each registers its mutators
from .ir import prepare_for_build
from .registry import MUTATORS, Mutator, mutate, mutator

__all__ = ["MUTATORS", "Mutator", "mutate", "mutator", "prepare_for_build", "algebra", "functions", "structure"]
