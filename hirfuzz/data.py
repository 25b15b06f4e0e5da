"""Where the two files that steer hirfuzz are: `opspecs/` (the op specs: which operators it
draws, and how each dialect spells them) and `passes.yaml` (every dialect's pass catalog:
which passes it orders).

Both stand at the top of the repository, where a pass developer sees them first. A wheel,
whether built from the repository or from its sdist, carries a copy of them inside the
package (setup.py's build step puts it there), and that copy is what an installed hirfuzz
reads. A checkout, and so an editable install, holds no copy: it reads the top-level files
themselves, so an edit there takes effect on the next run.
"""
from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def shipped(name: str) -> Path:
    """The package's copy of a top-level data entry where a wheel put one, else the checkout's."""
    inside = _PACKAGE / name
    return inside if inside.exists() else _PACKAGE.parent / name


SPEC_DIR = shipped("opspecs")
PASS_CATALOG = shipped("passes.yaml")
