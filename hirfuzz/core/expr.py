"""The spec expression language: a small, safe subset of Python expressions.

Op specs describe shapes, attributes, constraints and references as expressions such as
``broadcast_shapes(a.shape, b.shape)`` or ``np.exp(x)``. They are parsed with ``ast`` and
compiled into closures over an environment dict; nothing is ever passed to ``eval``. Only
the node kinds, names, attributes and functions listed here are accepted, so a spec can
compute but never import, open a file or reach an object's internals.

The same compiled expression runs on plain ints, on NumPy arrays (references) and on z3
terms (solver constraints): arithmetic, comparisons and ``min``/``max``/``and``/``or`` are
routed through helpers that pick the z3 form when an operand is symbolic.

The functions an expression may call are Python's few builtins listed here, the shape and
dtype helpers of ``shapes.py`` and the random draws of ``draws.py`` (each registered there
by its decorator); ``np.`` and ``ref.`` members come in as namespaces (``spec.py``).
"""
from __future__ import annotations

import ast
import math
import operator
from collections import ChainMap
from typing import Any, Callable, Mapping

from ..errors import ExprError
from .draws import RANDOM_FUNCTIONS
from .shapes import SHAPE_FUNCTIONS, floordiv, is_symbolic, symbolic_max, symbolic_min

try:  # z3 is a declared dependency; the language still works on concrete values without it
    import z3
except ImportError:  # pragma: no cover
    z3 = None


# --- operators that also work on z3 terms --------------------------------------------------

def _mod(a, b):
    return a % b


def _and(*values):
    if is_symbolic(*values):
        return z3.And(*values)
    return all(values)


def _or(*values):
    if is_symbolic(*values):
        return z3.Or(*values)
    return any(values)


def _not(v):
    return z3.Not(v) if is_symbolic(v) else not v


_BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: floordiv,
    ast.Mod: _mod,
    ast.Pow: operator.pow,
    ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
}
_CMPOPS = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
}
_UNARYOPS = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: _not, ast.Invert: operator.invert}

# Attributes an expression may read: tensor descriptions and a few array methods.
ALLOWED_ATTRS = {"shape", "rank", "dtype", "ndim", "size", "astype", "reshape", "transpose", "T"}

# What an expression may call by name: a few builtins, and every registered shape helper
# (a live view: one registered later is callable too)
BUILTINS: dict[str, Callable] = {
    "len": len, "min": symbolic_min, "max": symbolic_max, "abs": abs, "range": range, "list": list,
    "tuple": tuple, "sum": sum, "int": int, "float": float, "bool": bool, "sorted": sorted,
    "all": all, "any": any, "reversed": lambda s: list(reversed(list(s))),
    "ceil": math.ceil, "floor": math.floor,
}
FUNCTIONS: Mapping[str, Callable] = ChainMap(BUILTINS, SHAPE_FUNCTIONS)


class Namespace:
    """A read-only bag of functions reachable as ``ns.name`` (``np.exp``, ``ref.conv2d``)."""

    def __init__(self, name: str, members: dict[str, Any]):
        self._name = name
        self._members = members

    def get(self, attr: str):
        if attr not in self._members:
            raise ExprError(f"'{self._name}.{attr}' is not available in spec expressions")
        return self._members[attr]


class Compiled:
    """A compiled expression: call it with an environment dict."""

    def __init__(self, text: str, fn: Callable[[dict], Any], names: set[str]):
        self.text = text
        self._fn = fn
        self.names = names  # free names it reads, for dependency checks

    def __call__(self, env: dict) -> Any:
        try:
            return self._fn(env)
        except ExprError:
            raise
        except Exception as exc:  # the spec's fault, reported with the expression
            raise ExprError(f"evaluating '{self.text}': {type(exc).__name__}: {exc}") from exc

    def __repr__(self):
        return f"Compiled({self.text!r})"


def _lookup(table: dict, op: ast.AST):
    if type(op) not in table:
        raise ExprError(f"operator '{type(op).__name__}' is not allowed in spec expressions")
    return table[type(op)]


class _Compiler:
    def __init__(self, functions: Mapping[str, Callable], namespaces: dict[str, Namespace]):
        self.functions = functions
        self.namespaces = namespaces
        self.names: set[str] = set()

    def compile(self, node: ast.AST) -> Callable[[dict], Any]:
        method = getattr(self, "c_" + type(node).__name__, None)
        if method is None:
            raise ExprError(f"'{type(node).__name__}' is not allowed in spec expressions")
        return method(node)

    def c_Expression(self, node):
        return self.compile(node.body)

    def c_Constant(self, node):
        value = node.value
        return lambda env: value

    def c_Name(self, node):
        name = node.id
        if name in ("True", "False", "None"):
            value = {"True": True, "False": False, "None": None}[name]
            return lambda env: value
        if name in self.namespaces:
            ns = self.namespaces[name]
            return lambda env: ns
        self.names.add(name)

        def load(env):
            try:
                return env[name]
            except KeyError:
                raise ExprError(f"unknown name '{name}'") from None
        return load

    def c_Attribute(self, node):
        base = self.compile(node.value)
        attr = node.attr
        if isinstance(node.value, ast.Name) and node.value.id in self.namespaces:
            member = self.namespaces[node.value.id].get(attr)
            return lambda env: member
        if attr not in ALLOWED_ATTRS:
            raise ExprError(f"attribute '.{attr}' is not allowed in spec expressions")
        return lambda env: getattr(base(env), attr)

    def c_Subscript(self, node):
        base = self.compile(node.value)
        index = self.compile(node.slice)
        return lambda env: base(env)[index(env)]

    def c_Slice(self, node):
        parts = [self.compile(p) if p is not None else (lambda env: None)
                 for p in (node.lower, node.upper, node.step)]
        lo, hi, st = parts
        return lambda env: slice(lo(env), hi(env), st(env))

    def c_List(self, node):
        items = [self.compile(e) for e in node.elts]
        return lambda env: [f(env) for f in items]

    def c_Tuple(self, node):
        items = [self.compile(e) for e in node.elts]
        return lambda env: tuple(f(env) for f in items)

    def c_BinOp(self, node):
        op = _lookup(_BINOPS, node.op)
        left, right = self.compile(node.left), self.compile(node.right)
        return lambda env: op(left(env), right(env))

    def c_UnaryOp(self, node):
        op = _lookup(_UNARYOPS, node.op)
        operand = self.compile(node.operand)
        return lambda env: op(operand(env))

    def c_BoolOp(self, node):
        values = [self.compile(v) for v in node.values]
        if isinstance(node.op, ast.And):
            def f(env):
                out = [v(env) for v in values]
                return _and(*out)
        else:
            def f(env):
                out = [v(env) for v in values]
                return _or(*out)
        return f

    def c_Compare(self, node):
        left = self.compile(node.left)
        ops = [_lookup(_CMPOPS, o) for o in node.ops]
        rights = [self.compile(c) for c in node.comparators]

        def f(env):
            a = left(env)
            results = []
            for op, r in zip(ops, rights):
                b = r(env)
                results.append(op(a, b))
                a = b
            return results[0] if len(results) == 1 else _and(*results)
        return f

    def c_IfExp(self, node):
        test, body, orelse = self.compile(node.test), self.compile(node.body), self.compile(node.orelse)

        def f(env):
            t = test(env)
            if is_symbolic(t):
                return z3.If(t, body(env), orelse(env))
            return body(env) if t else orelse(env)
        return f

    def c_Call(self, node):
        if node.keywords:
            kwargs = {k.arg: self.compile(k.value) for k in node.keywords}
        else:
            kwargs = {}
        args = [self.compile(a) for a in node.args]
        if isinstance(node.func, ast.Name) and node.func.id in self.functions:
            fn = self.functions[node.func.id]
            return lambda env: fn(*[a(env) for a in args], **{k: v(env) for k, v in kwargs.items()})
        if isinstance(node.func, ast.Name) and node.func.id in RANDOM_FUNCTIONS:
            fn = RANDOM_FUNCTIONS[node.func.id]

            def call_random(env):
                rng = env.get("__rng__")
                if rng is None:
                    raise ExprError(f"'{node.func.id}' draws random values and needs a generator")
                return fn(rng, *[a(env) for a in args], **{k: v(env) for k, v in kwargs.items()})
            return call_random
        if isinstance(node.func, ast.Attribute):
            func = self.compile(node.func)
            return lambda env: func(env)(*[a(env) for a in args], **{k: v(env) for k, v in kwargs.items()})
        name = ast.unparse(node.func)
        raise ExprError(f"function '{name}' is not available in spec expressions")

    def c_ListComp(self, node):
        if len(node.generators) != 1 or node.generators[0].is_async:
            raise ExprError("only one 'for' is allowed in a list comprehension")
        gen = node.generators[0]
        if not isinstance(gen.target, ast.Name):
            raise ExprError("a comprehension variable must be a plain name")
        var = gen.target.id
        iterable = self.compile(gen.iter)
        conds = [self.compile(c) for c in gen.ifs]
        elt = self.compile(node.elt)
        self.names.discard(var)

        def f(env):
            out = []
            inner = dict(env)
            for item in iterable(env):
                inner[var] = item
                if all(c(inner) for c in conds):
                    out.append(elt(inner))
            return out
        return f

    c_GeneratorExp = c_ListComp


def compile_expr(text: Any, functions: Mapping[str, Callable] | None = None,
                 namespaces: dict[str, Namespace] | None = None) -> Compiled:
    """Compile a spec expression. Numbers and lists in YAML are accepted as constants."""
    if not isinstance(text, str):
        value = text
        return Compiled(repr(text), lambda env: value, set())
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExprError(f"cannot parse '{text}': {exc.msg}") from None
    compiler = _Compiler(functions if functions is not None else FUNCTIONS,
                         namespaces if namespaces is not None else {})
    fn = compiler.compile(tree)
    return Compiled(text, fn, compiler.names)


