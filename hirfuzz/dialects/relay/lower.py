"""Lowering: a Graph becomes a Relay IRModule (HIRGen Algorithm 2). Runs under TVM 0.19.

Without a plan, ``main`` is one dataflow expression: each variable a parameter, each
constant a ``relay.const``, each operator one call; ops returning tuples are read with
``TupleGetItem``. A plan (core.plan.LoweringPlan, plain data shared with Relax) adds what
HIRGen's Algorithm 2 adds, in Relay's terms:

- a ``global`` cut becomes a global function (``relay.GlobalVar``) with a return type,
  added to the module before its callers (a call to a callee not yet type-inferred fails
  ``InferType``); a ``local`` cut a let-bound closure, capturing the inputs named in
  ``captures`` as free variables; nested cuts give call chains. With ``as_value`` the
  function is first returned by a nullary function (``get_f`` global, or a let-bound
  ``make_f`` closure) and called afterwards: functions as values and results.
- ``plain_nodes`` (and ``plain`` cuts) are ``let``-bound; the rest stay in graph form.
- ``if_shape`` wraps an operator in ``If`` on ``sum(shape_of(x)) >= rank(x)``; ``if_prim``
  on a condition computed from the data, ``all(x == x) or not all(x == x)``; both are true
  for any input, and the else branch (zeros) has the same type. ``tuple`` packs the
  operator's inputs into a tuple and reads them back.
- ``dynamic_params`` declare main's parameters with their first dimension ``?``
  (``relay.Any()``), where TVM can take the module so (dynamic.py: every operator has a
  shape function); the rest of the program is dynamic with them.
- ``match_cast`` and ``shape_of`` are Relax features (symbolic shapes cast back to static
  ones): Relay has no cast back, so they are not lowered.
"""
from __future__ import annotations

import tvm
from tvm import relay

from ...core.graph import Graph, Ref
from .dynamic import with_dynamic_params
from .ops import constant, op_call

def tensor_type(t) -> relay.TensorType:
    return relay.TensorType(list(t.shape), t.dtype)


def result_type(types: list) -> relay.Type:
    return tensor_type(types[0]) if len(types) == 1 else relay.TupleType([tensor_type(t) for t in types])


class _Scope:
    """One function being built: its let bindings and what each Ref stands for there."""

    def __init__(self, env: dict):
        self.builder = relay.ScopeBuilder()
        self.env = dict(env)

    def bind(self, name: str, value: relay.Expr) -> relay.Var:
        return self.builder.let(name, value)

    def finish(self, result: relay.Expr) -> relay.Expr:
        self.builder.ret(result)
        return self.builder.get()


class _CutNode:
    def __init__(self, cut, members: list[int]):
        self.cut = cut
        self.members = members          # operator ids, ascending
        self.children: list[_CutNode] = []


def cut_tree(graph: Graph, functions: list) -> list[_CutNode]:
    """The plan's cuts that can be honoured, nested: a cut overlapping an earlier one
    without nesting in it, or holding no operator, is ignored."""
    op_ids = [n.id for n in graph.operators]
    accepted: list[_CutNode] = []
    for cut in functions:
        members = set(i for i in op_ids if cut.start <= i <= cut.end)
        if not members or cut.kind not in ("global", "local"):
            continue
        if all(members != set(o.members) and (members <= set(o.members) or set(o.members) <= members
                                              or not members & set(o.members)) for o in accepted):
            accepted.append(_CutNode(cut, sorted(members)))
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


def lower_graph(graph: Graph, calls: dict, plan=None) -> tvm.IRModule:
    """`graph` as a Relay module (`plan`: how, see the module docstring); type-inferred."""
    module = _Lowering(graph, calls, plan).lower()
    if plan is None or not plan.dynamic_params:
        return module
    return with_dynamic_params(module, {f"x{n}" for n in plan.dynamic_params})


class _Lowering:
    def __init__(self, graph: Graph, calls: dict, plan):
        self.graph = graph
        self.calls = calls
        self.plain = set(plan.plain_nodes) if plan else set()
        self.features = plan.node_features if plan else {}
        self.roots = cut_tree(graph, plan.functions) if plan else []
        self.last_use: dict[Ref, int] = {}
        for n in graph.nodes:
            for r in n.input_refs():
                self.last_use[r] = max(self.last_use.get(r, -1), n.id)
        for r in graph.results():
            self.last_use[r] = len(graph.nodes) + 1  # returned: live to the end
        self.module = tvm.IRModule()
        self.counter = 0

    def _name(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def _value(self, scope: _Scope, ref: Ref) -> relay.Expr:
        node = self.graph.nodes[ref.node]
        if node.kind == "const":
            return constant(node.value, node.type.dtype)
        return scope.env[ref]

    def lower(self) -> tvm.IRModule:
        # inputs are x<id>: relay.build names lifted constants p0, p1, ... (relay-notes.md)
        params = {Ref(n.id): relay.var(f"x{n.id}", tensor_type(n.type)) for n in self.graph.variables}
        scope = _Scope(params)
        self._emit_items(scope, [n.id for n in self.graph.operators], self.roots)
        results = [self._value(scope, r) for r in self.graph.results()]
        body = scope.finish(results[0] if len(results) == 1 else relay.Tuple(results))
        types = [self.graph.type_of(r) for r in self.graph.results()]
        self.module["main"] = relay.Function(list(params.values()), body, result_type(types))
        return relay.transform.InferType()(self.module)

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

    def _cut_io(self, members: list[int]) -> tuple[list[Ref], list[Ref]]:
        inside = set(members)
        ins = {r for nid in members for r in self.graph.nodes[nid].input_refs()
               if r.node not in inside and self.graph.nodes[r.node].kind != "const"}
        end = members[-1]
        outs = [Ref(nid, i) for nid in members for i in range(len(self.graph.nodes[nid].outputs))
                if self.last_use.get(Ref(nid, i), -1) > end]
        return sorted(ins, key=lambda r: (r.node, r.index)), outs

    def _emit_cut(self, scope: _Scope, cnode: _CutNode):
        cut = cnode.cut
        local = cut.kind == "local"
        ins, outs = self._cut_io(cnode.members)
        captured = [r for r in ins if local and r.node in cut.captures]
        passed = [r for r in ins if r not in captured]
        params = [relay.var(f"a{r.node}_{r.index}", tensor_type(self.graph.type_of(r))) for r in passed]
        inner = _Scope({**{r: scope.env[r] for r in captured}, **dict(zip(passed, params))})
        self._emit_items(inner, cnode.members, cnode.children)
        res = [self._value(inner, r) for r in outs]
        ret = result_type([self.graph.type_of(r) for r in outs])
        func = relay.Function(params, inner.finish(res[0] if len(res) == 1 else relay.Tuple(res)), ret)
        callee = self._global(func, cut.as_value) if not local else self._closure(scope, func, cut.as_value)
        value = relay.Call(callee, [scope.env[r] for r in passed])
        if cut.plain or len(outs) > 1:
            value = scope.bind(self._name("r"), value)
        if len(outs) == 1:
            scope.env[outs[0]] = value
            return
        for i, r in enumerate(outs):
            scope.env[r] = relay.TupleGetItem(value, i)

    def _global(self, func: relay.Function, as_value: bool) -> relay.Expr:
        name = self._name("f")
        gv = relay.GlobalVar(name)
        self.module[gv] = func  # before its callers: they are type-inferred against it
        if not as_value:
            return gv
        getter = relay.GlobalVar(f"get_{name}")
        func_type = relay.FuncType([p.type_annotation for p in func.params], func.ret_type)
        self.module[getter] = relay.Function([], gv, func_type)
        return relay.Call(getter, [])

    def _closure(self, scope: _Scope, func: relay.Function, as_value: bool) -> relay.Expr:
        name = self._name("local")
        if not as_value:
            return scope.bind(name, func)
        maker = scope.bind(f"make_{name}", relay.Function([], func))
        return scope.bind(name, relay.Call(maker, []))

    # --- one operator ----------------------------------------------------------------------

    def _emit_op(self, scope: _Scope, nid: int):
        node = self.graph.nodes[nid]
        record = self.calls[str(nid)]
        feats = self.features.get(nid, [])
        items = [[self._value(scope, r) for r in item] if isinstance(item, list) else self._value(scope, item)
                 for item in node.inputs]
        if "tuple" in feats:
            items = _through_tuple(items)
        types = [[tensor_type(self.graph.type_of(r)) for r in item] if isinstance(item, list)
                 else tensor_type(self.graph.type_of(item)) for item in node.inputs]
        value = op_call(record, items, types)
        wrap_if = next((f for f in feats if f in ("if_shape", "if_prim")), None)
        if wrap_if:
            zeros = [relay.zeros(list(t.shape), t.dtype) for t in node.outputs]
            other = relay.Tuple(zeros) if record["multi_output"] else zeros[0]
            value = relay.If(self._condition(wrap_if, node, items), value, other)
        if nid in self.plain or wrap_if or record["multi_output"]:
            value = scope.bind(f"v{nid}", value)
        if not record["multi_output"]:
            scope.env[Ref(nid)] = value
            return
        for i in range(len(node.outputs)):
            scope.env[Ref(nid, i)] = relay.TupleGetItem(value, i)

    def _condition(self, kind: str, node, items) -> relay.Expr:
        """A condition true for every input, that a compiler cannot see is true at once."""
        flat = [e for item in items for e in (item if isinstance(item, list) else [item])]
        types = [t for item in node.inputs for t in
                 ([self.graph.type_of(r) for r in item] if isinstance(item, list) else [self.graph.type_of(item)])]
        ranked = [(e, t) for e, t in zip(flat, types) if t.rank > 0]
        if not ranked:
            return relay.const(True, "bool")
        x, t = ranked[0]
        if kind == "if_shape":  # every dimension is >= 1, so they sum to at least the rank
            total = relay.sum(relay.shape_of(x, "int64"))
            return relay.greater_equal(total, relay.const(t.rank, "int64"))
        same = relay.all(relay.equal(x, x))  # false only where x holds a NaN
        return relay.logical_or(same, relay.logical_not(same))


def _through_tuple(items: list) -> list:
    flat = [e for item in items for e in (item if isinstance(item, list) else [item])]
    packed = relay.Tuple(flat)
    parts = iter([relay.TupleGetItem(packed, i) for i in range(len(flat))])
    return [[next(parts) for _ in item] if isinstance(item, list) else next(parts) for item in items]


def lower_planned_loss(graph: Graph, calls: dict, plan, loss_dtype: str) -> tvm.IRModule:
    """The program as `plan` lowers it (functions, closures, lets, tuples; None: graph form),
    its `main` renamed `forward`, and a `main` that calls it and returns the loss: each
    float result cast to `loss_dtype`, summed, added, as `lower_loss`. For the higher-order
    autodiff, which differentiates through global calls (relay/gradients.py)."""
    from ...core.gradients import float_results
    module = lower_graph(graph, calls, plan)
    forward = relay.GlobalVar("forward")
    module[forward] = module["main"]
    params = [relay.var(p.name_hint, p.type_annotation) for p in module["main"].params]
    results = graph.results()
    called = relay.Call(forward, params)
    outputs = [called] if len(results) == 1 else [relay.TupleGetItem(called, i) for i in range(len(results))]
    loss = _loss([outputs[results.index(ref)] for ref in float_results(graph)],
                 [graph.type_of(ref).dtype for ref in float_results(graph)], loss_dtype)
    module["main"] = relay.Function(params, loss, relay.TensorType([], loss_dtype))
    return relay.transform.InferType()(module)


def _loss(terms: list, dtypes: list[str], loss_dtype: str) -> relay.Expr:
    """Each term cast to `loss_dtype` where it is not, summed, and the sums added."""
    loss = None
    for term, dtype in zip(terms, dtypes):
        if dtype != loss_dtype:
            term = relay.cast(term, loss_dtype)
        term = relay.sum(term)
        loss = term if loss is None else relay.add(loss, term)
    return loss


def lower_loss(graph: Graph, calls: dict, loss_dtype: str) -> tvm.IRModule:
    """`main` in graph form, as FirstOrderGradient takes it (no let, If, closure or global
    call): the graph's ops, then the sum of every float result (each cast to `loss_dtype`,
    summed, added), returned as a scalar; type-inferred. Cast before summing, as the reference
    sums in float64: a float16 sum would round and overflow where the reference's does not."""
    from ...core.gradients import float_results
    params = {Ref(n.id): relay.var(f"x{n.id}", tensor_type(n.type)) for n in graph.variables}
    exprs = dict(params)

    def value(ref: Ref) -> relay.Expr:
        node = graph.nodes[ref.node]
        return constant(node.value, node.type.dtype) if node.kind == "const" else exprs[ref]
    for node in graph.operators:
        record = calls[str(node.id)]
        items = [[value(r) for r in item] if isinstance(item, list) else value(item) for item in node.inputs]
        types = [[tensor_type(graph.type_of(r)) for r in item] if isinstance(item, list)
                 else tensor_type(graph.type_of(item)) for item in node.inputs]
        call = op_call(record, items, types)
        if not record["multi_output"]:
            exprs[Ref(node.id)] = call
            continue
        for i in range(len(node.outputs)):  # the one call, shared: graph form, no let
            exprs[Ref(node.id, i)] = relay.TupleGetItem(call, i)
    refs = float_results(graph)
    loss = _loss([value(ref) for ref in refs], [graph.type_of(ref).dtype for ref in refs], loss_dtype)
    module = tvm.IRModule()
    module["main"] = relay.Function(list(params.values()), loss, relay.TensorType([], loss_dtype))
    return relay.transform.InferType()(module)
