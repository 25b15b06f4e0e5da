"""Known findings (`--known FILE`): signatures a campaign counts but never files again.

A nightly campaign is told what earlier ones found, so that it reports only what is new.
FILE is either a text file of finding signatures (one a line; blank lines and lines
starting with `#` are skipped) or an earlier campaign's `--out` folder, whose saved
findings (findings/, unconfirmed/ and spec-disagreements/) give their signatures. A
finding whose signature is known is a hit of that known finding: counted per signature,
never reduced or saved. Bad input is a HirfuzzError naming the path.
"""
from __future__ import annotations

import json
from pathlib import Path

from ..core.finding import root_keys
from ..errors import HirfuzzError
from .outdir import FINDING_FOLDERS, MARKER


def load_known(path: str) -> frozenset[str]:
    """The signatures FILE names (a signature list, or a campaign folder's findings)."""
    where = Path(path)
    if where.is_dir():
        return _campaign_signatures(where, path)
    if not where.exists():
        raise HirfuzzError(f"--known {path}: no such file or folder")
    try:
        text = where.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise HirfuzzError(f"--known {path}: cannot read it as a text file of signatures ({exc})") from None
    lines = (line.strip() for line in text.splitlines())
    return frozenset(line for line in lines if line and not line.startswith("#"))


def _campaign_signatures(folder: Path, shown: str) -> frozenset[str]:
    """The signatures of the findings a campaign folder saved (pending ones are not
    finished, hirfuzz-bugs/ are hirfuzz's own: neither is a known TVM finding)."""
    if not (folder / MARKER).is_file():
        raise HirfuzzError(f"--known {shown}: a folder with no {MARKER}, so not a hirfuzz campaign's --out; "
                           "give a campaign folder or a text file of signatures")
    signatures = set()
    for name in FINDING_FOLDERS:
        root = folder / name
        for finding in sorted(root.glob("*/finding.json")) if root.is_dir() else []:
            if not finding.parent.name.startswith("."):  # a folder still being written
                signatures.update(_signature_of(finding))
    return frozenset(signatures)


def _signature_of(finding: Path) -> set[str]:
    """A saved finding's signature, and its root keys where it has them (a later finding with
    that root cause is known: findings.FindingTables.join_root)."""
    try:
        data = json.loads(finding.read_text())
    except (OSError, ValueError) as exc:
        raise HirfuzzError(f"--known: {finding} is unreadable or corrupt ({exc})") from None
    signature = data.get("signature") if isinstance(data, dict) else None
    if not isinstance(signature, str) or not signature:
        raise HirfuzzError(f"--known: {finding} names no signature")
    extra = data.get("extra") if isinstance(data.get("extra"), dict) else {}
    return {signature} | {key for key in root_keys(extra) if isinstance(key, str)}


class KnownFindings:
    """The known signatures, and how often this campaign hit each (checkpointed through
    the counters, so a resumed campaign goes on counting)."""

    def __init__(self, signatures: frozenset[str], hits: dict[str, int]):
        self.signatures = signatures
        self.hits = hits  # the campaign's Counters.known: signature -> hits

    def hit(self, signature: str, count: int = 1) -> bool:
        """Count `count` hits if the signature is known; say whether it was."""
        if signature not in self.signatures:
            return False
        self.hits[signature] = self.hits.get(signature, 0) + count
        return True
