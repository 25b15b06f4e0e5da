"""The dialects hirfuzz fuzzes, each behind the `Dialect` interface of `base.py`.

Here is only what the coordinator may know of a dialect without importing TVM: its
executors, its pass catalog and where its worker-side implementation lives. The
implementation (lowering, building, running, mutating, printing) is imported by workers
alone, under the interpreter that holds the TVM under test, as NNSmith loads its
backends lazily.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field

from ..core.passes import CatalogSection
from ..errors import HirfuzzError
from .base import FailureAlias


@dataclass(frozen=True)
class DialectInfo:
    name: str
    tvm: str                      # the TVM it needs, in words, for messages
    executors: dict[str, dict]    # executor name -> its configuration settings
    baseline: str                 # the executor every case is built with first
    catalog: CatalogSection       # the built-in pass catalog: its section of the top-level passes.yaml
    implementation: str           # module whose `DIALECT` is the worker-side Dialect
    reproducer: str               # TVM-free module whose `render_reproducer` writes its scripts
    plan_knobs: dict = field(default_factory=dict)  # lowering features it lacks (core.plan.Knobs: 0)
    mutators: bool = True         # has semantics-preserving mutators (a mutant per case)
    writes_plain_modules: bool = True  # its reproducer writes a plain lowering without a worker
    pass_opt_levels: tuple = (0, 1, 2, 3)  # the opt levels a pass sequence's baseline build is drawn at
    composite_prefix: str = ""    # its spellings that are several ops (never the target of a violation)
    environment: str | None = None  # the managed environment its workers use without --tvm-python
                                    # (None: the Python running hirfuzz)
    # the exception names its TVM gives one failure, which the reproducer checks take as one
    failure_aliases: tuple[FailureAlias, ...] = ()


def _relax() -> DialectInfo:
    from .relax import INFO
    return INFO


def _relay() -> DialectInfo:
    from .relay import INFO
    return INFO


_KNOWN = {"relax": _relax, "relay": _relay}


def dialect_names() -> list[str]:
    return list(_KNOWN)


def dialect_info(name: str) -> DialectInfo:
    if name not in _KNOWN:
        raise HirfuzzError(f"unknown IR dialect '{name}'; known: {', '.join(_KNOWN)}")
    return _KNOWN[name]()


def load_dialect(name: str):
    """The worker-side implementation (imports TVM): workers only."""
    return importlib.import_module(dialect_info(name).implementation).DIALECT
