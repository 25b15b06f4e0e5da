"""What the coordinator knows of a dialect without importing TVM: its `DialectInfo`.

Each dialect package's `__init__.py` defines one as `INFO`; everything outside
hirfuzz/dialects/ that differs between dialects (the executors, the pass catalog, the words a
bug report uses for building, the IR's namespace in TVM's messages, how `setup` checks an
environment) reads it from there, never from the dialect's name.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field

from ..core.passes import CatalogSection
from .base import FailureAlias


@dataclass(frozen=True)
class SetupCheck:
    """What `python -m hirfuzz setup` runs in a new environment before marking it ready: a
    script that builds and runs for real (an importable TVM can still fail to build) and
    prints a JSON line last, {"tvm": version or null}."""
    name: str      # its name in environments.yaml's `verify:`
    words: str     # what it does, for messages
    script: str


@dataclass(frozen=True)
class DialectInfo:
    name: str
    tvm: str                      # the TVM it needs, in words, for messages
    executors: dict[str, dict]    # executor name -> its configuration settings
    baseline: str                 # the executor every case is built with first
    catalog: CatalogSection       # the built-in pass catalog: its section of the top-level passes.yaml
    implementation: str           # module whose `DIALECT` is the worker-side Dialect
    reproducer: str               # TVM-free module whose `WRITER` is its ReproducerWriter (base.py)
    namespace: str                # its IR's Python namespace in TVM (`tvm.relax`): how TVM's messages name its nodes
    build_words: str              # how a bug report names what compiles a program ("`relax.build`")
    setup_check: SetupCheck       # how setup checks an environment that offers it
    plan_knobs: dict = field(default_factory=dict)  # lowering features it lacks (core.plan.Knobs: 0)
    mutators: bool = True         # has semantics-preserving mutators (a mutant per case)
    writes_plain_modules: bool = True  # its reproducer writes a plain lowering without a worker
    pass_opt_levels: tuple = (0, 1, 2, 3)  # the opt levels a pass sequence's baseline build is drawn at
    composite_prefix: str = ""    # its spellings that are several ops (never the target of a violation)
    environment: str | None = None  # the managed environment its workers use without --tvm-python
                                    # (None: the Python running hirfuzz)
    # the exception names its TVM gives one failure, which the reproducer checks take as one
    failure_aliases: tuple[FailureAlias, ...] = ()
    # the pipelines a build failure on another target is retried under on llvm, to tell a
    # target-independent bug from a target's own (campaign.target_independence); none: not tried
    llvm_pipelines: tuple[str, ...] = ()
    # TVM-free module of its autodiff's terms (`gradient_specs`, `outside_contract`) where its
    # TVM differentiates programs (the gradient oracle: campaign/oracles/gradient.py); None: not
    gradients: str | None = None
    # the factory (`module:function`, a user step's `import`) of a pass that puts back the
    # run-time checks a pass dropped when it typed calls narrower than their operators infer:
    # a crash that goes away with it is keyed on that pass's narrowing
    # (reduction_steps.NarrowingCause); None: not tried
    widening: str | None = None

    def gradient_support(self):
        """Its autodiff's terms (the `gradients` module), or None where it has none."""
        return importlib.import_module(self.gradients) if self.gradients else None

    def declared_no_grad(self) -> dict:
        """op -> the input slots its autodiff declares without a gradient (its gradients'
        DECLARED_NO_GRAD; none where it has no autodiff): the variables reaching one are
        not asked for (core.gradients.float_variables)."""
        gradients = self.gradient_support()
        return gradients.DECLARED_NO_GRAD if gradients else {}

    def reproducer_writer(self):
        """Its ReproducerWriter (TVM-free: the coordinator writes reproducers)."""
        return importlib.import_module(self.reproducer).WRITER
