"""The computational graph: plain data, no TVM objects (HIRGen Table 1).

A Graph holds variable, constant and operator nodes. Every node produces one or more
tensors (``outputs``); an operator's inputs are ``Ref``s to (node, output index), or, for a
variadic input, a list of them. The graph's results are the operator outputs that nothing
consumes. A Graph round-trips through JSON without loss, so a test case on disk is just
its JSON.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Union

FORMAT_VERSION = 1


@dataclass(frozen=True)
class TensorType:
    shape: tuple[int, ...]
    dtype: str

    @property
    def rank(self) -> int:
        return len(self.shape)

    def to_json(self):
        return {"shape": list(self.shape), "dtype": self.dtype}

    @staticmethod
    def from_json(d) -> "TensorType":
        return TensorType(tuple(int(v) for v in d["shape"]), str(d["dtype"]))


@dataclass(frozen=True)
class Ref:
    node: int
    index: int = 0


Input = Union[Ref, list]  # a Ref, or a list of Refs for a variadic input


@dataclass
class Node:
    id: int
    kind: str                      # "var", "const" or "op"
    outputs: list[TensorType]
    op: str | None = None          # op spec name, for operators
    dtype: str | None = None       # the op's chosen data type (op-dtype coverage)
    inputs: list[Input] = field(default_factory=list)
    attrs: dict[str, Any] = field(default_factory=dict)
    value: Any = None              # nested lists, for constants

    @property
    def type(self) -> TensorType:
        return self.outputs[0]

    def input_refs(self) -> list[Ref]:
        refs = []
        for item in self.inputs:
            refs.extend(item if isinstance(item, list) else [item])
        return refs

    def to_json(self) -> dict:
        d: dict[str, Any] = {"id": self.id, "kind": self.kind,
                             "outputs": [t.to_json() for t in self.outputs]}
        if self.kind == "op":
            d["op"] = self.op
            d["dtype"] = self.dtype
            d["inputs"] = [_ref_json(i) for i in self.inputs]
            d["attrs"] = self.attrs
        if self.kind == "const":
            d["value"] = self.value
        return d

    @staticmethod
    def from_json(d: dict) -> "Node":
        return Node(
            id=int(d["id"]), kind=d["kind"],
            outputs=[TensorType.from_json(t) for t in d["outputs"]],
            op=d.get("op"), dtype=d.get("dtype"),
            inputs=[_ref_from_json(i) for i in d.get("inputs", [])],
            attrs=dict(d.get("attrs", {})), value=d.get("value"),
        )


def _ref_json(item: Input):
    if isinstance(item, list):
        return [[r.node, r.index] for r in item]
    return [item.node, item.index]


def _ref_from_json(item) -> Input:
    if item and isinstance(item[0], list):
        return [Ref(int(n), int(i)) for n, i in item]
    return Ref(int(item[0]), int(item[1]))


@dataclass
class Graph:
    nodes: list[Node] = field(default_factory=list)
    # variable id -> a value under which every result can be compared, when the generator
    # made the graph (`generate.GraphBuilder.witness`); never saved: inputs are saved instead
    witness: dict | None = field(default=None, compare=False, repr=False)

    def add(self, node: Node) -> Node:
        assert node.id == len(self.nodes), "node ids are positions"
        self.nodes.append(node)
        return node

    def type_of(self, ref: Ref) -> TensorType:
        return self.nodes[ref.node].outputs[ref.index]

    @property
    def variables(self) -> list[Node]:
        return [n for n in self.nodes if n.kind == "var"]

    @property
    def operators(self) -> list[Node]:
        return [n for n in self.nodes if n.kind == "op"]

    def consumers(self) -> dict[Ref, list[int]]:
        used: dict[Ref, list[int]] = {}
        for n in self.nodes:
            for r in n.input_refs():
                used.setdefault(r, []).append(n.id)
        return used

    def results(self) -> list[Ref]:
        """Operator outputs nothing consumes: what the lowered `main` returns."""
        used = self.consumers()
        return [Ref(n.id, i) for n in self.operators for i in range(len(n.outputs))
                if Ref(n.id, i) not in used]

    def to_json(self) -> dict:
        return {"format": FORMAT_VERSION, "nodes": [n.to_json() for n in self.nodes]}

    def dumps(self) -> str:
        return json.dumps(self.to_json(), separators=(",", ":"))

    @staticmethod
    def from_json(d: dict) -> "Graph":
        if d.get("format") != FORMAT_VERSION:
            raise ValueError(f"unsupported graph format {d.get('format')!r}")
        g = Graph()
        for nd in d["nodes"]:
            g.add(Node.from_json(nd))
        return g

    @staticmethod
    def loads(text: str) -> "Graph":
        return Graph.from_json(json.loads(text))
