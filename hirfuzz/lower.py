"""Lowering: a Graph becomes a Relax IRModule (HIRGen Algorithm 2, base form).

Each variable becomes a parameter of ``main``, each constant a ``relax.const``, each
operator one ``relax.op.*`` call emitted through a ``BlockBuilder`` inside a dataflow block;
ops that return tuples are followed by ``TupleGetItem`` for the parts used. ``main``
returns the graph's results (a tuple when there are several). This module imports TVM and
runs only inside workers.
"""
from __future__ import annotations

import numpy as np
import tvm
from tvm import relax

from .graph import Graph, Ref


def relax_op(path: str):
    """`relax.op.<path>`, e.g. "nn.conv2d"; raises AttributeError for an unknown op."""
    fn = relax.op
    for part in path.split("."):
        fn = getattr(fn, part)
    return fn


def tensor_type(t) -> relax.TensorType:
    return relax.TensorType(list(t.shape), t.dtype)


def op_call(spec, node, args_env: dict) -> relax.Expr:
    """The Relax call for one operator node; `args_env` maps input names to Relax exprs."""
    env = dict(node.attrs)
    env["dtype"] = node.dtype
    arg_env = {**env, **args_env}
    if spec.call_args is not None:
        args = [a(arg_env) for a in spec.call_args]
    else:
        args = [args_env[i.name] for i in spec.inputs]
    if spec.call_kwargs is not None:
        kwargs = {k: v(env) for k, v in spec.call_kwargs.items()}
    else:
        kwargs = {k: env[k] for k in spec.kwarg_names()}
    return relax_op(spec.relax)(*args, **kwargs)


def lower_graph(graph: Graph, specs) -> tvm.IRModule:
    params = [relax.Var(f"x{n.id}", tensor_type(n.type)) for n in graph.variables]
    exprs: dict[Ref, relax.Expr] = {}
    for p, n in zip(params, graph.variables):
        exprs[Ref(n.id)] = p
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            for node in graph.nodes:
                if node.kind == "const":
                    exprs[Ref(node.id)] = relax.const(np.asarray(node.value, dtype=node.type.dtype), node.type.dtype)
                if node.kind != "op":
                    continue
                spec = specs.ops[node.op]
                args_env = {}
                for ispec, item in zip(spec.inputs, node.inputs):
                    args_env[ispec.name] = ([exprs[r] for r in item] if isinstance(item, list)
                                            else exprs[item])
                value = bb.emit(op_call(spec, node, args_env))
                if spec.multi_output:
                    for i in range(len(node.outputs)):
                        exprs[Ref(node.id, i)] = bb.emit(relax.TupleGetItem(value, i))
                else:
                    exprs[Ref(node.id)] = value
            results = [exprs[r] for r in graph.results()]
            out = results[0] if len(results) == 1 else relax.Tuple(results)
            out = bb.emit_output(out)
        bb.emit_func_output(out)
    return bb.get()
