"""Call records: each operator node resolved, in the coordinator, into the call a worker makes.

A record is plain data: the op's name in the dialect, its positional and keyword
arguments, whether it returns a tuple, and its traits (spec.TRAITS: what the mutators
may rely on; `op_traits` gathers them into a table for the worker). An argument is `{"input": [i]}` (the node's
i-th input), `{"input": [i, j]}` (the j-th tensor of a variadic i-th input),
`{"list": [...]}`, `{"layout_map": [perm, split, factor]}` (an index function, rebuilt
by the worker) or `{"value": v}`. With records, a worker needs neither the op specs
(YAML) nor z3, only TVM and numpy: it can run under any interpreter holding a TVM.
"""
from __future__ import annotations

from .shapes import IndexLambda, layout_map
from .graph import Graph, Node


class _Input:
    """Stands for one input tensor while the spec's call rule arranges the arguments."""

    def __init__(self, *position: int):
        self.position = list(position)


def _encode(value):
    if isinstance(value, _Input):
        return {"input": value.position}
    if isinstance(value, (list, tuple)) and any(isinstance(v, _Input) for v in value):
        return {"list": [_encode(v) for v in value]}
    if isinstance(value, IndexLambda):  # a function is not JSON: its recipe is
        return {"layout_map": list(value.layout)}
    return {"value": value}


def call_record(spec, node: Node) -> dict:
    env = {ispec.name: ([_Input(i, j) for j in range(len(item))] if isinstance(item, list) else _Input(i))
           for i, (ispec, item) in enumerate(zip(spec.inputs, node.inputs))}
    args, kwargs = spec.call_arguments(node.attrs, node.dtype, env)
    return {"op": spec.dialect_op, "args": [_encode(a) for a in args],
            "kwargs": {k: _encode(v) for k, v in kwargs.items()}, "multi_output": spec.multi_output,
            "traits": list(spec.traits)}


def call_records(graph: Graph, specs) -> dict[str, dict]:
    """Every operator node's record, keyed by its id (a string: the request is JSON)."""
    return {str(n.id): call_record(specs.ops[n.op], n) for n in graph.operators}


def op_traits(records) -> dict[str, frozenset[str]]:
    """Op name in the dialect -> its traits, from a case's call records (their values);
    an op in no record has none."""
    return {r["op"]: frozenset(r.get("traits", ())) for r in records}


def decode_argument(arg: dict, items: list):
    """The argument for a worker: `items` holds whatever stands for each input there (one
    value per input, a list of them for a variadic one)."""
    if "input" in arg:
        item = items[arg["input"][0]]
        return item[arg["input"][1]] if len(arg["input"]) == 2 else item
    if "list" in arg:
        return [decode_argument(a, items) for a in arg["list"]]
    if "layout_map" in arg:
        return layout_map(*arg["layout_map"])
    return arg["value"]
