"""A Relay module as text a script can parse back, with its constants apart (runs in workers).

`astext(show_meta_data=True)` appends the tensor constants as a metadata section (a JSON
blob a reader cannot read). hirfuzz prints the program without it, keeps the constants as
NumPy arrays, and the script hands them back to the parser in `init_meta_table`, where the
program's `meta[relay.Constant][k]` finds them. The type comments the printer adds
(`/* ty=... */`) are left out. The text is used only if it parses back to the same module;
where it does not, the type comments stay, and failing that the metadata section.

Attributes the printer moves to the metadata section (an op registered without its attrs
type, like scatter_elements) appear in the program as `meta[relay.attrs.X][k]`, and in the
section as node references: `"axis": "4"` there is the fourth node, not the axis (a
scatter_elements with axis -1 was once read as "axis 4 on a rank-1 input"). Each such
reference gets a comment with the values, `/* axis=-1, reduction="update" */`, which the
parser skips.

A variable bound in two global functions (the same Var object in both: a rewrite that
placed one function's body in another) prints as `%x-malformed-ir`, which no parser
reads: each function is printed with variables of its own, which is the same program.
"""
from __future__ import annotations

import json
import re

import numpy as np
import tvm
from tvm import relay

_METADATA = "#[metadata]"
_TYPE_COMMENT = re.compile(r" /\* ty=[^*]*\*/")
_META_REF = re.compile(r"meta\[([\w.]+)\]\[(\d+)\]")


def module_to_text(mod) -> tuple[str, list[np.ndarray]]:
    """The program's text and its constants (in `meta[relay.Constant]` order); raises if no
    spelling parses back to `mod` (its functions given variables of their own). Tried in
    turn: without the type comments, with them, and the printer's whole text with its
    metadata section (which the parser reads too)."""
    mod = own_variables(mod)
    full = mod.astext(show_meta_data=True)
    program, _, meta = full.partition(_METADATA)
    consts = []
    if meta.strip():
        table = tvm.ir.load_json(meta.strip())
        consts = [c.data.numpy() for c in table.get("relay.Constant", [])]
        program = annotate_meta_attrs(program, table)
        full = program + _METADATA + meta
    typed = relay.transform.InferType()(mod)
    tries = [(_TYPE_COMMENT.sub("", program).strip() + "\n", consts), (program.strip() + "\n", consts), (full, [])]
    for text, arrays in tries:
        try:
            tvm.ir.assert_structural_equal(typed, parse_text(text, arrays), map_free_vars=True)
        except Exception as exc:  # noqa: BLE001 - the next spelling may round-trip
            failure = exc
            continue
        return text, arrays
    raise failure


def annotate_meta_attrs(program: str, table) -> str:
    """`program` with a comment after each `meta[...][k]` that stands for attributes,
    giving their values (the metadata section shows node references instead)."""
    def annotate(match: re.Match) -> str:
        nodes = table.get(match.group(1))
        node = nodes[int(match.group(2))] if nodes is not None and int(match.group(2)) < len(nodes) else None
        if not isinstance(node, tvm.ir.Attrs):
            return match.group(0)
        fields = ", ".join(f"{k}={_attr_text(node[k])}" for k in node.keys())
        return f"{match.group(0)} /* {fields.replace('*/', '* /')} */"
    return _META_REF.sub(annotate, program)


def _attr_text(value) -> str:
    """An attribute's value as Python would write it (an IntImm as its integer)."""
    if isinstance(value, (tvm.tir.IntImm, tvm.tir.FloatImm)):
        return repr(value.value)
    if isinstance(value, str):  # tvm.runtime.String is a str
        return json.dumps(str(value))
    if isinstance(value, (list, tvm.ir.container.Array)):
        return "[" + ", ".join(_attr_text(v) for v in value) + "]"
    return str(value)


def parse_text(text: str, consts: list[np.ndarray]):
    """The module a script gets from the text and constants (what its own lines do)."""
    table = {"relay.Constant": [relay.const(c) for c in consts]} if consts else None
    return relay.transform.InferType()(tvm.relay.parse(text, init_meta_table=table))


def fresh_variables(func: relay.Function) -> relay.Function:
    """`func` with every variable it binds (params, lets, closures, patterns) made anew.

    A Relay variable is bound in one place only: a body placed in a second function as it
    is (same Var objects) makes a module whose text does not parse back (the printer
    writes `%x-malformed-ir`) and whose passes see one variable in two scopes."""
    return tvm.get_global_func("relay._transform.dedup")(func)


def own_variables(mod):
    """`mod` with every variable each global function binds made anew, so that no two
    functions share one (the printer cannot name a shared one); a function that does not
    bind each of its variables once stays as it is (the text check then says so)."""
    functions = {}
    for gv, func in mod.functions.items():
        functions[gv] = func
        if isinstance(func, relay.Function) and relay.analysis.well_formed(func):
            functions[gv] = fresh_variables(func)
    return tvm.IRModule(functions, dict(mod.type_definitions), attrs=mod.attrs)
