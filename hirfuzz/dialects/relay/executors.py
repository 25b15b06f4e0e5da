"""HIRGen's four Relay executors: build a module under a configuration, run it (TVM 0.19).

A configuration's `kind` names the executor (dialects/relay/__init__.py). Building happens
inside the configuration's PassContext; for `create_executor` kinds that is where
`evaluate()` compiles. The graph executor and `relay.build` take only one dataflow `main`
by design: a module with other functions, closures or `If` raises `ExecutorCannotTake`,
which the worker reports as a skip, never as a finding.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import tvm
from tvm import relay
from tvm.contrib import graph_executor

from ...core.targets import target_kind
from ..base import ExecutorCannotTake, build_pass_watcher

GRAPH_ONLY = ("build", "graph")   # executors that take a dataflow main only


def keep_one_libinfo() -> None:
    """TVM 0.19's `relay.backend.lower_call` asks `tvm.support.libinfo()` whether indices
    are 64-bit once for every static dimension of every call it lowers, and each call
    builds a dict of libtvm's compile-time flags anew (about 4 ms): a build with one kept
    copy takes 1/1.15 of the time (tools/bench_relay_build.py). The flags are constants of
    the libtvm loaded, so the worker asks once: nothing compiled changes."""
    from tvm.relay.backend import te_compiler
    flags = tvm.support.libinfo()
    te_compiler.libinfo = lambda: dict(flags)  # a copy, as TVM's gives: no caller can change another's


keep_one_libinfo()


def device_for(config: dict):
    """The device a configuration's target runs on."""
    return tvm.cuda(0) if target_kind(config["target"]) == "cuda" else tvm.cpu(0)


def language_features(mod: tvm.IRModule) -> list[str]:
    """What in `mod` keeps it from the graph executor: other global functions, closures, If."""
    found = set()
    if len(mod.functions) > 1:
        found.add("global functions")

    def visit(node):
        if isinstance(node, relay.Function):
            found.add("closures")
        elif isinstance(node, relay.If):
            found.add("If")
        elif isinstance(node, relay.GlobalVar):
            found.add("global functions")
    relay.analysis.post_order_visit(mod["main"].body, visit)
    return sorted(found)


@dataclass
class Built:
    """What building made: a compiled library (`relay.build`, loaded into a fresh graph
    module for each run) or `create_executor`'s function (which holds its compiled code)."""
    kind: str
    product: object
    input_names: tuple = ()


@dataclass
class Executable:
    kind: str
    function: object    # a callable taking arrays (create_executor) or a graph module (build)
    input_names: tuple = ()   # main's parameters, which a graph module takes by name


def build(mod: tvm.IRModule, config: dict) -> Built:
    kind = config["kind"]
    if kind in GRAPH_ONLY:
        features = language_features(mod)
        if features:
            raise ExecutorCannotTake(f"the {kind} executor takes a dataflow main only; this module has "
                                     f"{', '.join(features)}")
    dev = device_for(config)
    with tvm.transform.PassContext(opt_level=config["opt_level"], instruments=[build_pass_watcher()]):
        if kind == "build":
            lib = relay.build(mod, target=tvm.target.Target(config["target"]))
            return Built(kind, lib, tuple(p.name_hint for p in mod["main"].params))
        function = relay.create_executor(kind, mod=mod, device=dev, target=tvm.target.Target(config["target"])).evaluate()
    return Built(kind, function)


def load(built: Built, config: dict) -> Executable:
    """A runnable executor: a new graph module for a library (none keeps another run's
    inputs), the function itself otherwise."""
    if built.kind == "build":
        dev = device_for(config)
        with tvm.transform.PassContext(opt_level=config["opt_level"]):
            return Executable(built.kind, graph_executor.GraphModule(built.product["default"](dev)),
                              built.input_names)
    return Executable(built.kind, built.product)


def flatten(value) -> list[np.ndarray]:
    if isinstance(value, tvm.nd.NDArray):
        return [value.numpy()]
    if isinstance(value, (list, tuple)) or hasattr(value, "__len__"):
        return [a for v in value for a in flatten(v)]
    return [np.asarray(value)]


def run(executable: Executable, config: dict, inputs: list[np.ndarray]) -> list[np.ndarray]:
    dev = device_for(config)
    if executable.kind != "build":
        return flatten(executable.function(*[tvm.nd.array(a, dev) for a in inputs]))
    graph = executable.function
    for name, a in zip(executable.input_names, inputs):
        if graph.get_input_index(name) >= 0:  # an input the program never reads is dropped
            graph.set_input(name, tvm.nd.array(a, dev))
    graph.run()
    return [graph.get_output(i).numpy() for i in range(graph.get_num_outputs())]
