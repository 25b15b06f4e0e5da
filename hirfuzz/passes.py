"""The pass catalog: `passes.yaml`, validated. A malformed entry is named by file and index."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from .errors import HirfuzzError

DEFAULT_CATALOG = Path(__file__).resolve().parent.parent / "passes.yaml"
PHASES = ("high-level", "legalisation", "lowering")


@dataclass(frozen=True)
class PassEntry:
    name: str
    phase: str
    preserves_results: bool


def load_catalog(path: str | Path | None = None) -> list[PassEntry]:
    path = Path(path) if path is not None else DEFAULT_CATALOG
    try:
        doc = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise HirfuzzError(f"{path}: cannot read the pass catalog ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        raise HirfuzzError(f"{path}: not valid YAML ({getattr(exc, 'problem', exc)})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("passes"), list):
        raise HirfuzzError(f"{path}: expected a mapping whose 'passes' key holds a list")
    entries, seen = [], set()
    for i, raw in enumerate(doc["passes"]):
        where = f"{path}: passes[{i}]"
        if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
            raise HirfuzzError(f"{where}: each entry is a mapping with a string 'name'")
        extra = set(raw) - {"name", "phase", "preserves_results"}
        if extra:
            raise HirfuzzError(f"{where} ({raw['name']}): unknown key(s) {sorted(extra)}")
        phase = raw.get("phase", "high-level")
        if phase not in PHASES:
            raise HirfuzzError(f"{where} ({raw['name']}): phase must be one of {', '.join(PHASES)}")
        if raw["name"] in seen:
            raise HirfuzzError(f"{where}: pass '{raw['name']}' is listed twice")
        seen.add(raw["name"])
        entries.append(PassEntry(raw["name"], phase, bool(raw.get("preserves_results", True))))
    return entries
