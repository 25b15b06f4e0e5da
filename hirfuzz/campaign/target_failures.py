"""Which conformance samples fail on a target but not on llvm, and the op-spec entries
(`targets: <target>:` in opspecs/*.yaml) that record them.

A conformance run on a target other than llvm builds and runs every sample on llvm as well,
so a failure on the target alone is told from a failure of the spec (which llvm shares).
Only a target-specific failure to BUILD or RUN becomes an exclusion; a wrong result on the
target is a finding to report, never something the generator is told to avoid. Pure data in,
pure data out: no TVM here.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from pathlib import Path

import yaml

from ..core.finding import normalize_message

BASELINE_TARGET = "llvm"
ERROR_LIMIT = 240   # an entry's error is TVM's first line, cut here


class Outcome(Enum):
    PASSED = "passed"            # built, ran, and agreed with the reference
    NOT_COMPARED = "not_compared"  # built and ran; the inputs admit no comparison (or none was run)
    FAILED = "failed"            # TVM raised while building or running it
    WRONG = "wrong"              # built and ran, and disagreed with the reference


@dataclass(frozen=True)
class SampleResult:
    """One sample (op, dtype, index) on one target."""
    op: str
    dtype: str
    index: int
    target: str                  # the target's kind: llvm, cuda
    outcome: Outcome
    stage: str = ""              # where it failed (build, run, ...) when FAILED
    error: str = ""              # "ExcType: first line" when FAILED; the mismatch when WRONG
    description: str = ""        # op, attrs and input types, to reproduce it

    @property
    def key(self) -> tuple[str, str, int]:
        return self.op, self.dtype, self.index


def target_specific_failures(results: list[SampleResult], target: str) -> list[SampleResult]:
    """The samples that failed (to build or run) on `target` while the same sample did not fail
    on llvm. A sample llvm never answered is left out: without the baseline, nothing says the
    failure is the target's."""
    baseline = {r.key: r for r in results if r.target == BASELINE_TARGET}
    return [r for r in results
            if r.target == target and r.outcome is Outcome.FAILED
            and r.key in baseline and baseline[r.key].outcome is not Outcome.FAILED]


def wrong_results(results: list[SampleResult], target: str) -> list[SampleResult]:
    return [r for r in results if r.target == target and r.outcome is Outcome.WRONG]


@dataclass(frozen=True)
class TargetEntry:
    """One `targets: <target>:` entry of an op spec: where the op cannot be built or run there."""
    error: str
    note: str = ""
    dtypes: tuple[str, ...] = ()     # empty: every dtype
    when: str = ""                   # empty: always
    dialects: tuple[str, ...] = ()   # empty: every dialect

    @classmethod
    def from_yaml(cls, raw: dict) -> "TargetEntry":
        return cls(error=str(raw.get("error", "")), note=str(raw.get("note", "")),
                   dtypes=tuple(raw.get("dtypes") or ()), when=str(raw.get("when") or ""),
                   dialects=tuple(raw.get("dialects") or ()))

    def to_yaml(self) -> dict:
        out: dict = {}
        if self.dtypes:
            out["dtypes"] = list(self.dtypes)
        if self.when:
            out["when"] = self.when
        if self.dialects:
            out["dialects"] = list(self.dialects)
        out["error"] = self.error
        out["note"] = self.note
        return out

    def covers(self, dtype: str, dialect: str, error: str) -> bool:
        """Whether this entry accounts for a failure of `dtype` in `dialect` with `error`. An
        entry with a condition is matched by its error instead, as the condition needs the
        sample's inputs and attributes, which a recorded failure does not carry."""
        if self.dtypes and dtype not in self.dtypes:
            return False
        if self.dialects and dialect not in self.dialects:
            return False
        return not self.when or normalize_message(self.error) == normalize_message(error)


KnownEntries = dict[str, dict[str, list[TargetEntry]]]   # op -> target -> entries


def read_known_entries(spec_dir: str | Path) -> KnownEntries:
    """Every op's `targets:` entries in the spec files of `spec_dir`, as written."""
    known: KnownEntries = {}
    for path in sorted(Path(spec_dir).glob("*.yaml")):
        data = yaml.safe_load(path.read_text()) or {}
        for op in data.get("ops") or []:
            targets = op.get("targets") or {}
            known[op["name"]] = {t: [TargetEntry.from_yaml(e) for e in entries or []]
                                 for t, entries in targets.items()}
    return known


def is_known(known: KnownEntries, failure: SampleResult, dialect: str) -> bool:
    entries = known.get(failure.op, {}).get(failure.target, [])
    return any(e.covers(failure.dtype, dialect, failure.error) for e in entries)


def new_entries(failures: list[SampleResult], known: KnownEntries, dialect: str,
                measured: str) -> dict[str, dict[str, list[TargetEntry]]]:
    """The entries that record `failures` not yet known, op -> target -> entries: one entry per
    op, target and error, listing the dtypes that failed with it. `measured` says where and
    when ("conformance --target cuda on <GPU>, TVM <version>, <date>"); the note also says how
    many of the dtype's samples failed, since an entry without a condition excludes them all."""
    groups: dict[tuple[str, str, str], list[SampleResult]] = {}
    for f in failures:
        if not is_known(known, f, dialect):
            groups.setdefault((f.op, f.target, f.error[:ERROR_LIMIT]), []).append(f)
    out: dict[str, dict[str, list[TargetEntry]]] = {}
    for (op, target, error), group in groups.items():
        dtypes = sorted({f.dtype for f in group}, key=[f.dtype for f in group].index)
        stages = sorted({f.stage for f in group})
        note = f"measured: {measured}; fails at {'/'.join(stages)} in {len(group)} sample(s)"
        out.setdefault(op, {}).setdefault(target, []).append(
            TargetEntry(error=error, note=note, dtypes=tuple(dtypes), dialects=(dialect,)))
    return out


def write_entries(path: str | Path, entries: dict[str, dict[str, list[TargetEntry]]], header: str) -> None:
    """The file `--write-targets` writes and tools/merge_target_exclusions.py reads:
    op -> target -> entries, each as it goes into the op's spec."""
    data = {op: {t: [e.to_yaml() for e in es] for t, es in targets.items()} for op, targets in entries.items()}
    text = "".join(f"# {line}\n" for line in header.splitlines())
    Path(path).write_text(text + (yaml.safe_dump(data, sort_keys=False, width=1000) if data else "{}\n"))


def read_entries(path: str | Path) -> dict[str, dict[str, list[TargetEntry]]]:
    data = yaml.safe_load(Path(path).read_text()) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping of op to targets")
    return {str(op): {str(t): [TargetEntry.from_yaml(e) for e in es] for t, es in (targets or {}).items()}
            for op, targets in data.items()}

