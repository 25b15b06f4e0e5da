"""A user's pass catalogs whose passes cannot be made (tests/user_passes/), and what a
campaign given one must say: one line for each broken pass, naming the catalog file, the
pass and the error, and exit status 2 before any case runs (issue 24, item 7). The passes
work with any TVM, so both dialects' tests use them."""
import json
import subprocess
from pathlib import Path

FOLDER = Path(__file__).resolve().parent / "user_passes"
BROKEN = FOLDER / "broken.yaml"
GOOD = FOLDER / "good.yaml"

# each broken pass, and the end of its line
EXPECTED = {
    "ImportRaises": "(raises_on_import:make): importing raises_on_import raised RuntimeError: "
                    "raises_on_import: this module is broken",
    "FactoryRaises": "(user_factories:raises): raises() raised ValueError: raises: cannot make this pass",
    "MissingFactory": f"(user_factories:nowhere): module user_factories ({FOLDER / 'user_factories.py'}) "
                      "has no attribute 'nowhere'",
    "NotAPass": "(user_factories:undecorated): undecorated() returned a function, not a tvm.transform.Pass",
    "Picky": "(user_factories:picky): picky(mode='broken') raised ValueError: picky: unknown mode 'broken'",
}


def check_refused(proc: subprocess.CompletedProcess, out: Path):
    """The campaign stopped at once on the broken catalog, saying why in one line a pass."""
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines[0].startswith("hirfuzz: error: "), lines
    lines[0] = lines[0].removeprefix("hirfuzz: error: ")
    assert lines == [f"{BROKEN}: pass '{name}' {end}" for name, end in EXPECTED.items()], lines
    assert not (out / "findings").exists() and not (out / "unconfirmed").exists()  # no case ran


def check_ran(proc: subprocess.CompletedProcess, out: Path, cases: int):
    """The campaign on the good catalog ran its cases, and found nothing in passes that
    change nothing."""
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["cases"] == cases and summary["findings"] == [] and summary["unconfirmed"] == [], summary
