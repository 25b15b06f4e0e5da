"""A Relay module as text a script can parse back, with its constants apart (runs in workers).

`astext(show_meta_data=True)` appends the tensor constants as a metadata section (a JSON
blob a reader cannot read). hirfuzz prints the program without it, keeps the constants as
NumPy arrays, and the script hands them back to the parser in `init_meta_table`, where the
program's `meta[relay.Constant][k]` finds them. The type comments the printer adds
(`/* ty=... */`) are left out. The text is used only if it parses back to the same module.
"""
from __future__ import annotations

import re

import numpy as np
import tvm
from tvm import relay

_METADATA = "#[metadata]"
_TYPE_COMMENT = re.compile(r" /\* ty=[^*]*\*/")


def module_to_text(mod) -> tuple[str, list[np.ndarray]]:
    """The program's text and its constants (in `meta[relay.Constant]` order); raises if the
    two do not parse back to `mod`."""
    full = mod.astext(show_meta_data=True)
    program, _, meta = full.partition(_METADATA)
    consts = []
    if meta.strip():
        table = tvm.ir.load_json(meta.strip())
        consts = [c.data.numpy() for c in table.get("relay.Constant", [])]
    text = _TYPE_COMMENT.sub("", program).strip() + "\n"
    parsed = parse_text(text, consts)
    tvm.ir.assert_structural_equal(relay.transform.InferType()(mod), parsed, map_free_vars=True)
    return text, consts


def parse_text(text: str, consts: list[np.ndarray]):
    """The module a script gets from the text and constants (what its own lines do)."""
    table = {"relay.Constant": [relay.const(c) for c in consts]} if consts else None
    return relay.transform.InferType()(tvm.relay.parse(text, init_meta_table=table))
