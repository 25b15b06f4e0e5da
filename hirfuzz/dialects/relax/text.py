"""A module as standalone TVMScript, constants included (runs in workers).

`mod.script()` prints tensor constants as `metadata["ir.GenericConst"][k]`, which does not
parse back, and both `script(show_meta=True)` and `tvm.ir.save_json` segfault on Relax
constants in TVM 0.27. So hirfuzz prints the module plainly and replaces each metadata
reference with `_c[k]`, where `_c` is the list of the module's constants (`R.const` of a
NumPy array each) the reproducer defines. The printer numbers constants in the order it
first meets them, which is the order of a left-to-right walk of the functions as printed,
and gives one object used at several places one number: `_c[k]` at each of them is then one
object again, as in the module (FuseTransposeMatmul crashes on matmul(c, permute_dims(c))
with one constant `c` and not with two equal ones). The result is parsed back and compared
structurally with the module, and is only used when the two are equal.

The printer spells a global function's symbolic dimensions as PEP 695 type parameters
(`def main[n3, n4](...)`, after `from __future__ import annotations`) when it runs on
Python 3.12 or later, and as module-level `n3 = TypeVar("n3")` lines otherwise
(`tvm.runtime.script_printer`, `script.use_pep695`). The scripts hirfuzz writes must run
on any Python hirfuzz supports (3.10 on), and a `__future__` import pasted into the middle
of a script is a SyntaxError, so hirfuzz always asks for the TypeVar form.
"""
from __future__ import annotations

import re

import numpy as np
import tvm
from tvm import relax
from tvm.relax.expr_functor import PyExprVisitor, visitor

_META = re.compile(r'metadata\["ir\.GenericConst"\]\[(\d+)\]')
_DEF = re.compile(r"^\s*def (\w+)\(", re.M)


@visitor
class _Constants(PyExprVisitor):
    def __init__(self):
        super().__init__()
        self.found: list = []

    def visit_generic_const_(self, op):
        # some constants (int32 and float32 scalars, say) print inline as R.const(value,
        # dtype) and take no metadata entry: ask the printer about each
        if not any(op.same_as(c) for c in self.found) and "metadata" in op.script():
            self.found.append(op)


def constants_in_print_order(mod, text: str) -> list:
    walker = _Constants()
    names = {gv.name_hint: gv for gv in mod.get_global_vars()}
    for name in _DEF.findall(text):
        gv = names.get(name)
        if gv is not None and isinstance(mod[gv], relax.Function):
            walker.visit_expr(mod[gv])
    return walker.found


def _type_var(name: str):
    return tvm.tirx.Var(name, "int64")


# symbolic dimensions as module-level TypeVars, on any Python (see the docstring)
PRINTER_CONFIG = {"script.use_pep695": False}
_PEP695 = re.compile(r"^from __future__ import annotations$|^\s*def \w+\[", re.M)


def constant(array: np.ndarray):
    """`_c[k]` as the reproducers define it: R.const with its dtype spelt out (R.const would
    turn a float64 array into float32)."""
    return relax.const(array, str(array.dtype))


def module_to_script(mod) -> tuple[str, list[np.ndarray]]:
    """TVMScript text using `_c[k]` (constant k, one object wherever it is used), and the
    constants' arrays; raises if it does not round-trip or needs a newer Python than 3.10."""
    text = mod.script(extra_config=PRINTER_CONFIG)
    if _PEP695.search(text):  # a TVM whose printer ignores the option
        raise ValueError("TVM's printer wrote PEP 695 type parameters (Python 3.12 syntax) despite "
                         "script.use_pep695=False")
    consts = [c.value.numpy() for c in constants_in_print_order(mod, text)]
    used = {int(k) for k in _META.findall(text)}
    if used and max(used) >= len(consts):
        raise ValueError("constants could not be matched with the printed module")
    body = _META.sub(lambda m: f"_c[{m.group(1)}]", text)
    body = body.replace("# Metadata omitted. Use show_meta=True in script() method to show it.", "")
    from tvm.script import ir as I, relax as R, tirx as T  # noqa: E741
    # symbolic dimensions of global functions' signatures print as module-level TypeVar(...)
    names = {"_c": [constant(a) for a in consts], "I": I, "R": R, "T": T, "np": np, "TypeVar": _type_var}
    try:
        parsed = tvm.script.from_source(body, extra_vars=names)
    except Exception:  # noqa: BLE001 - the parser's own well-formedness check can be stricter
        # than relax.analysis.well_formed, which the module passed; parse without it, and
        # keep the text only if it still gives back the very same module
        body = body.replace("@I.ir_module\n", "@I.ir_module(check_well_formed=False)\n", 1)
        parsed = tvm.script.from_source(body, extra_vars=names, check_well_formed=False)
    tvm.ir.assert_structural_equal(mod, parsed, map_free_vars=True)
    return body, consts
