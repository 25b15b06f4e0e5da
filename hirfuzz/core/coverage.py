"""Generation coverage (HIRGen 3.1.3): op-dtype, op-shape, op-edge, and op-path (length 3);
in disruptive mode also violation coverage: (op, violation kind, dtype, rank); with a pass
probe (core.probe), probe sites exercised: the patterns the probed pass acted on that
generated graphs contain.

Coverage lives across the graphs of a campaign: a graph is steered towards pairs and
shapes that no earlier graph produced. Keys are plain tuples so that the sets save to JSON.
"""
from __future__ import annotations

from dataclasses import dataclass, field

CRITERIA = ("op_dtype", "op_shape", "op_edge", "op_path", "violation", "probe_site")


@dataclass
class Coverage:
    sets: dict[str, set] = field(default_factory=lambda: {c: set() for c in CRITERIA})

    def new_keys(self, op: str, dtype: str, shapes: tuple, parent_ops: list[str],
                 grandparent_pairs: list[tuple[str, str]]) -> list[tuple[str, tuple]]:
        """The coverage keys an insertion would add that no earlier insertion did."""
        keys = [("op_dtype", (op, dtype)), ("op_shape", (op, shapes))]
        keys += [("op_edge", (p, op)) for p in parent_ops]
        keys += [("op_path", (gp, p, op)) for gp, p in grandparent_pairs]
        return [(c, k) for c, k in keys if k not in self.sets[c]]

    def add(self, keys: list[tuple[str, tuple]]):
        for criterion, key in keys:
            self.sets[criterion].add(key)

    def counts(self) -> dict[str, int]:
        return {c: len(s) for c, s in self.sets.items()}

    def to_json(self) -> dict:
        return {c: sorted(_jsonable(k) for k in s) for c, s in self.sets.items()}

    @staticmethod
    def from_json(d: dict) -> "Coverage":
        cov = Coverage()
        for c in CRITERIA:
            cov.sets[c] = {_tuplify(k) for k in d.get(c, [])}
        return cov


def _jsonable(key):
    return [_jsonable(k) for k in key] if isinstance(key, tuple) else key


def _tuplify(key):
    return tuple(_tuplify(k) for k in key) if isinstance(key, list) else key
