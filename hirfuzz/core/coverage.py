"""Generation coverage (HIRGen 3.1.3): op-dtype, op-shape, op-edge, and op-path (length 3);
in disruptive mode also violation coverage: (op, violation kind, dtype, rank); with a pass
probe (core.probe), probe sites exercised: the patterns the probed pass acted on that
generated graphs contain.

Coverage lives across the graphs of a campaign: a graph is steered towards pairs and
shapes that no earlier graph produced. Keys are plain tuples so that the sets save to JSON.
A graph is generated over a `layered` coverage: what it adds is kept apart from what it
was steered by, so that what each case added can be merged by the campaign
(campaign.makers.CoverageLedger).
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
        return {c: sorted(jsonable_key(k) for k in s) for c, s in self.sets.items()}

    @staticmethod
    def from_json(d: dict) -> "Coverage":
        cov = Coverage()
        for c in CRITERIA:
            cov.sets[c] = {key_of_json(k) for k in d.get(c, [])}
        return cov


class _Over(set):
    """The keys added over a base set; membership looks in the base too."""

    def __init__(self, base: set):
        super().__init__()
        self.base = base

    def __contains__(self, key) -> bool:
        return set.__contains__(self, key) or key in self.base

    def __reduce__(self):  # pickled (a case maker's answer) as the keys added alone
        return set, (list(iter(self)),)


def layered(base: Coverage) -> Coverage:
    """A coverage that reads `base` and keeps what is added apart from it: its sets iterate
    over the keys added only (`base` is left as it is)."""
    return Coverage({c: _Over(base.sets[c]) for c in CRITERIA})


def jsonable_key(key):
    return [jsonable_key(k) for k in key] if isinstance(key, tuple) else key


def key_of_json(key):
    return tuple(key_of_json(k) for k in key) if isinstance(key, list) else key
