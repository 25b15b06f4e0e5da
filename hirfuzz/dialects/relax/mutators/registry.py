"""Relax's mutators by name (dialects/mutation.py's contract): the families register on it."""
from __future__ import annotations

from ...mutation import MutatorRegistry

REGISTRY = MutatorRegistry()
MUTATORS = REGISTRY.mutators
mutator = REGISTRY.mutator
