"""The dialects hirfuzz fuzzes, each behind the `Dialect` interface of `base.py`.

Each dialect is a sub-package of this one whose `__init__.py` defines `INFO`, its
`DialectInfo` (info.py): what the coordinator may know of it without importing TVM (its
executors, its pass catalog, where its worker-side implementation and its reproducer writer
live). The dialects are the sub-packages found here: adding one is adding its folder
(README.md in this folder says what it must hold). The implementation (lowering, building,
running, mutating, printing) is imported by workers alone, under the interpreter that holds
the TVM under test, as NNSmith loads its backends lazily.
"""
from __future__ import annotations

import functools
import importlib
import pkgutil

from ..errors import HirfuzzError
from .base import FailureAlias
from .info import DialectInfo, SetupCheck

__all__ = ["DialectInfo", "FailureAlias", "SetupCheck", "dialect_info", "dialect_infos", "dialect_names",
           "load_dialect"]


@functools.cache
def _known() -> dict[str, DialectInfo]:
    """Every sub-package's INFO by its name, in the order of the names."""
    infos = {}
    for package in sorted(m.name for m in pkgutil.iter_modules(__path__) if m.ispkg):
        info = importlib.import_module(f"{__name__}.{package}").INFO
        if info.name != package:
            raise HirfuzzError(f"dialect package {package}: its INFO is named '{info.name}'")
        infos[info.name] = info
    return infos


def dialect_names() -> list[str]:
    return list(_known())


def dialect_infos() -> list[DialectInfo]:
    return list(_known().values())


def dialect_info(name: str) -> DialectInfo:
    known = _known()
    if name not in known:
        raise HirfuzzError(f"unknown IR dialect '{name}'; known: {', '.join(known)}")
    return known[name]


def load_dialect(name: str):
    """The worker-side implementation (imports TVM): workers only."""
    return importlib.import_module(dialect_info(name).implementation).DIALECT
