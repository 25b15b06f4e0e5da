"""The user's pass catalog, checked before a campaign starts (in the coordinator; TVM-free).

A pass of the user's own (`import: package.module:factory` in a `--passes` file) that cannot
be made fails every case that draws it, the same way each time: a module that raises on
import, a factory that raises or is missing, a factory that returns something other than a
pass. Without this check each such failure was filed as a finding of TVM's, confirmed even,
since its reproducer fails alike. A worker under the TVM under test makes every step of the
user's passes (each choice of each argument) before the first case, and a broken one stops
the campaign with one line per broken pass naming its file, the pass and the error.
"""
from __future__ import annotations

from ..core.passes import Catalog, user_steps
from ..errors import HirfuzzError
from .sandbox import Death


def check_user_passes(worker, catalog: Catalog, timeout_s: float):
    """Raise HirfuzzError unless each of the catalog's user passes imports and makes a
    tvm.transform.Pass in `worker` (one of the pool's, idle)."""
    steps = user_steps(catalog)
    if not steps:
        return
    reply = worker.run_one({"kind": "check-passes", "steps": steps}, timeout_s)
    if not isinstance(reply, dict) or reply.get("status") != "ok":
        files = sorted({catalog.entries[step["name"]].source for step in steps})
        what = reply.describe() if isinstance(reply, Death) else str(reply)[:300]
        raise HirfuzzError(f"{', '.join(files)}: the worker checking these passes failed ({what}) while "
                           "importing their modules and calling their factories")
    first: dict[str, str] = {}  # a pass's first problem (the others are often the same one)
    for problem in reply["problems"]:
        first.setdefault(problem["name"], problem["problem"])
    if first:
        raise HirfuzzError("\n".join(
            f"{catalog.entries[name].source}: pass '{name}' ({catalog.entries[name].import_path}): {problem}"
            for name, problem in first.items()))
