"""Random choices that attribute and shape rules call by name (``rand_int(1, 4)``).

They draw from the case's generator, which the compiler passes in (an expression never
names it). Each is registered with ``@random_function``, which is what makes it callable
from a spec: the compiler (``expr.py``) takes its vocabulary from ``RANDOM_FUNCTIONS``.
"""
from __future__ import annotations

from typing import Callable

from ..errors import ExprError

RANDOM_FUNCTIONS: dict[str, Callable] = {}   # name -> function(rng, ...), filled by @random_function


def random_function(fn: Callable) -> Callable:
    """Make `fn(rng, ...)` callable from spec expressions as `name(...)`."""
    if fn.__name__ in RANDOM_FUNCTIONS:
        raise ValueError(f"random function '{fn.__name__}' is registered twice")
    RANDOM_FUNCTIONS[fn.__name__] = fn
    return fn


MAX_DIM = 6  # tensors stay small: builds stay fast and reproducers stay pasteable


@random_function
def rand_int(rng, lo, hi):
    lo, hi = int(lo), int(hi)
    if hi < lo:
        raise ExprError(f"rand_int({lo}, {hi}): empty range")
    return int(rng.integers(lo, hi + 1))


@random_function
def rand_choice(rng, seq):
    seq = list(seq)
    if not seq:
        raise ExprError("rand_choice of an empty sequence")
    return seq[int(rng.integers(len(seq)))]


@random_function
def rand_bool(rng, p=0.5):
    return bool(rng.random() < p)


@random_function
def rand_subset(rng, seq, min_size=0, max_size=None):
    seq = list(seq)
    hi = len(seq) if max_size is None else min(max_size, len(seq))
    k = int(rng.integers(min_size, hi + 1))
    picked = sorted(rng.choice(len(seq), size=k, replace=False).tolist()) if k else []
    return [seq[i] for i in picked]


@random_function
def rand_perm(rng, n):
    return [int(i) for i in rng.permutation(int(n))]


@random_function
def rand_dim(rng, lo=1, hi=MAX_DIM):
    return rand_int(rng, lo, hi)


@random_function
def rand_shape(rng, rank, lo=1, hi=MAX_DIM):
    return [rand_int(rng, lo, hi) for _ in range(int(rank))]


@random_function
def rand_broadcastable(rng, shape):
    """A shape that broadcasts with `shape` without changing it (so the result is `shape`)."""
    shape = list(shape)
    k = rand_int(rng, 0, len(shape))  # keep a suffix of length k
    return [d if rng.random() < 0.7 else 1 for d in shape[len(shape) - k:]]


@random_function
def rand_broadcast_target(rng, shape):
    """A shape that `shape` broadcasts to: ones may grow, and leading dims may be added."""
    shape = list(shape)
    lead = rand_shape(rng, rand_int(rng, 0, max(0, 4 - len(shape))))
    return lead + [rand_dim(rng) if d == 1 and rng.random() < 0.5 else d for d in shape]


@random_function
def rand_factor_shape(rng, numel, rank):
    """A shape of `rank` dims whose product is `numel` (a random factorisation)."""
    numel, rank = int(numel), int(rank)
    if rank == 0:
        if numel != 1:
            raise ExprError(f"no rank-0 shape holds {numel} elements")
        return []
    dims = [1] * rank
    rest = numel
    for i in range(rank - 1):
        divisors = [d for d in range(1, rest + 1) if rest % d == 0]
        d = divisors[int(rng.integers(len(divisors)))]
        dims[i] = d
        rest //= d
    dims[-1] = rest
    order = rng.permutation(rank)
    return [dims[i] for i in order]


@random_function
def rand_divisor(rng, n):
    n = int(n)
    return rand_choice(rng, [d for d in range(1, n + 1) if n % d == 0])


@random_function
def rand_einsum_operand(rng, subscripts, index, shape):
    """A shape for operand `index` of `subscripts`: letters shared with operand 0 (of `shape`)
    take its sizes, the others random dims."""
    operands = subscripts.split("->")[0].split(",")
    sizes = dict(zip(operands[0], list(shape)))
    return [sizes[c] if c in sizes else rand_dim(rng) for c in operands[index]]

