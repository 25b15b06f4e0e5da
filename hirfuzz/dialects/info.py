"""What the coordinator may know of a dialect without importing TVM (`DialectInfo`); each
dialect's package declares its own, and `hirfuzz.dialects` lists them. Apart from that
list so that a dialect's package imports it without importing the list that imports it."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..core.passes import CatalogSection
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
