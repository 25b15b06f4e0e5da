"""Targets as configurations carry them, TVM-free (both sides of the worker pipe read them).

A configuration's target is what TVM is given: a kind ("llvm") or, for a GPU, a dict naming
its architecture ({"kind": "cuda", "arch": "sm_90"}), resolved from the worker's handshake,
so neither a worker nor a reproducer depends on TVM detecting the GPU. TVM 0.27 takes no
target strings with options ("cuda -arch=sm_90" is refused); both 0.19 and 0.27 take dicts.
"""
from __future__ import annotations

TARGET_KINDS = ("llvm", "cuda")


def target_kind(target) -> str:
    """"llvm" or "cuda" for a target as configurations carry it (a kind or a dict)."""
    if isinstance(target, dict):
        return target["kind"]
    return target.split()[0].split("-")[0]


def target_label(target) -> str:
    """How messages and keys spell a target: "llvm", "cuda (sm_90)"."""
    if isinstance(target, dict) and target.get("arch"):
        return f"{target['kind']} ({target['arch']})"
    return target_kind(target)


def resolve_target(target, hello: dict):
    """The target as a configuration carries it, given what a worker said of its machine
    (the handshake's `devices`): a cuda target names the first GPU's architecture."""
    arch = hello.get("devices", {}).get("cuda_arch")
    if target_kind(target) == "cuda" and not isinstance(target, dict) and arch:
        return {"kind": "cuda", "arch": arch}
    return target
