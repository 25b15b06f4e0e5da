"""Coverage feedback that does not depend on how many case makers there are.

Case `i` is generated against the coverage of cases `< i - COVERAGE_LAG`, whatever made
them and in whichever order they came back: a case maker can start case `i` as soon as
those are in, so up to COVERAGE_LAG cases are made at once, and the seed alone fixes every
graph (campaign.makers). The ledger keeps, for each coverage key, the first case that added
it; the coverage case `i` sees is the keys first added before `i - COVERAGE_LAG`, folded into
`base` as the cases are made in index order.

A checkpoint saves the keys of the cases made so far (coverage.json) and, for the last
COVERAGE_LAG of them, which case added each first (`recent`): a resumed campaign's next
cases then see exactly what an uninterrupted campaign's would. coverage.json lists the keys
by the case that added them first (then as JSON text): each key is written as JSON once,
as it is folded into the base, so a checkpoint only joins text however long the campaign.
"""
from __future__ import annotations

import json

from ..core.coverage import CRITERIA, Coverage, jsonable_key, key_of_json

# How far behind the coverage a case is generated against may be (in cases). It caps the
# cases made at once; a fixed number, so that it is the same with 1 maker or 64.
COVERAGE_LAG = 16


class CoverageLedger:
    def __init__(self, lag: int = COVERAGE_LAG):
        self.lag = lag
        self.first: dict[tuple[str, object], int] = {}  # (criterion, key) -> the first case that added it
        self.base = Coverage()   # the keys first added by a case before `base_upto`
        self._base_text: dict[str, list[str]] = {c: [] for c in CRITERIA}  # its keys as JSON, in coverage.json's order
        self.base_upto = 0
        self._later: dict[int, set] = {}  # case -> the (criterion, key)s it added first, not in base yet
        self.total = Coverage()  # every key merged: the campaign's coverage figures

    def merge(self, index: int, added: Coverage):
        """What case `index` added (its layered coverage's keys), in any order of cases."""
        for criterion in CRITERIA:
            for key in added.sets[criterion]:
                self.total.sets[criterion].add(key)
                if key in self.base.sets[criterion]:
                    continue
                entry = (criterion, key)
                earlier = self.first.get(entry)
                if earlier is not None and earlier <= index:
                    continue
                if index < self.base_upto:
                    raise RuntimeError(f"case {index} merged after cases up to {self.base_upto} were generated "
                                       f"without it: makers ran more than {self.lag} cases ahead")
                self.first[entry] = index
                if earlier is not None:
                    self._later[earlier].discard(entry)
                self._later.setdefault(index, set()).add(entry)

    def base_for(self, index: int) -> Coverage:
        """The coverage case `index` is generated against (cases are asked for in index order:
        what was folded into the base stays)."""
        upto = index - self.lag
        for case in sorted(c for c in self._later if c < upto):
            for criterion, key, text in _as_text(self._later.pop(case)):
                self.base.sets[criterion].add(key)
                self._base_text[criterion].append(text)
        self.base_upto = max(self.base_upto, upto)
        return self.base

    # --- checkpoints ----------------------------------------------------------------------

    def saved(self, made_upto: int) -> tuple[str, list]:
        """(coverage.json's text: the keys of the cases before `made_upto`, `recent`:
        [criterion, key, case] for those the last `lag` of them added first)."""
        texts = {c: list(keys) for c, keys in self._base_text.items()}
        recent = []
        for case in sorted(c for c in self._later if c < made_upto):
            for criterion, key, text in _as_text(self._later[case]):
                texts[criterion].append(text)
                if case >= made_upto - self.lag:
                    recent.append([criterion, jsonable_key(key), case])
        return "{" + ", ".join(f'"{c}": [{", ".join(keys)}]' for c, keys in texts.items()) + "}", recent

    def restore(self, coverage: dict, recent: list):
        """Back to what `saved` wrote: the keys of `recent` as their cases added them, every
        other one seen before any case to come looks (in coverage.json's order)."""
        self.__init__(self.lag)
        later = {(criterion, key_of_json(key)): case for criterion, key, case in recent}
        for criterion in CRITERIA:
            for saved_key in coverage.get(criterion, []):
                key = key_of_json(saved_key)
                self.total.sets[criterion].add(key)
                case = later.get((criterion, key))
                if case is None:
                    self.base.sets[criterion].add(key)
                    self._base_text[criterion].append(json.dumps(saved_key))
                    continue
                self.first[(criterion, key)] = case
                self._later.setdefault(case, set()).add((criterion, key))


def _as_text(entries) -> list[tuple[str, object, str]]:
    """(criterion, key, the key as JSON) for one case's keys, in a fixed order."""
    return sorted(((criterion, key, json.dumps(jsonable_key(key))) for criterion, key in entries),
                  key=lambda entry: (entry[0], entry[2]))
