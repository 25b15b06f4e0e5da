"""The pass catalog: `passes.yaml` (and users' catalogs), pass sequences, and their minimisation.

`passes.yaml`, at the top of the repository, holds every dialect's catalog, a section each
(`relax:`, `relay:`, each holding a `passes:` list). A user's catalog takes the same form, or,
serving one dialect only, just the `passes:` list at the top; a campaign reads its dialect's
section of each file.

The catalog is data: each pass's constructor arguments, phase, the properties it
requires and establishes (`FuseOps` requires what `AnnotateTIROpPattern` establishes,
which requires `legalized`), and whether it must preserve results. A sequence is drawn so
that every pass's requirements were established earlier in it; passes may repeat and come
in unusual orders. A failing sequence is shrunk by delta debugging to a minimal one that
still fails, trying only sequences that respect the requirements.

Loading a catalog never imports TVM (the coordinator must not); each dialect turns a
step into a pass in its workers, importing user factories (`import: package.module:factory`).
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..data import PASS_CATALOG
from ..errors import HirfuzzError

PHASES = ("high-level", "legalisation", "lowering")
_KEYS = {"name", "import", "args", "phase", "requires", "establishes", "ends", "preserves_results",
         "approximation", "draw", "runs_inside_it", "one_root_cause", "input_dtypes", "note"}
_APPROXIMATION_KEYS = {"rtol", "atol", "max_magnitude"}


@dataclass(frozen=True)
class PassEntry:
    name: str
    phase: str = "high-level"
    args: dict = field(default_factory=dict)            # name -> list of choices
    requires: tuple[str, ...] = ()
    establishes: tuple[str, ...] = ()
    ends: tuple[str, ...] = ()                          # properties it may destroy (normal forms)
    preserves_results: bool = True
    # how far a pass that may change results may move them ({rtol, atol, max_magnitude?});
    # None for such a pass: its results are judged by the crash and well-formedness oracles only
    approximation: dict | None = None
    draw: bool = True
    # TVM's passes this one runs inside itself (not as a Sequential's constituents), each of
    # which can run alone: blamed where it alone fails alike (dialects.base.innermost_failing)
    runs_inside_it: tuple[str, ...] = ()
    # every failure this pass shows is one root cause (its rewrite is one small function whose
    # fault shows as several messages, or as a death: the note says which), so a finding that
    # fails in it is keyed on the pass alone (core.finding.pass_root_key)
    one_root_cause: bool = False
    # the dtypes its documentation says every operator of its input computes in (empty: any);
    # a case outside them is not judged under a sequence holding it (input_contract_unmet)
    input_dtypes: tuple[str, ...] = ()
    import_path: str | None = None                      # "package.module:factory"
    search_dir: str | None = None                       # where the user's catalog lives
    source: str = ""                                    # the catalog file it came from
    note: str = ""

    def __hash__(self):
        return hash(self.name)


@dataclass(frozen=True)
class CatalogSection:
    """Where a dialect's built-in catalog is: its section of a catalog file."""
    file: Path
    dialect: str


# the built-in catalog a caller that names none means (Relax's, as dialects.relax declares it)
RELAX_CATALOG = CatalogSection(PASS_CATALOG, "relax")


@dataclass
class Catalog:
    entries: dict[str, PassEntry]
    # passes that reduction tries in place of any pass of a failing sequence (after that
    # pass's own `runs_inside_it`): reduction_steps.StandIn
    stand_ins: tuple[str, ...] = ()

    def names(self) -> list[str]:
        return list(self.entries)

    def drawable(self) -> list[PassEntry]:
        return [e for e in self.entries.values() if e.draw]


# --- loading ---------------------------------------------------------------------------------

def _read_entry(where: str, raw, search_dir: str, source: str) -> PassEntry:
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str) or not raw["name"]:
        raise HirfuzzError(f"{where}: each entry is a mapping with a string 'name'")
    name = raw["name"]
    where = f"{where} ({name})"
    extra = set(raw) - _KEYS
    if extra:
        raise HirfuzzError(f"{where}: unknown key(s) {sorted(extra)}; allowed: {sorted(_KEYS)}")
    phase = raw.get("phase", "high-level")
    if phase not in PHASES:
        raise HirfuzzError(f"{where}: phase must be one of {', '.join(PHASES)}, not {phase!r}")
    args = raw.get("args") or {}
    if not isinstance(args, dict) or not all(isinstance(v, list) and v for v in args.values()):
        raise HirfuzzError(f"{where}: 'args' maps each argument name to a non-empty list of choices")
    props = {}
    for key in ("requires", "establishes", "ends"):
        value = raw.get(key) or []
        if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
            raise HirfuzzError(f"{where}: '{key}' is a list of property names")
        props[key] = tuple(value)
    inside = raw.get("runs_inside_it") or []
    if not isinstance(inside, list) or not all(isinstance(p, str) and p for p in inside):
        raise HirfuzzError(f"{where}: 'runs_inside_it' is a list of pass names")
    dtypes = raw.get("input_dtypes") or []
    if not isinstance(dtypes, list) or not all(isinstance(d, str) and d for d in dtypes):
        raise HirfuzzError(f"{where}: 'input_dtypes' is a list of dtype names")
    for key in ("preserves_results", "draw", "one_root_cause"):
        if key in raw and not isinstance(raw[key], bool):
            raise HirfuzzError(f"{where}: '{key}' is true or false")
    imp = raw.get("import")
    if imp is not None and (not isinstance(imp, str) or imp.count(":") != 1 or not all(imp.split(":"))):
        raise HirfuzzError(f"{where}: 'import' is 'package.module:factory', not {imp!r}")
    if not isinstance(raw.get("note", ""), str):
        raise HirfuzzError(f"{where}: 'note' is text")
    preserves = raw.get("preserves_results", True)
    return PassEntry(name, phase, args, props["requires"], props["establishes"], props["ends"], preserves,
                     _read_approximation(where, raw.get("approximation"), preserves), raw.get("draw", True),
                     tuple(inside), raw.get("one_root_cause", False), tuple(dtypes), imp, search_dir, source,
                     raw.get("note", ""))


def _read_approximation(where: str, raw, preserves: bool) -> dict | None:
    """`approximation: {rtol, atol, max_magnitude?}`, for a pass that may change results only."""
    if raw is None:
        return None
    if preserves:
        raise HirfuzzError(f"{where}: 'approximation' is for a pass with preserves_results: false")
    if not isinstance(raw, dict) or not {"rtol", "atol"} <= set(raw) <= _APPROXIMATION_KEYS:
        raise HirfuzzError(f"{where}: 'approximation' maps rtol and atol (and optionally max_magnitude) "
                           "to numbers")
    for key, value in raw.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise HirfuzzError(f"{where}: approximation '{key}' is a number >= 0, not {value!r}")
    return {key: float(value) for key, value in raw.items()}


def module_dir(module: str, catalog_dir: str, where: str) -> str | None:
    """The folder a user's pass module is imported from, found as the campaign finds it:
    beside the catalog, then on PYTHONPATH, then in the working directory (None: installed).

    Workers, reproducer checks, reductions and replays put that folder on sys.path
    themselves, so a module that was only on the campaign's PYTHONPATH is not lost when
    its reproducer later runs alone. Only file names are looked at: importing the module
    would import TVM, which the coordinator never does.
    """
    top = module.split(".")[0]
    pythonpath = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    for folder in [catalog_dir, *pythonpath, os.getcwd()]:
        base = Path(folder) / top
        if base.with_suffix(".py").is_file() or base.is_dir() or any(Path(folder).glob(f"{top}.*.so")):
            return str(Path(folder).resolve())
    if importlib.util.find_spec(top) is not None:  # installed: any interpreter finds it alone
        return None
    raise HirfuzzError(f"{where}: cannot find module '{top}' beside the catalog ({catalog_dir}), on "
                       "PYTHONPATH or in the working directory")


def _read_yaml(path: Path):
    import yaml  # here, not at the top: Relay workers import user_factory where PyYAML is absent
    try:
        return yaml.safe_load(path.read_text())
    except OSError as exc:
        raise HirfuzzError(f"{path}: cannot read the pass catalog ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" line {mark.line + 1}" if mark is not None else ""
        raise HirfuzzError(f"{path}{line}: not valid YAML ({getattr(exc, 'problem', exc)})") from None


def _entries(path: Path, doc, dialect: str, known: list[str]) -> tuple[list[PassEntry], list[str]]:
    """The entries a catalog file holds for `dialect`, and the stand-ins it names."""
    where, section = _dialect_section(path, doc, dialect, known)
    entries = [_read_entry(f"{path}: {_key(where, 'passes')}[{i}]", raw, str(path.resolve().parent), str(path))
               for i, raw in enumerate(section["passes"])]
    return entries, _read_stand_ins(f"{path}: {_key(where, 'stand_ins')}", section.get("stand_ins"))


def _key(section: str, key: str) -> str:
    """How an error names `key` of a catalog file's `section` ("" : the file's top)."""
    return f"{section}.{key}" if section else key


def _read_stand_ins(where: str, raw) -> list[str]:
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(name, str) and name for name in raw):
        raise HirfuzzError(f"{where}: a list of pass names")
    return raw


def _sections(builtin_doc, dialect: str) -> list[str]:
    """The dialects a catalog file may hold a section for: the built-in catalog's sections,
    one per dialect hirfuzz knows (read there, so that core/ needs no list of dialects)."""
    if isinstance(builtin_doc, dict) and "passes" not in builtin_doc:
        return list(builtin_doc)
    return [dialect]


def _dialect_section(path: Path, doc, dialect: str, known: list[str]) -> tuple[str, dict]:
    """The part of a catalog file that serves `dialect`, and where it stands in it: the file
    itself (one that serves one dialect, its `passes:` list at the top), or that dialect's
    section."""
    form = f"a 'passes' list, or a section per dialect ({', '.join(known)}) each holding one"
    if not isinstance(doc, dict):
        raise HirfuzzError(f"{path}: expected a mapping: {form}")
    if "passes" in doc:
        both = [name for name in known if name in doc]
        if both:
            raise HirfuzzError(f"{path}: holds both a 'passes' list and section(s) {', '.join(both)}; "
                               f"expected {form}")
        where, section = "", doc
    else:
        unknown = [name for name in doc if name not in known]
        if unknown:
            raise HirfuzzError(f"{path}: unknown section(s) {', '.join(map(str, unknown))}; expected {form}")
        if dialect not in doc:
            raise HirfuzzError(f"{path}: no '{dialect}' section (it has {', '.join(doc) or 'none'}), so "
                               f"nothing for a {dialect} campaign")
        where, section = dialect, doc[dialect]
    if not isinstance(section, dict) or not isinstance(section.get("passes"), list):
        raise HirfuzzError(f"{path}: expected '{_key(where, 'passes')}' to hold a list of passes")
    return where, section


def load_catalog(user_files: list[str | Path] | None = None, builtin: CatalogSection | None = None) -> Catalog:
    """A dialect's built-in catalog (Relax's unless another is named) plus that dialect's part
    of users' catalogs, validated as a whole."""
    builtin = builtin or RELAX_CATALOG
    builtin_doc = _read_yaml(builtin.file)
    known = _sections(builtin_doc, builtin.dialect)
    entries: dict[str, PassEntry] = {}
    stand_ins: dict[str, Path] = {}  # each stand-in, and the file that named it
    for path in [builtin.file] + [Path(p) for p in user_files or []]:
        doc = builtin_doc if path == builtin.file else _read_yaml(path)
        found, named = _entries(path, doc, builtin.dialect, known)
        for e in found:
            if e.name in entries:
                raise HirfuzzError(f"{path}: pass '{e.name}' is already in the catalog")
            if e.import_path is None and path != builtin.file:
                raise HirfuzzError(f"{path}: pass '{e.name}' needs 'import: package.module:factory'")
            entries[e.name] = e
        stand_ins.update({name: path for name in named if name not in stand_ins})
    _check_requirements(entries)
    _check_runs_inside(entries)
    _check_stand_ins(stand_ins, entries, builtin.dialect)
    for name, e in entries.items():  # where each user module is, once the catalog holds together
        if e.import_path is not None:
            entries[name] = replace(e, search_dir=module_dir(e.import_path.split(":")[0], e.search_dir,
                                                             f"{e.source}: pass '{name}'"))
    return Catalog(entries, tuple(stand_ins))


def _check_requirements(entries: dict[str, PassEntry]):
    """Every required property is established by some pass, and every pass can run.

    Passes become runnable once what they require is established by runnable passes; a
    pass that never does sits on a precondition cycle (A needs B's property, B needs A's).
    """
    providers: dict[str, list[str]] = {}
    for e in entries.values():
        for p in e.establishes:
            providers.setdefault(p, []).append(e.name)
    for e in entries.values():
        for p in e.requires:
            if p not in providers:
                raise HirfuzzError(f"{e.source}: pass '{e.name}' requires '{p}', which no pass in the "
                                   "catalog establishes")
    have: set[str] = set()
    runnable: set[str] = set()
    changed = True
    while changed:
        changed = False
        for e in entries.values():
            if e.name not in runnable and all(p in have for p in e.requires):
                runnable.add(e.name)
                have.update(e.establishes)
                changed = True
    stuck = [e for e in entries.values() if e.name not in runnable]
    if stuck:
        e = stuck[0]
        why = "; ".join(f"'{p}' comes only from {', '.join(providers[p])}" for p in e.requires if p not in have)
        raise HirfuzzError(f"{e.source}: precondition cycle: pass '{e.name}' can never run ({why})")


def _check_runs_inside(entries: dict[str, PassEntry]):
    """Each pass a pass runs inside itself is one of TVM's passes in the catalog, other than
    itself: a worker makes it by name, with its default arguments, to run it alone."""
    for e in entries.values():
        for inner in e.runs_inside_it:
            if inner == e.name or inner not in entries or entries[inner].import_path is not None:
                raise HirfuzzError(f"{e.source}: pass '{e.name}': runs_inside_it names '{inner}', which is not "
                                   "another of TVM's passes in the catalog (one without 'import')")


def _check_stand_ins(stand_ins: dict[str, Path], entries: dict[str, PassEntry], dialect: str):
    """Each stand-in is a pass of the catalog: reduction makes its step from its entry."""
    for name, path in stand_ins.items():
        if name not in entries:
            raise HirfuzzError(f"{path}: stand_ins names '{name}', which is not a pass in the {dialect} catalog")


# --- user passes (in workers) ----------------------------------------------------------------

def user_module(step: dict):
    """The module a user's step names (`import: package.module:factory`), imported from the
    folder recorded in the step."""
    if step.get("search_dir") and step["search_dir"] not in sys.path:
        sys.path.insert(0, step["search_dir"])
    return importlib.import_module(step["import"].split(":")[0])


def user_factory(step: dict):
    """The factory a user's step names. Imports only the user's module: each dialect calls
    it and passes the step's arguments to what it returns."""
    return getattr(user_module(step), step["import"].split(":")[1])


def user_steps(catalog: Catalog) -> list[dict]:
    """A step for each of the user's passes and each choice of each of its arguments (the
    others at their first choice): what the worker's catalog check makes before a campaign."""
    return [_step(entry, args) for entry in catalog.entries.values() if entry.import_path
            for args in argument_variants(entry.args)]


# --- sequences -------------------------------------------------------------------------------

def parse_sequence(text: str, catalog: Catalog) -> list[dict]:
    """--pass-seq A,B,C: each name in the catalog; arguments take their first choice."""
    seq = []
    for name in [n.strip() for n in text.split(",") if n.strip()]:
        if name not in catalog.entries:
            raise HirfuzzError(f"--pass-seq: unknown pass '{name}'; see --list-passes")
        entry = catalog.entries[name]
        seq.append(_step(entry, {k: v[0] for k, v in entry.args.items()}))
    if not seq:
        raise HirfuzzError("--pass-seq: expected a comma-separated list of pass names")
    missing = unmet_requirements(seq, catalog)
    if missing:
        raise HirfuzzError(f"--pass-seq: {missing}")
    return seq


def _step(entry: PassEntry, args: dict) -> dict:
    """A step of a sequence as plain data (it travels to workers and into reproducers). A pass
    that may change results says so in its step, with how far (oracle.Approximation reads it)."""
    step = {"name": entry.name, "args": args}
    if entry.runs_inside_it:  # for the worker's search for the pass to blame (dialects.base.innermost_failing)
        step["runs_inside_it"] = list(entry.runs_inside_it)
    if entry.input_dtypes:  # for the judge (input_contract_unmet)
        step["input_dtypes"] = list(entry.input_dtypes)
    if not entry.preserves_results:
        step["approximation"] = {"compared": entry.approximation is not None, **(entry.approximation or {})}
    if entry.import_path:
        step["import"] = entry.import_path
        step["search_dir"] = entry.search_dir
    return step


def input_contract_unmet(steps: list[dict], graph) -> str | None:
    """Why a program (`graph`) is outside the documented input of a pass of `steps` (its
    catalog entry's input_dtypes: every operator computes in one of them), or None. What a
    pass does to a program it does not take is no bug of it: such a configuration is not
    judged (oracles.base.OracleDefinition.not_judged)."""
    for step in steps:
        allowed = step.get("input_dtypes")
        others = sorted({node.dtype for node in graph.operators} - set(allowed)) if allowed else []
        if others:
            return f"{step['name']} takes programs computing in {', '.join(allowed)} only, not {', '.join(others)}"
    return None


def stand_ins_for(step: dict, catalog: Catalog) -> list[dict]:
    """The steps reduction tries in place of `step` (reduction_steps.StandIn): the passes its
    pass runs inside itself (`runs_inside_it`), then the catalog's stand-ins, each once and
    with its first choice of arguments (as --pass-seq makes them), none of them the pass itself."""
    entry = catalog.entries.get(step["name"])
    names = dict.fromkeys([*(entry.runs_inside_it if entry else ()), *catalog.stand_ins])
    return [_step(catalog.entries[name], {k: v[0] for k, v in catalog.entries[name].args.items()})
            for name in names if name != step["name"]]


def unmet_requirements(seq: list[dict], catalog: Catalog) -> str | None:
    have: set[str] = set()
    for step in seq:
        entry = catalog.entries[step["name"]]
        lacking = [p for p in entry.requires if p not in have]
        if lacking:
            return f"'{entry.name}' requires {', '.join(lacking)}, which no earlier pass establishes"
        have = _after(entry, have)
    return None


def _after(entry: PassEntry, have: set[str]) -> set[str]:
    """The properties that hold once the pass has run: it may end some, then establishes its own
    (ToANormalForm ends graph normal form and establishes A-normal form)."""
    return (have - set(entry.ends)) | set(entry.establishes)


def draw_sequence(catalog: Catalog, rng, max_len: int = 6, only_preserving: bool = False) -> list[dict]:
    """A random sequence that respects requirements; repeats and odd orders allowed. Passes
    that may change results are drawn too (their steps say how far: see _step), unless
    `only_preserving`.

    A pass that establishes a property is often followed at once by one that needs it
    (LegalizeOps, AnnotateTIROpPattern, FuseOps, FuseTIR), so that deep pipelines, and
    high-level passes placed after them, are not left to luck.
    """
    pool = [e for e in catalog.drawable() if e.preserves_results or not only_preserving]
    have: set[str] = set()
    fresh: set[str] = set()
    seq = []
    for _ in range(int(rng.integers(1, max_len + 1))):
        ready = [e for e in pool if all(p in have for p in e.requires)]
        follow = [e for e in ready if fresh & set(e.requires)]
        if follow and rng.random() < 0.7:
            ready = follow
        entry = ready[int(rng.integers(len(ready)))]
        args = {k: choices[int(rng.integers(len(choices)))] for k, choices in entry.args.items()}
        seq.append(_step(entry, args))
        fresh = set(entry.establishes) - have
        have = _after(entry, have)
    return seq


def minimise_sequence(seq: list[dict], fails, catalog: Catalog, max_checks: int = 24,
                      max_seconds: float = 60.0) -> list[dict]:
    """Delta debugging over the sequence, trying only requirement-respecting subsequences."""
    from .reduce import Budget, ddmin
    return ddmin(seq, fails, Budget(max_checks, max_seconds),
                 admissible=lambda trial: unmet_requirements(trial, catalog) is None)


def argument_variants(args: dict) -> list[dict]:
    """Each choice of each argument once, the others at their first choice (for checks that
    try every choice without trying every combination)."""
    first = {k: v[0] for k, v in args.items()}
    return [first] + [{**first, name: c} for name, choices in args.items() for c in choices[1:]]


def describe(seq: list[dict]) -> str:
    parts = []
    for step in seq:
        args = ", ".join(f"{k}={v!r}" for k, v in step["args"].items())
        parts.append(f"{step['name']}({args})")
    return ", ".join(parts) or "(no passes)"
