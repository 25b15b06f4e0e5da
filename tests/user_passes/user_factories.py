"""A user's pass factories, good and broken, for the pass catalog check; they work with any
TVM (0.19's Relay and 0.27's Relax alike)."""


def identity():
    """A good pass: returns its module."""
    import tvm
    return tvm.transform.module_pass(lambda mod, _ctx: mod, opt_level=0, name="Identity")


def raises():
    raise ValueError("raises: cannot make this pass")


def undecorated():
    """Forgets tvm.transform.module_pass: returns the transform function itself."""
    def transform(mod, _ctx):
        return mod
    return transform


def picky(mode):
    """A good pass for one choice of its argument only."""
    if mode != "fine":
        raise ValueError(f"picky: unknown mode {mode!r}")
    return identity()
