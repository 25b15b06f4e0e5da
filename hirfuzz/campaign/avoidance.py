"""No bug masking another: the constructs a campaign's confirmed findings fail on alone,
which generation stops drawing.

A confirmed finding whose reduced program is one operator at one dtype, failing in its
configuration's plain build (no pass sequence, lowering plan or mutant left after
reduction), names a construct: that op-dtype on that target kind. Every later case that
drew it would stop at the same failure, and whatever else it held would never be compared;
generation avoids it from then on (core.generate's `avoid`, as it avoids what a target
cannot build). An unconfirmed finding names none, nor does one that needs several ops.

Cases are made ahead and findings are confirmed by reduction threads, so when an avoidance
takes effect depends on timing. The `AvoidanceSchedule` therefore records it: the case
index from which each construct is avoided, taken by the coordinator when it generates a
case (never by a thread). The cases before the first avoidance are the seed's alone; given
the schedule, so is every later one, whatever the number of workers (which only changes
when findings are confirmed, so the schedule). The checkpoint saves it, so a resumed
campaign goes on with it; a finding confirmed after the last checkpoint takes effect from
the first case the resumed run generates.

A confirmed finding whose reduced program needs one choice of its lowering plan (a closure,
a function obtained as a value, an `If`...: its form, core.plan.LoweringPlan.form), and no
pass sequence, names that form (`PlanForm`): later cases are lowered without it (their plan
stripped of every choice drawn with that form), on that target, or in the gradient cases of
that autodiff. TVM 0.19's higher-order autodiff fails on any closure or function value,
whatever it computes: 3-4% of a Relay campaign's cases stopped there.

A finding that joins an earlier one (one root cause) names its construct too: it may be
another op or form with that cause, which would go on recurring.

`--known` campaign folders' confirmed findings are avoided from the first case generated;
a text file of signatures names no program, so no construct. `--no-avoid-found` turns
avoidance off.
"""
from __future__ import annotations

import json
import threading
from dataclasses import asdict, dataclass
from pathlib import Path

from ..core.generate import AvoidedOp, construct_name
from ..core.plan import LoweringPlan
from ..core.attributes import key_roles
from ..core.targets import target_kind
from ..errors import HirfuzzError
from ..protocol import AUTODIFF, GRADIENT


@dataclass(frozen=True)
class Construct:
    """An op at a dtype that fails on a target kind whatever else the program holds; with
    `roles`, where its attributes hold those (the finding's reduced program needs them:
    reduction_steps.SimplifyAttributes, named as core.attributes.key_roles names them)."""
    op: str
    dtype: str
    target: str   # the kind of the target its finding failed on (core.targets.TARGET_KINDS)
    roles: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """As generation statistics count it: ``atan2[float16]``, ``nn.max_pool2d[float64] with dilation``."""
        return construct_name(self.op, self.dtype, self.roles)

    def avoided(self) -> AvoidedOp:
        """As generation is given it (cases.avoided_in): a gradient's in gradient cases alone."""
        return AvoidedOp(self.op, self.dtype, self.roles, gradient=self.target == GRADIENT)


@dataclass(frozen=True)
class PlanForm:
    """A lowering plan's form (the feature kinds of one of its choices) that fails on a
    target kind, or under an autodiff (`target` GRADIENT), whatever the program computes."""
    features: tuple[str, ...]   # sorted (core.plan.Cut.features: function_local, function_as_value, ...)
    target: str
    autodiff: str | None = None  # the gradient cases' autodiff it fails under (protocol.AUTODIFF)

    @property
    def name(self) -> str:
        """As generation statistics count it: ``plan[function_as_value+function_global]``."""
        return f"plan[{'+'.join(self.features)}]" + (f" under {self.autodiff}" if self.autodiff else "")

    def applies_to(self, gradient_case: bool, autodiff: str | None) -> bool:
        """Whether a case's plan is stripped of it: a target's form in every case (the
        campaign builds each case on its targets), an autodiff's in that autodiff's gradient cases."""
        return self.target != GRADIENT or (gradient_case and autodiff == self.autodiff)


def without_forms(plan: LoweringPlan, forms, gradient_case: bool, autodiff: str | None) -> tuple[LoweringPlan, list[str]]:
    """`plan` without the choices of each form of `forms` that applies to the case, and the
    names of those that took some away."""
    stripped = []
    for form in sorted(forms, key=lambda f: f.name):
        if form.applies_to(gradient_case, autodiff):
            plan, gone = plan.without_form(frozenset(form.features))
            if gone:
                stripped.append(form.name)
    return plan, stripped


@dataclass(frozen=True)
class Avoidance:
    construct: Construct | PlanForm
    finding: str     # the finding it comes from: its folder in the campaign, or "--known FOLDER/findings/..."
    from_case: int   # the first case generated without the construct

    def to_json(self) -> dict:
        # what a construct leaves unsaid (no roles, no autodiff) is left out, as before either was
        construct = {k: v for k, v in asdict(self.construct).items() if v not in ((), None)}
        return {"construct": construct, "finding": self.finding, "from_case": self.from_case}

    @classmethod
    def from_json(cls, data: dict) -> "Avoidance":
        construct = data["construct"]
        if "features" in construct:
            construct = PlanForm(tuple(construct["features"]), construct["target"], construct.get("autodiff"))
        else:
            construct = Construct(construct["op"], construct["dtype"], construct["target"],
                                  tuple(construct.get("roles", ())))
        return cls(construct, data["finding"], data["from_case"])


def construct_of(finding: dict, case: dict) -> Construct | PlanForm | None:
    """The construct a finding (its finding.json) names by its reduced case (its case.json),
    or None: unconfirmed, a disruptive case, a failure that needs a pass sequence or a
    mutant, several operators with no plan (unless it is keyed as one of them alone:
    extra.keyed_as, a wrong gradient's), or a plan of several choices."""
    if not finding.get("confirmed") or case.get("disruption"):
        return None
    lowering = case.get("lowering") or {}
    config = case["configs"][-1]  # the failing one: isolation put it last
    if config.get("passes") or "mutation" in lowering:
        return None
    # a gradient finding's construct is avoided in gradient cases alone: its gradient fails, not the op
    target = GRADIENT if config.get(GRADIENT) else target_kind(config["target"])
    extra = finding.get("extra") or {}
    if "plan" in lowering:  # a form, where it fails around another operator too (reduction_steps.FormAlone)
        form = LoweringPlan.from_json(lowering["plan"]).form()
        return PlanForm(tuple(sorted(form)), target, config.get(AUTODIFF)) if form and extra.get("form_alone") else None
    ops = [node for node in case["graph"]["nodes"] if node["kind"] == "op"]
    alone = (extra.get("keyed_as") or {}).get("operator")
    if len(ops) != 1 and alone is None:
        return None
    if len(ops) != 1:  # keyed as one of them alone: it fails so by itself
        ops = [node for node in ops if node["op"] == alone]
        if len({node["dtype"] for node in ops}) != 1:
            return None
    roles = key_roles(extra.get("needs", {}).get(ops[0]["op"], []))
    return Construct(ops[0]["op"], ops[0]["dtype"], target, tuple(roles))


def saved_constructs(campaign: Path) -> list[tuple[Construct, str]]:
    """The constructs a campaign folder's confirmed findings name, in folder order, each with
    its finding's folder (relative to the campaign's)."""
    constructs = []
    root = campaign / "findings"
    for folder in sorted(root.iterdir()) if root.is_dir() else []:
        if folder.name.startswith(".") or not (folder / "case.json").is_file():
            continue
        try:
            finding = json.loads((folder / "finding.json").read_text())
            case = json.loads((folder / "case.json").read_text())
            construct = construct_of(finding, case)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise HirfuzzError(f"{folder}: unreadable or corrupt finding ({exc})") from None
        if construct is not None:
            constructs.append((construct, f"findings/{folder.name}"))
    return constructs


class AvoidanceSchedule:
    """The constructs generation avoids, and from which case on each.

    A confirmed finding's construct is `offer`ed by whichever thread files it; it takes
    effect at the next case the coordinator generates (`avoided_at`), which records that
    case's index. A construct is avoided once (its first finding named), only on the
    targets the campaign builds for, and never where it would leave nothing to draw
    (`drawable(avoid)` says whether something is left)."""

    def __init__(self, enabled: bool, target_kinds, drawable):
        self.enabled = enabled
        self.target_kinds = set(target_kinds)
        self.drawable = drawable
        self.avoidances: list[Avoidance] = []
        # offered, with the finding they come from, not taken up yet: filled by any thread
        self._offered: list[tuple[Construct, str]] = []
        self._lock = threading.Lock()
        # constructs offered that would have left nothing to draw: never avoided
        self.kept: dict[str, str] = {}

    def offer(self, construct: Construct, finding: str):
        if not self.enabled or construct.target not in self.target_kinds | {GRADIENT}:
            return
        with self._lock:
            self._offered.append((construct, finding))

    def avoided_at(self, index: int) -> frozenset:
        """The ops case `index` is generated without (AvoidedOps), and the plan forms it is
        lowered without: those scheduled from it or before, the constructs offered since the
        last case taking effect from it."""
        with self._lock:
            offered, self._offered = self._offered, []
        for construct, finding in offered:
            self._schedule(construct, finding, index)
        # an op's as Construct.avoided gives it (cases.avoided_in); a form as itself
        # (cases.CaseMaker.lowered_without)
        return frozenset(a.construct if isinstance(a.construct, PlanForm) else a.construct.avoided()
                         for a in self.avoidances if a.from_case <= index)

    def _schedule(self, construct: Construct | PlanForm, finding: str, index: int):
        # whether a gradient case has ops left: cases.CaseMaker.drawn_from; a plan without a
        # form is still a plan; an op's plainer draws stay where roles are avoided
        if construct.target == GRADIENT or isinstance(construct, PlanForm) or construct.roles:
            if not any(a.construct == construct for a in self.avoidances):
                self.avoidances.append(Avoidance(construct, finding, index))
            return
        if any(a.construct == construct for a in self.avoidances) or construct.name in self.kept:
            return
        avoid = {a.construct.avoided() for a in self.avoidances
                 if isinstance(a.construct, Construct) and a.construct.target != GRADIENT}
        avoid.add(construct.avoided())
        if not self.drawable(frozenset(avoid)):  # drawable counts those avoided whatever their attributes
            self.kept[construct.name] = finding
            return
        self.avoidances.append(Avoidance(construct, finding, index))

    def to_json(self) -> list[dict]:
        return [a.to_json() for a in self.avoidances]

    def restore(self, saved: list[dict]):
        """The schedule a checkpoint saved (dropped where avoidance is off now)."""
        self.avoidances = [Avoidance.from_json(a) for a in saved] if self.enabled else []
