"""What of an operator's attributes a failure needs: each attribute's plainer value, and
the roles attributes play (a window's kernel, stride, padding, dilation; a flag), which a
wrong result's root key (campaign.reducer.with_needs) and an avoided construct
(campaign.avoidance.Construct.roles) name. The reduction step that makes them plainer is
campaign.reduction_steps.SimplifyAttributes; reduction_steps.with_attribute makes the graph."""
from __future__ import annotations

# what a window op's solve variables stand for, by the name they share but for the axis
# letter they end with (opspecs: kh and kw are a kernel's height and width, pt and pl its
# top and left padding, oph an output padding): one name per role, whatever the axis
WINDOW_ROLES = {"k": "kernel", "s": "stride", "p": "padding", "d": "dilation", "op": "output padding"}


# the roles that only size a window: a fault needing one of them alone is one of the
# window's arithmetic, and which of them a reduced program keeps depends on its shapes (a
# dilation's fault kept a padding on one shape and not on another: /tmp/pools, seed 2)
WINDOW_SIZING = frozenset({"kernel", "stride", "padding"})


def key_roles(roles) -> list[str]:
    """The roles a root key names of those a failure needs: what is more than sizing a
    window (a dilation, an output padding, a flag), else "window" where it needs only that."""
    specific = sorted(set(roles) - WINDOW_SIZING)
    return specific or (["window"] if roles else [])


def attribute_role(name: str) -> str:
    """What an attribute stands for in a key: a window variable's role (WINDOW_ROLES), else its name."""
    return WINDOW_ROLES.get(name[:-1], name)


def plainer_values(spec, attrs: dict) -> dict[str, object]:
    """The attributes of an operator (`attrs`, as its node holds them) that have a plainer
    value than the one they hold, with it: a solve variable's least (a window's kernel,
    stride and dilation 1, its padding 0), a flag drawn by ``rand_bool`` False. A flag
    another attribute's rule reads stays: that rule drew its own value knowing it."""
    plainer: dict[str, object] = {}
    for name, (least, _) in (spec.solve.vars.items() if spec.solve is not None else ()):
        if attrs.get(name, least) != least:
            plainer[name] = least
    read = set().union(*(rule.names for rule in spec.attrs.values())) if spec.attrs else set()
    for name, rule in spec.attrs.items():
        if rule.text.startswith("rand_bool(") and attrs.get(name) is True and name not in read:
            plainer[name] = False
    return plainer


def roles_held(spec, attrs: dict) -> set[str]:
    """The roles of the attributes `attrs` holds at more than their plainest (attribute_role)."""
    return {attribute_role(name) for name in plainer_values(spec, attrs)}


def holds_roles(held: set[str], roles) -> bool:
    """Whether attributes holding `held` hold every role of `roles` (as key_roles names
    them: "window" is any of WINDOW_SIZING)."""
    return all(held & WINDOW_SIZING if role == "window" else role in held for role in roles)
