"""The dialects hirfuzz fuzzes, each behind the `Dialect` interface of `base.py`.

Here is only what the coordinator may know of a dialect without importing TVM: its
executors, its pass catalog and where its worker-side implementation lives. The
implementation (lowering, building, running, mutating, printing) is imported by workers
alone, under the interpreter that holds the TVM under test, as NNSmith loads its
backends lazily.
"""
from __future__ import annotations

import importlib

from ..errors import HirfuzzError
from .info import DialectInfo

__all__ = ["DialectInfo", "dialect_info", "dialect_names", "load_dialect"]


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
