"""Version triage: a confirmed finding's repro.py run unchanged under other TVM releases,
to tell a regression (it passes on an older release) from a bug as old as the dialect.

A maintainer's first question of a report is "is this new?". The scripts are standalone,
so the answer costs one run per release: each managed environment of the finding's dialect
that is set up (`python -m hirfuzz setup relax-0.25`, ...), or any interpreter named.
"""
from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from ..core.finding import Finding
from ..errors import HirfuzzError
from .environment import script_environment
from .reproducers import HARNESS, REPRO
from .verify import check_reproducer, check_short_reproducer


class Verdict(str, Enum):
    FAILS_ALIKE = "fails alike"
    PASSES = "passes"
    FAILS_OTHERWISE = "fails otherwise"


@dataclass(frozen=True)
class Release:
    """A TVM to try scripts under: its interpreter, the variables it needs, its version."""
    name: str        # the managed environment's name, or the interpreter's path
    python: str
    env: dict
    version: str


def release_of(name: str) -> Release:
    """A managed environment by name (it must be set up), or an interpreter by path."""
    from ..envs import resolve_interpreter
    python, env = resolve_interpreter(name)
    return Release(name, python, env, _tvm_version(name, python, env))


def baseline_of(name: str) -> Release:
    """--baseline: the TVM a pass developer's build started from, with an environment of its
    own: the campaign's PYTHONPATH, which may put the build under test first, is not passed
    on (a managed environment clears it too)."""
    from ..envs import resolve_interpreter
    python, env = resolve_interpreter(name)
    env = {"PYTHONPATH": "", **env}
    return Release(name, python, env, _tvm_version(name, python, env, "--baseline"))


def _tvm_version(name: str, python: str, env: dict, option: str = "--versions") -> str:
    try:
        probe = subprocess.run([python, "-c", "import tvm; print(tvm.__version__)"], capture_output=True, text=True,
                               env=script_environment(env), timeout=300)
    except OSError as exc:
        raise HirfuzzError(f"{option} {name}: cannot run {python}: {exc.strerror}") from None
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["no output"])[-1]
        raise HirfuzzError(f"{option} {name}: {python} cannot import TVM ({last})")
    return probe.stdout.strip().splitlines()[-1]


def ready_environments(dialect: str) -> list[str]:
    """The names of the managed environments of `dialect` that are set up."""
    from ..envs import State, environment_dir, load_environments, read_marker
    return [name for name, spec in load_environments().items()
            if dialect in spec.dialects and read_marker(spec, environment_dir(name))[0] is State.READY]


def campaign_releases(names: list[str] | None, dialect: str, own_python: str | None,
                      own_version: str) -> list[Release]:
    """The releases a campaign's confirmed findings are also tried under: those named
    (--versions), or else every set-up environment of its dialect; less the campaign's own
    TVM, whose verdict its check gave already. A name that is no TVM is an error."""
    from ..envs import resolve_interpreter
    own = Path(own_python or sys.executable).absolute()
    found = []
    for name in ready_environments(dialect) if names is None else names:
        python, env = resolve_interpreter(name)
        if Path(python).absolute() == own:  # the campaign's own interpreter: no need to ask
            continue
        release = Release(name, python, env, _tvm_version(name, python, env))
        if release.version != own_version:
            found.append(release)
    return found


def version_key(version: str) -> tuple[int, ...]:
    """'0.25.0.post1' -> (0, 25, 0, 1): releases in order, a post release after its base."""
    return tuple(int(n) for n in re.findall(r"\d+", version))


def verdict_under(folder: Path, finding: Finding, release: Release, timeout_s: float) -> Verdict:
    """Run the finding's repro.py alone under one release."""
    script = folder / REPRO
    if (folder / HARNESS).exists():  # repro.py is the short script, which prints no marks
        outcome = check_short_reproducer(script, finding, timeout_s, release.python, release.env)
        passed = outcome.observed == "finished without an error"
    else:
        outcome = check_reproducer(script, finding, timeout_s, release.python, release.env)
        passed = outcome.observed.endswith(" ok")
    if outcome.reproduced:
        return Verdict.FAILS_ALIKE
    return Verdict.PASSES if passed else Verdict.FAILS_OTHERWISE


def try_releases(folder: Path, finding: Finding, releases: list[Release], timeout_s: float,
                 own_version: str | None = None) -> dict[str, str]:
    """TVM version -> verdict, oldest release first; `own_version`, where given, is the
    campaign's TVM, on which the finding was confirmed (fails alike, run no more)."""
    verdicts = {r.version: verdict_under(folder, finding, r, timeout_s).value for r in releases}
    if own_version:
        verdicts[own_version] = Verdict.FAILS_ALIKE.value
    return {v: verdicts[v] for v in sorted(verdicts, key=version_key)}


def regression_since(versions: dict[str, str]) -> str | None:
    """The release after the last one where the script passes, when it fails alike on a
    later one; None when no older release passes (the bug is as old as those tried)."""
    ordered = sorted(versions, key=version_key)
    failing = [i for i, v in enumerate(ordered) if versions[v] == Verdict.FAILS_ALIKE.value]
    if not failing:
        return None
    passing = [i for i, v in enumerate(ordered) if versions[v] == Verdict.PASSES.value and i < failing[-1]]
    return ordered[passing[-1] + 1] if passing else None


def versions_sentence(versions: dict[str, str]) -> str:
    """'Fails alike on 0.26.0 and 0.27.0.post1; passes on 0.25.0.post1: a regression since 0.26.0.'"""
    parts = []
    for verdict in Verdict:
        named = [v for v in sorted(versions, key=version_key) if versions[v] == verdict.value]
        if named:
            parts.append(f"{verdict.value} on {and_list(named)}")
    text = "; ".join(parts)
    text = text[:1].upper() + text[1:]
    since = regression_since(versions)
    return f"{text}: a regression since {since}." if since else f"{text}."


def and_list(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
