"""Targets: how configurations name them, and what each cannot build (TVM-free: both
sides of the worker pipe read this).

A configuration's target is what TVM is given: a kind ("llvm") or, for a GPU, a dict naming
its architecture ({"kind": "cuda", "arch": "sm_90"}), resolved from the workers' handshake
(`resolve_target`), so neither a worker nor a reproducer depends on TVM detecting the GPU.
TVM 0.27 takes no target strings with options ("cuda -arch=sm_90" is refused); both 0.19
and 0.27 take dicts (relax.build only as a Target). `target_kind` reads a target's kind
either way, so no other place takes a target apart.

`targets.yaml` says, per target kind, the lowering-plan features (core/plan.py) its build
cannot lower, each with the error seen and a note; a campaign with that target strips them
from every case's plan (`TargetLimits`). What an op spec's instance cannot build on a
target is the op spec's own `targets:` field (core/spec.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from typing import Any, Iterable

from ..errors import HirfuzzError

TARGET_KINDS = ("llvm", "cuda")

# the lowering-plan features a target may be unable to lower: node features of
# core.plan.NODE_FEATURES, and `dynamic_param` (LoweringPlan.dynamic_params)
PLAN_FEATURES = ("if_shape", "if_prim", "match_cast", "shape_of", "tuple", "dynamic_param")

TARGETS_FILE = "targets.yaml"


def target_kind(target: str | dict) -> str:
    """The kind of a target named as a string ("cuda -arch=sm_90" -> "cuda") or a dict
    ({"kind": "cuda", "arch": "sm_90"} -> "cuda")."""
    if isinstance(target, dict):
        kind = target.get("kind")
        if not isinstance(kind, str):
            raise HirfuzzError(f"target {target!r}: a target dict needs a string 'kind'")
        return kind
    words = str(target).split()
    if not words:
        raise HirfuzzError("an empty target name")
    return words[0].split("-")[0]


def target_kinds(targets: Iterable[str | dict]) -> tuple[str, ...]:
    """The kinds of a campaign's targets, in order, each once."""
    return tuple(dict.fromkeys(target_kind(t) for t in targets))


@dataclass(frozen=True)
class Unlowerable:
    """A plan feature a target kind cannot lower, with the error its build gives."""
    feature: str
    error: str
    note: str


@dataclass(frozen=True)
class TargetLimits:
    """Per target kind, the plan features it cannot lower (targets.yaml)."""
    unlowerable: dict[str, tuple[Unlowerable, ...]]

    def features_unlowerable(self, kinds: Iterable[str]) -> tuple[str, ...]:
        """The plan features any of these target kinds cannot lower, in PLAN_FEATURES order."""
        found = {u.feature for kind in kinds for u in self.unlowerable.get(kind, ())}
        return tuple(f for f in PLAN_FEATURES if f in found)


def load_target_limits(text: str | None = None, where: str = f"hirfuzz/{TARGETS_FILE}") -> TargetLimits:
    """Read and check targets.yaml (or `text`, for tests); a mistake is one HirfuzzError
    naming the file, the target and the entry."""
    import yaml  # here, not above: workers read targets too, and Relay's environment has no yaml
    if text is None:
        text = resources.files("hirfuzz").joinpath(TARGETS_FILE).read_text()
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise HirfuzzError(f"{where}: not valid YAML: {getattr(exc, 'problem', exc)}") from None
    if not isinstance(doc, dict) or set(doc) != {"targets"} or not isinstance(doc["targets"], dict):
        raise HirfuzzError(f"{where}: expected a mapping with 'targets' (target kind: its limits)")
    limits = {}
    for kind, block in doc["targets"].items():
        at = f"{where}: target '{kind}'"
        if kind not in TARGET_KINDS:
            raise HirfuzzError(f"{at}: unknown target kind; known: {', '.join(TARGET_KINDS)}")
        if not isinstance(block, dict) or set(block) - {"unlowerable"}:
            raise HirfuzzError(f"{at}: expected a mapping with 'unlowerable' (a list of plan features)")
        entries = block.get("unlowerable") or []
        if not isinstance(entries, list):
            raise HirfuzzError(f"{at}, field 'unlowerable': expected a list of entries")
        limits[kind] = tuple(_read_unlowerable(f"{at}, unlowerable[{i}]", e) for i, e in enumerate(entries))
    return TargetLimits(limits)


def _read_unlowerable(at: str, entry: Any) -> Unlowerable:
    if not isinstance(entry, dict) or set(entry) != {"feature", "error", "note"}:
        raise HirfuzzError(f"{at}: expected a mapping with exactly 'feature', 'error' and 'note'")
    if entry["feature"] not in PLAN_FEATURES:
        raise HirfuzzError(f"{at}: unknown plan feature {entry['feature']!r}; known: {', '.join(PLAN_FEATURES)}")
    for fld in ("error", "note"):
        if not isinstance(entry[fld], str) or not entry[fld].strip():
            raise HirfuzzError(f"{at}, field '{fld}': expected a non-empty string")
    return Unlowerable(entry["feature"], entry["error"], entry["note"])


def target_label(target) -> str:
    """How messages spell a target: "llvm", "cuda (sm_90)" (keys take its kind alone)."""
    if isinstance(target, dict) and target.get("arch"):
        return f"{target['kind']} ({target['arch']})"
    return target_kind(target)


def resolve_target(target, hello: dict):
    """The target as a configuration carries it, given what a worker said of its machine
    (the handshake's `devices`): a cuda target names the first GPU's architecture and the
    limits TVM's schedules read (dialects.base.installation_of)."""
    gpu = hello.get("devices", {}).get("cuda_target")
    if target_kind(target) == "cuda" and not isinstance(target, dict) and gpu:
        return dict(gpu)
    return target
