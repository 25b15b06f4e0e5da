"""Relay op calls from call records (runs under TVM 0.19 only)."""
from __future__ import annotations

from tvm import relay

from ...core.calls import decode_argument


def relay_op(path: str):
    """`tvm.relay.<path>`, e.g. "nn.conv2d"; raises AttributeError for an unknown op."""
    fn = relay
    for part in path.split("."):
        fn = getattr(fn, part)
    return fn


def op_call(record: dict, items: list) -> relay.Expr:
    """The Relay call of one operator node's call record (core.calls); `items` holds the
    Relay expr of each input (a list of them for a variadic input)."""
    args = [decode_argument(a, items) for a in record["args"]]
    kwargs = {k: decode_argument(v, items) for k, v in record["kwargs"].items()}
    value = relay_op(record["op"])(*args, **kwargs)
    return value.astuple() if isinstance(value, relay.expr.TupleWrapper) else value
