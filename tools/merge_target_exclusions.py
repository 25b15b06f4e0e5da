"""Add the per-target entries a conformance run wrote to the op specs.

    python -m hirfuzz conformance --target cuda --write-targets cuda.yaml
    python tools/merge_target_exclusions.py cuda.yaml [--spec-dir opspecs]

Each op's entries go into its spec as text: under the op's `targets: <target>:` where it has one,
else in a new `targets:` block after its `dialects:` block, so the hand-written files keep their
layout and comments. An entry whose dtypes the op's existing entries already cover (same dialect;
an entry with a `when` condition covers the same error only) is left out, and existing entries,
notes included, are kept as they are. Exit status 2 when an op is in no spec file.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hirfuzz.campaign.target_failures import TargetEntry, read_entries  # noqa: E402
from hirfuzz.core.spec import DEFAULT_SPEC_DIR, load_specs  # noqa: E402
from hirfuzz.errors import SpecError  # noqa: E402


class MergeError(Exception):
    pass


def missing_part(entry: TargetEntry, existing: list[TargetEntry]) -> TargetEntry | None:
    """`entry` less the dtypes the `existing` entries already cover (None if nothing is left)."""
    dialects = entry.dialects or ("",)
    dtypes = [d for d in entry.dtypes
              if not all(any(e.covers(d, dialect, entry.error) for e in existing) for dialect in dialects)]
    if not dtypes:
        return None
    return TargetEntry(entry.error, entry.note, tuple(dtypes), entry.when, entry.dialects)


def render_entry(entry: TargetEntry, indent: str) -> list[str]:
    """An entry as YAML lines at `indent` (where its `- ` goes): lists in flow style, strings as
    JSON (a valid YAML double-quoted scalar)."""
    lines = []
    for i, (key, value) in enumerate(entry.to_yaml().items()):
        text = "[" + ", ".join(value) + "]" if isinstance(value, list) else json.dumps(value, ensure_ascii=False)
        lines.append(f"{indent}{'- ' if i == 0 else '  '}{key}: {text}")
    return lines


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _is_content(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


def _block_end(lines: list[str], start: int, stop: int, indent: int) -> int:
    """The line after the block opened at `start`: the first content line at most `indent` deep,
    with the blank and comment lines before it left outside (they lead what follows)."""
    end = start + 1
    while end < stop and not (_is_content(lines[end]) and _indent(lines[end]) <= indent):
        end += 1
    while end - 1 > start and not _is_content(lines[end - 1]):
        end -= 1
    return end


def _find_key(lines: list[str], start: int, stop: int, indent: int, key: str, block: bool = True) -> int | None:
    """The line of `key:` at `indent` between `start` and `stop`; with `block`, one that opens a
    block (what is merged goes inside it)."""
    pattern = re.compile(rf"^ {{{indent}}}{re.escape(key)}:\s*(#.*)?$")
    for i in range(start, stop):
        if _is_content(lines[i]) and _indent(lines[i]) == indent and lines[i].lstrip().startswith(f"{key}:"):
            if block and not pattern.match(lines[i]):
                raise MergeError(f"line {i + 1}: '{key}:' must open a block (one item a line) to be merged into")
            return i
    return None


def merge_into_text(text: str, op: str, target: str, entries: list[TargetEntry]) -> str:
    """`text` (a spec file) with `entries` added to `op`'s `targets: <target>:`."""
    lines = text.split("\n")
    op_line = next((i for i, ln in enumerate(lines)
                    if re.match(rf"^\s*- name:\s*{re.escape(op)}\s*(#.*)?$", ln)), None)
    if op_line is None:
        raise MergeError(f"no op '{op}'")
    field = _indent(lines[op_line]) + 2
    op_end = _block_end(lines, op_line, len(lines), field - 2)
    targets_line = _find_key(lines, op_line + 1, op_end, field, "targets")
    if targets_line is None:
        dialects_line = _find_key(lines, op_line + 1, op_end, field, "dialects", block=False)
        at = op_end if dialects_line is None else _block_end(lines, dialects_line, op_end, field)
        new = [f"{' ' * field}targets:", f"{' ' * (field + 2)}{target}:"]
    else:
        targets_end = _block_end(lines, targets_line, op_end, field)
        target_line = _find_key(lines, targets_line + 1, targets_end, field + 2, target)
        if target_line is None:
            at, new = targets_end, [f"{' ' * (field + 2)}{target}:"]
        else:
            at, new = _block_end(lines, target_line, targets_end, field + 2), []
    for entry in entries:
        new += render_entry(entry, " " * (field + 4))
    return "\n".join(lines[:at] + new + lines[at:])


def _spec_files(spec_dir: Path) -> dict[str, tuple[Path, dict]]:
    """op -> (its file, its parsed entry)."""
    where = {}
    for path in sorted(spec_dir.glob("*.yaml")):
        for op in (yaml.safe_load(path.read_text()) or {}).get("ops") or []:
            where[op["name"]] = (path, op)
    return where


def merge(found: dict[str, dict[str, list[TargetEntry]]], spec_dir: Path) -> list[str]:
    """Merge `found` (read_entries) into the spec files of `spec_dir`; a line per entry added."""
    where = _spec_files(spec_dir)
    unknown = [op for op in found if op not in where]
    if unknown:
        raise MergeError(f"no op spec in {spec_dir} for {', '.join(unknown)}")
    texts = {path: path.read_text() for path, _ in where.values()}
    added = []
    for op, targets in found.items():
        path, spec = where[op]
        for target, entries in targets.items():
            existing = [TargetEntry.from_yaml(e) for e in ((spec.get("targets") or {}).get(target) or [])]
            missing = [m for m in (missing_part(e, existing) for e in entries) if m is not None]
            if not missing:
                continue
            try:
                texts[path] = merge_into_text(texts[path], op, target, missing)
            except MergeError as exc:
                raise MergeError(f"{path}: op '{op}': {exc}") from None
            added += [f"{path.name}: {op}: {target}: {m.dtypes or 'every dtype'}: {m.error}" for m in missing]
            _check_round_trip(path, texts[path], op, target, existing + missing)
    for path, text in texts.items():
        if text != path.read_text():
            path.write_text(text)
    load_specs(spec_dir)  # the merged folder loads as hirfuzz reads it (every dialect's block checked)
    return added


def _check_round_trip(path: Path, text: str, op: str, target: str, expected: list[TargetEntry]) -> None:
    """The merged text parses, and gives the op exactly its old entries and the new ones."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise MergeError(f"{path}: merging op '{op}' would leave invalid YAML: {exc}") from None
    spec = next(o for o in doc["ops"] if o["name"] == op)
    got = [TargetEntry.from_yaml(e) for e in spec["targets"][target]]
    if got != expected:
        raise MergeError(f"{path}: op '{op}': the merged text reads back as {got}, not {expected}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("entries", help="the file `conformance --write-targets` wrote")
    ap.add_argument("--spec-dir", default=None, help="op spec folder (default: opspecs/)")
    args = ap.parse_args(argv)
    try:
        found = read_entries(args.entries)
        added = merge(found, Path(args.spec_dir or DEFAULT_SPEC_DIR))
    except (OSError, ValueError, yaml.YAMLError, MergeError, SpecError) as exc:
        print(f"merge_target_exclusions: {exc}", file=sys.stderr)
        return 2
    for line in added:
        print(line)
    print(f"{len(added)} entries added")
    return 0


if __name__ == "__main__":
    sys.exit(main())
