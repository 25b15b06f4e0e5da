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
from tvm import tirx as tir

from ...core.calls import decode_argument
from ...core.graph import Graph, Ref


def relax_op(path: str):
    """`relax.op.<path>`, e.g. "nn.conv2d"; raises AttributeError for an unknown op."""
    fn = relax.op
    for part in path.split("."):
        fn = getattr(fn, part)
    return fn


def tensor_type(t) -> relax.TensorType:
    return relax.TensorType(list(t.shape), t.dtype)


def op_call(record: dict, items: list) -> relax.Expr:
    """The Relax call of one operator node's call record (core.calls); `items` holds the
    Relax expr of each input (a list of them for a variadic input)."""
    args = [decode_argument(a, items) for a in record["args"]]
    kwargs = {k: decode_argument(v, items) for k, v in record["kwargs"].items()}
    return relax_op(record["op"])(*args, **kwargs)


def lower_graph(graph: Graph, calls: dict, plan=None) -> tvm.IRModule:
    """`main` in one dataflow block; with a `plan` (core.plan.LoweringPlan), as it says.
    `calls` holds each operator node's call record, keyed by its id as a string."""
    if plan is not None:
        return lower_with_plan(graph, calls, plan)
    params = graph_params(graph)
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            exprs = emit_graph(bb, graph, calls, params)
            results = [exprs[r] for r in graph.results()]
            out = results[0] if len(results) == 1 else relax.Tuple(results)
            out = bb.emit_output(out)
        bb.emit_func_output(out)
    return bb.get()


def graph_params(graph: Graph) -> list[relax.Var]:
    """main's parameters: one for each of the graph's variables."""
    return [relax.Var(f"x{n.id}", tensor_type(n.type)) for n in graph.variables]


def emit_graph(bb: relax.BlockBuilder, graph: Graph, calls: dict, params: list[relax.Var]) -> dict[Ref, relax.Expr]:
    """Each of the graph's operators emitted into `bb`'s open block, in order; the Relax
    expr of every value (variables as `params`, constants, each op's outputs)."""
    exprs: dict[Ref, relax.Expr] = {Ref(n.id): p for p, n in zip(params, graph.variables)}
    for node in graph.nodes:
        if node.kind == "const":
            exprs[Ref(node.id)] = relax.const(np.asarray(node.value, dtype=node.type.dtype), node.type.dtype)
        if node.kind != "op":
            continue
        record = calls[str(node.id)]
        items = [[exprs[r] for r in item] if isinstance(item, list) else exprs[item] for item in node.inputs]
        value = bb.emit(op_call(record, items))
        if record["multi_output"]:
            for i in range(len(node.outputs)):
                exprs[Ref(node.id, i)] = bb.emit(relax.TupleGetItem(value, i))
        else:
            exprs[Ref(node.id)] = value
    return exprs


def lower_loss(graph: Graph, calls: dict, loss_dtype: str) -> tvm.IRModule:
    """`main` in one dataflow block, as Relax's Gradient takes it: the graph's ops, then the
    sum of every float result (each R.sum, cast to `loss_dtype`, added), returned as a scalar."""
    from ...core.gradients import float_results
    params = graph_params(graph)
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            exprs = emit_graph(bb, graph, calls, params)
            loss = None
            for ref in float_results(graph):
                term = bb.emit(relax.op.sum(exprs[ref]))
                if graph.type_of(ref).dtype != loss_dtype:
                    term = bb.emit(relax.op.astype(term, loss_dtype))
                loss = term if loss is None else bb.emit(relax.op.add(loss, term))
            out = bb.emit_output(loss)
        bb.emit_func_output(out)
    return bb.get()


# Known TVM 0.27 bugs a plan avoids unless `plan.allow_known_bugs` (reproducers in
# tests/test_lower_features.py::test_known_bug_closure_result_type):
KNOWN_TVM_BUGS = {
    "closure-result-any": (
        "relax.transform.LowerRuntimeBuiltin rewrites invoke_closure/invoke_pure_closure into "
        "vm.builtin.invoke_closure typed R.Any, dropping the ty_args result type; a following "
        "TupleGetItem on the result (closure returning a tuple) or a call of the result (closure "
        "returning a closure) fails with 'The type of Tuple must be TupleType' / 'Call->op must "
        "contains a function type'; inside a lifted function even a single tensor result fed to an op "
        "fails, and so, at times, does an op or a function call taking it ('Argument 0 type "
        "mismatch: expected R.Tensor(...), given R.Any'). Lowering therefore lets only closures "
        "defined in main, returning one tensor that main returns and nothing else reads, and "
        "called directly, capture; other closures take their inputs as parameters."),
    "scan-symbolic-leading-axis": (
        "cumsum and cumprod of a rank-4 tensor with symbolic dimensions along axis 0 or 1 take "
        "minutes to build on llvm (118 s for axis 0, 57 s for axis 1; axis 2 1.2 s, axis 3 and every "
        "static shape 0.03 s): topi's scan indexes the flattened buffer through nested divisions "
        "by the symbolic extents, and codegen_build spends the time in LLVM (every pass of the "
        "pipeline together takes 0.2 s). A campaign met it as a case past its time limit, then "
        "a reproducer that finished in 116 s (an unconfirmed hang); the match_cast feature "
        "therefore leaves such a scan on static shapes."),
}

# the ops "scan-symbolic-leading-axis" is about (the rank and axes: _slow_to_build_dynamic)
SLOW_SYMBOLIC_SCANS = {"cumsum", "cumprod"}


# --- lowering under a plan (features.LoweringPlan): functions, closures, Relax features ---------

def lower_with_plan(graph: Graph, calls: dict, plan) -> tvm.IRModule:
    """`graph` lowered as `plan` says (see features.py); entries naming absent nodes are ignored."""
    return _PlannedLowering(graph, calls, plan).lower()


class _CutNode:
    def __init__(self, cut, members: list[int]):
        self.cut = cut
        self.members = members          # operator ids, ascending
        self.children: list[_CutNode] = []


class _Scope:
    """One function being built: its BlockBuilder, Ref -> expr map and block state."""

    def __init__(self, bb: relax.BlockBuilder, env: dict, name: str = "main"):
        self.bb = bb
        self.env = env
        self.name = name
        self.dataflow = False           # a function scope opens with a plain binding block
        self.df_refs: list[Ref] = []    # refs bound to DataflowVars in the open dataflow block
        self.syms: dict[int, object] = {}  # dimension size -> symbolic tir var (this function)
        self.pos = -1                   # the largest node id emitted so far
        self.is_main = False


class _PlannedLowering:
    def __init__(self, graph: Graph, calls: dict, plan):
        self.graph = graph
        self.calls = calls
        self.plan = plan
        self.op_ids = [n.id for n in graph.operators]
        self.last_use: dict[Ref, int] = {}
        for n in graph.nodes:
            for r in n.input_refs():
                self.last_use[r] = max(self.last_use.get(r, -1), n.id)
        for r in graph.results():
            self.last_use[r] = len(graph.nodes) + 1  # returned: live to the end
        self.consts: dict[int, relax.Expr] = {}
        self.gbb = relax.BlockBuilder()
        self.counter = 0
        self.plain = set(plan.plain_nodes)
        self.roots = self._cut_tree()
        self.consumers = graph.consumers()

    # --- plan validation -------------------------------------------------------------------

    def _cut_tree(self) -> list[_CutNode]:
        accepted: list[_CutNode] = []
        for cut in self.plan.functions:
            members = [i for i in self.op_ids if cut.start <= i <= cut.end]
            if not members or cut.kind not in ("global", "local"):
                continue
            ms = set(members)
            ok = True
            for other in accepted:
                os_ = set(other.members)
                if ms == os_ or not (ms <= os_ or os_ <= ms or not (ms & os_)):
                    ok = False
                    break
            if ok:
                accepted.append(_CutNode(cut, members))
        roots: list[_CutNode] = []
        for node in sorted(accepted, key=lambda c: -len(c.members)):
            parents = [p for p in accepted if p is not node and set(node.members) < set(p.members)]
            if parents:
                min(parents, key=lambda p: len(p.members)).children.append(node)
            else:
                roots.append(node)
        for node in accepted:
            node.children.sort(key=lambda c: c.members[0])
        roots.sort(key=lambda c: c.members[0])
        return roots

    # --- helpers ---------------------------------------------------------------------------

    def _name(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def _value(self, scope: _Scope, ref: Ref) -> relax.Expr:
        node = self.graph.nodes[ref.node]
        if node.kind == "const":
            if node.id not in self.consts:
                self.consts[node.id] = relax.const(np.asarray(node.value, dtype=node.type.dtype), node.type.dtype)
            return self.consts[node.id]
        return scope.env[ref]

    def _live(self, ref: Ref, pos: int) -> bool:
        return self.last_use.get(ref, -1) > pos

    def _set_block(self, scope: _Scope, dataflow: bool):
        if scope.dataflow == dataflow:
            return
        bb = scope.bb
        if scope.dataflow:
            for ref in scope.df_refs:
                if self._live(ref, scope.pos):
                    scope.env[ref] = bb.emit_output(scope.env[ref])
            scope.df_refs = []
        block = bb._end_block()
        if len(block.bindings) > 0:
            bb._func._blocks.append(block)
        if dataflow:
            bb._begin_dataflow_block()
        else:
            bb._begin_binding_block()
        scope.dataflow = dataflow

    def _bind(self, scope: _Scope, ref: Ref, expr: relax.Expr):
        scope.env[ref] = expr
        if isinstance(expr, relax.DataflowVar):
            scope.df_refs.append(ref)

    def _sym(self, scope: _Scope, size: int):
        if size not in scope.syms:
            # names unique in the module: the printer cannot tell apart two functions'
            # symbols of one name, and the reproducer's TVMScript would not parse back alike
            suffix = "" if scope.is_main else f"_{scope.name}"
            scope.syms[size] = tir.Var(f"n{size}{suffix}", "int64")
        return scope.syms[size]

    def _dyn_type(self, scope: _Scope, t, keep_ones: bool = False) -> relax.TensorType:
        """`t` with symbolic dimensions (equal sizes share a symbol); with `keep_ones`, sizes
        of 1 stay static, so that broadcasting stays provable."""
        return relax.TensorType([d if keep_ones and d == 1 else self._sym(scope, d) for d in t.shape], t.dtype)

    # --- the module ------------------------------------------------------------------------

    def lower(self) -> tvm.IRModule:
        dyn = set(self.plan.dynamic_params)
        bb = relax.BlockBuilder()
        scope = _Scope(bb, {})
        scope.is_main = True
        params = []
        for n in self.graph.variables:
            t = self._dyn_type(scope, n.type) if n.id in dyn and n.type.rank > 0 else tensor_type(n.type)
            params.append(relax.Var(f"x{n.id}", t))
        with bb.function("main", params):
            for p, n in zip(params, self.graph.variables):
                if n.id in dyn and n.type.rank > 0:
                    scope.env[Ref(n.id)] = bb.match_cast(p, tensor_type(n.type))
                else:
                    scope.env[Ref(n.id)] = p
            self._emit_items(scope, self.op_ids, self.roots)
            scope.pos = len(self.graph.nodes)
            self._set_block(scope, False)
            results = [self._value(scope, r) for r in self.graph.results()]
            bb.emit_func_output(results[0] if len(results) == 1 else relax.Tuple(results))
        main = bb.get()["main"]
        self.gbb.add_func(main, "main")
        return self.gbb.get()

    def _emit_items(self, scope: _Scope, members: list[int], children: list[_CutNode]):
        child_of = {i: c for c in children for i in c.members}
        done = set()
        for nid in members:
            child = child_of.get(nid)
            if child is None:
                self._emit_op(scope, nid)
            elif id(child) not in done:
                done.add(id(child))
                self._emit_cut(scope, child)

    # --- functions -------------------------------------------------------------------------

    def _consumed(self, refs: list[Ref]) -> bool:
        """Does any operator read one of `refs` (rather than main only returning them)?"""
        return any(r in self.consumers for r in refs)

    def _cut_io(self, members: list[int]) -> tuple[list[Ref], list[Ref]]:
        ms = set(members)
        ins = set()
        for nid in members:
            for r in self.graph.nodes[nid].input_refs():
                if r.node not in ms and self.graph.nodes[r.node].kind != "const":
                    ins.add(r)
        end = members[-1]
        outs = [Ref(nid, i) for nid in members for i in range(len(self.graph.nodes[nid].outputs))
                if self._live(Ref(nid, i), end)]
        return sorted(ins, key=lambda r: (r.node, r.index)), outs

    def _emit_cut(self, scope: _Scope, cnode: _CutNode):
        cut = cnode.cut
        ins, outs = self._cut_io(cnode.members)
        self._set_block(scope, not cut.plain)
        local = cut.kind == "local"
        captured = [r for r in ins if local and r.node in cut.captures
                    and not isinstance(scope.env[r], relax.DataflowVar)]
        if not self.plan.allow_known_bugs and (len(outs) > 1 or cut.as_value or not scope.is_main
                                               or self._consumed(outs)):
            # TVM 0.27 bug (see KNOWN_TVM_BUGS): after LambdaLift a capturing closure is
            # called through invoke_closure, whose result LowerRuntimeBuiltin types as
            # R.Any, so a TupleGetItem on it or a call of it no longer normalises.
            captured = []
        passed = [r for r in ins if r not in captured]
        params = [relax.Var(f"p{r.node}_{r.index}", tensor_type(self.graph.type_of(r))) for r in passed]
        name = self._name("local" if local else "f")
        sub = relax.BlockBuilder()
        with sub.function(name, params, private=True):
            inner = _Scope(sub, {r: scope.env[r] for r in captured}, name)
            inner.env.update(zip(passed, params))
            self._emit_items(inner, cnode.members, cnode.children)
            inner.pos = cnode.members[-1]
            self._set_block(inner, False)
            res = [self._value(inner, r) for r in outs]
            sub.emit_func_output(res[0] if len(res) == 1 else relax.Tuple(res))
        func = sub.get()[name]
        bb = scope.bb
        if not local:
            callee = self.gbb.add_func(func, name)
            if cut.as_value:
                mk = relax.BlockBuilder()
                with mk.function(f"get_{name}", [], private=True):
                    mk.emit_func_output(callee)
                getter = self.gbb.add_func(mk.get()[f"get_{name}"], f"get_{name}")
                callee = bb.emit(relax.Call(getter, []))
        elif cut.as_value:
            mk = relax.BlockBuilder()
            with mk.function(f"make_{name}", [], private=True):
                fv = mk.emit(func, name)
                mk.emit_func_output(fv)
            maker = bb.emit(mk.get()[f"make_{name}"], f"make_{name}")
            callee = bb.emit(relax.Call(maker, []))
        else:
            callee = bb.emit(func, name)
        value = bb.emit(relax.Call(callee, [scope.env[r] for r in passed]))
        if len(outs) == 1:
            self._bind(scope, outs[0], value)
        else:
            for i, r in enumerate(outs):
                self._bind(scope, r, bb.emit(relax.TupleGetItem(value, i)))
        scope.pos = cnode.members[-1]

    # --- one operator ----------------------------------------------------------------------

    def _emit_op(self, scope: _Scope, nid: int):
        node = self.graph.nodes[nid]
        record = self.calls[str(nid)]
        feats = self.plan.node_features.get(nid, [])
        wrap_if = next((f for f in feats if f in ("if_shape", "if_prim")), None)
        self._set_block(scope, not (nid in self.plain or wrap_if))
        bb = scope.bb
        items = [[self._value(scope, r) for r in item] if isinstance(item, list) else self._value(scope, item)
                 for item in node.inputs]
        if "tuple" in feats:
            flat = [e for item in items for e in (item if isinstance(item, list) else [item])]
            tup = bb.emit(relax.Tuple(flat))
            parts = iter([bb.emit(relax.TupleGetItem(tup, i)) for i in range(len(flat))])
            items = [[next(parts) for _ in item] if isinstance(item, list) else next(parts) for item in items]
        if "shape_of" in feats and not isinstance(items[0], list):
            # x reshaped to its own shape, read with shape_of and bound to symbols by match_cast
            # (LegalizeOps reshapes only to a ShapeExpr, not to a Var holding a shape)
            x = items[0]
            t = self.graph.type_of(node.inputs[0])
            dims = [self._sym(scope, d) for d in t.shape]
            bb.match_cast(bb.emit(relax.op.shape_of(x)), relax.ShapeType(dims))
            items[0] = bb.match_cast(bb.emit(relax.op.reshape(x, relax.ShapeExpr(dims))), tensor_type(t))
        dynamic = False
        if "match_cast" in feats and not self._slow_to_build_dynamic(node):
            dyn_items = self._cast_inputs(scope, node, items)
            try:
                probe = bb.normalize(op_call(record, dyn_items))
                if _shape_known(probe.ty):
                    items, dynamic = dyn_items, True
            except Exception:  # noqa: BLE001 - TVM cannot infer this op on symbolic shapes: stay static
                pass
            # where the inferred result shape is unknown (ndim only) or inference fails,
            # the op runs on the static inputs; the casts stay as runtime shape checks
        call = op_call(record, items)
        if wrap_if:
            cond = self._condition(scope, wrap_if, node, items)
            zeros = [relax.op.zeros(list(t.shape), t.dtype) for t in node.outputs]
            other = relax.Tuple(zeros) if record["multi_output"] else zeros[0]
            value = bb.emit(relax.If(cond, relax.SeqExpr([], call), relax.SeqExpr([], other)))
        else:
            value = bb.emit(call)
        if record["multi_output"]:
            outs = [bb.emit(relax.TupleGetItem(value, i)) for i in range(len(node.outputs))]
        else:
            outs = [value]
        for i, (t, e) in enumerate(zip(node.outputs, outs)):
            if dynamic or wrap_if:
                # back to the static type the rest of the graph was lowered for
                if not _same_static(e, t):
                    e = bb.match_cast(e, tensor_type(t))
            self._bind(scope, Ref(nid, i), e)
        scope.pos = nid

    def _slow_to_build_dynamic(self, node) -> bool:
        """A scan TVM 0.27 takes minutes to build on symbolic shapes (KNOWN_TVM_BUGS
        "scan-symbolic-leading-axis"), unless the plan allows known bugs."""
        if self.plan.allow_known_bugs or node.op not in SLOW_SYMBOLIC_SCANS:
            return False
        rank = self.graph.type_of(node.inputs[0]).rank
        axis = node.attrs.get("axis")
        return rank == 4 and axis is not None and axis % rank in (0, 1)

    def _cast_inputs(self, scope: _Scope, node, items):
        bb = scope.bb
        types = [[self.graph.type_of(r) for r in item] if isinstance(item, list) else self.graph.type_of(item)
                 for item in node.inputs]

        def cast(e, t):
            if t.rank == 0:
                return e
            return bb.match_cast(e, self._dyn_type(scope, t, keep_ones=True))
        return [[cast(e, t) for e, t in zip(item, ts)] if isinstance(item, list) else cast(item, ts)
                for item, ts in zip(items, types)]

    def _condition(self, scope: _Scope, kind: str, node, items) -> relax.Expr:
        bb = scope.bb
        flat = [e for item in items for e in (item if isinstance(item, list) else [item])]
        types = [t for item in node.inputs for t in
                 ([self.graph.type_of(r) for r in item] if isinstance(item, list) else [self.graph.type_of(item)])]
        ranked = [(e, t) for e, t in zip(flat, types) if t.rank > 0]
        if not ranked:
            return relax.const(True, "bool")
        x, t = ranked[0]
        if kind == "if_shape":
            # sum of the dimensions of x is at least its rank: every dimension is >= 1
            total = bb.emit(relax.op.sum(bb.emit(relax.op.shape_to_tensor(bb.emit(relax.op.shape_of(x))))))
            return bb.emit(relax.op.greater_equal(total, relax.const(t.rank, "int64")))
        # if_prim: a symbolic dimension bound by match_cast is >= 1
        dims = [self._sym(scope, d) for d in t.shape]
        bb.match_cast(x, relax.TensorType(dims, t.dtype))
        return relax.prim_value(dims[0] >= 1)


def _shape_known(ty) -> bool:
    if isinstance(ty, relax.TupleType):
        return all(_shape_known(f) for f in ty.fields)
    return isinstance(ty, relax.TensorType) and ty.shape is not None


def _same_static(expr: relax.Expr, t) -> bool:
    ty = expr.ty
    if not isinstance(ty, relax.TensorType) or ty.shape is None:
        return False
    try:
        return [int(d) for d in ty.shape] == list(t.shape) and ty.dtype == t.dtype
    except (TypeError, ValueError):
        return False
