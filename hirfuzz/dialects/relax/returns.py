"""What a pass must keep: the type each public function returns.

A pass may refine what a public function returns (a symbolic shape made static) but never
contradict it: a caller of `main` was promised its type. well_formed does not check this
(it checks each function against itself), so a pass that rewrites an operator into a
computation of another shape (DecomposeOpsForTraining's layer_norm over a leading axis
gives (2, 2) for (2, 1)) leaves a well-formed module that computes the wrong thing, which
a check-only sequence would otherwise never see and later passes trip over in as many
places as there are consumers.

This module is copied verbatim into check.py (dialects/relax/repro.py), so that the
harness fails as the worker does: it imports nothing of hirfuzz's.
"""
from tvm import relax

# the first words of the complaint (core.finding.RETURNS_CHANGED keys on them, without the types)
RETURNS_CHANGED = "a pass changed the type a public function returns"


def returned_types(mod) -> dict:
    """Each public function's name and the type it returns."""
    return {gv.name_hint: func.ret_ty for gv, func in mod.functions.items()
            if isinstance(func, relax.Function) and func.attrs is not None and "global_symbol" in func.attrs}


def what_changed(was, now) -> str:
    """Which part of a returned type changed: a tensor's rank, dtype or shape (the first of a
    tuple's fields that changed: how many results a program has is its own), or its structure."""
    if isinstance(was, relax.TupleType) and isinstance(now, relax.TupleType) and len(was.fields) == len(now.fields):
        changed = [(a, b) for a, b in zip(was.fields, now.fields)
                   if relax.analysis.type_base_check(a, b) == relax.analysis.BaseCheckResult.FAIL_L0]
        return what_changed(*changed[0]) if changed else "structure"
    if not (isinstance(was, relax.TensorType) and isinstance(now, relax.TensorType)):
        return "structure"
    if was.ndim != now.ndim:
        return "rank"
    return "dtype" if str(was.dtype) != str(now.dtype) else "shape"


def check_returns_kept(returned: dict, mod) -> None:
    """Raise ValueError where a public function of `mod` returns a type that contradicts the
    one it returned before (`returned`: returned_types), where both are known: a base check
    that fails at level 0. One that may hold at run time (a symbolic shape) is no complaint."""
    for name, now in returned_types(mod).items():
        was = returned.get(name)
        if was is None or relax.analysis.type_base_check(was, now) != relax.analysis.BaseCheckResult.FAIL_L0:
            continue
        raise ValueError(f"{RETURNS_CHANGED} ({what_changed(was, now)}): {name} returned {was}, now {now}")
