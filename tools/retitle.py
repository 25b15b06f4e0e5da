"""Each finding's saved title beside the one hirfuzz gives it now, from its finding.json and
case.json alone (no TVM): to review a change to titles on real campaigns.

    python tools/retitle.py OUT [OUT ...]

Prints, per finding, the saved and the regenerated title with their lengths, then how many
of each are cut (" ...") and their mean length.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hirfuzz.campaign.titles import ELLIPSIS, title  # noqa: E402
from hirfuzz.core.graph import Graph  # noqa: E402
from hirfuzz.dialects import dialect_info  # noqa: E402


def titles_of(folder: Path) -> tuple[str, str]:
    """(saved, regenerated) titles of one finding folder."""
    finding = json.loads((folder / "finding.json").read_text())
    case = json.loads((folder / "case.json").read_text())
    info = dialect_info(case["settings"].get("dialect", "relax"))
    saved = (folder / "bug-report.md").read_text().splitlines()[0].removeprefix("### ")
    plan = (case.get("lowering") or {}).get("plan")
    return saved, title(finding, Graph.from_json(case["graph"]), info, plan)


def _cut(text: str) -> bool:
    return text.endswith(ELLIPSIS) or f"{ELLIPSIS})" in text


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    pairs = []
    for out in map(Path, argv):
        if not (out / "findings").is_dir():
            print(f"retitle: error: {out}: no findings/ folder (not a campaign's --out)", file=sys.stderr)
            return 2
        for folder in sorted(p for p in (out / "findings").iterdir() if (p / "finding.json").exists()):
            saved, now = titles_of(folder)
            pairs.append((saved, now))
            print(f"{out.name}/{folder.name}\n  saved ({len(saved)}): {saved}\n  now   ({len(now)}): {now}")
    if pairs:
        for label, index in (("saved", 0), ("now", 1)):
            texts = [pair[index] for pair in pairs]
            print(f"{label}: {sum(map(_cut, texts))} of {len(texts)} cut, mean length "
                  f"{sum(map(len, texts)) / len(texts):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
