"""A graph written node by node in core.graph's JSON form, for tests that need one exact
program (the gradient tests of both dialects): float64 unless a variable says otherwise."""
from hirfuzz.core.graph import Graph


def graph_of(*nodes: dict) -> Graph:
    return Graph.from_json({"format": 1, "nodes": list(nodes)})


def var(node_id: int, shape: list, dtype: str = "float64") -> dict:
    return {"id": node_id, "kind": "var", "outputs": [{"shape": shape, "dtype": dtype}]}


def op(node_id: int, name: str, inputs: list, shape: list, attrs: dict | None = None) -> dict:
    return {"id": node_id, "kind": "op", "op": name, "dtype": "float64", "inputs": inputs,
            "attrs": attrs or {}, "outputs": [{"shape": shape, "dtype": "float64"}]}
