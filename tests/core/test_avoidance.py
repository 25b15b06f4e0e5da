"""No bug masking another (campaign.avoidance): the construct a confirmed finding's reduced
program names, generation without it, and the schedule that fixes from which case on."""
import threading

import numpy as np
import pytest

from hirfuzz.campaign.avoidance import AvoidanceSchedule, Construct, PlanForm, construct_of
from hirfuzz.campaign.cases import CaseMaker
from hirfuzz.campaign.settings import Settings
from hirfuzz.core.coverage import Coverage
from hirfuzz.core.generate import AvoidedOp, GenStats, drawable, generate_graph, single_op_graph
from hirfuzz.core.passes import load_catalog
from hirfuzz.core.plan import Cut, LoweringPlan
from hirfuzz.core.spec import load_specs
from hirfuzz.dialects import dialect_info
from hirfuzz.errors import HirfuzzError
from hirfuzz.protocol import AUTODIFF, GRADIENT, make_config

CONFIRMED = {"kind": "crash", "confirmed": True}


def reduced_case(graph, target="llvm", passes=None, lowering=None, disruption=None) -> dict:
    """A finding's case.json as reduction leaves it: its failing configuration last."""
    return {"graph": graph.to_json(), "configs": [make_config("vm", target, passes=passes)],
            "lowering": lowering or {}, "disruption": disruption}


def one_op(specs, op="atan2", dtype="float32"):
    return single_op_graph(specs, op, dtype, np.random.default_rng(0))


def test_a_confirmed_one_operator_program_names_its_op_dtype_and_target(specs):
    assert construct_of(CONFIRMED, reduced_case(one_op(specs))) == Construct("atan2", "float32", "llvm")
    cuda = reduced_case(one_op(specs, "exp", "float16"), target={"kind": "cuda", "arch": "sm_90"})
    assert construct_of(CONFIRMED, cuda) == Construct("exp", "float16", "cuda")
    assert construct_of({"kind": "hang", "confirmed": True}, reduced_case(one_op(specs))).name == "atan2[float32]"


def test_no_construct_from_an_unconfirmed_finding_several_ops_or_more_than_the_plain_build(specs):
    graph = one_op(specs)
    assert construct_of({"kind": "crash", "confirmed": False}, reduced_case(graph)) is None
    assert construct_of(CONFIRMED, reduced_case(graph, passes=[{"name": "FoldConstant"}])) is None
    two_choices = LoweringPlan(functions=[Cut(1, 1, "local")], dynamic_params=[0]).to_json()
    assert construct_of(CONFIRMED, reduced_case(graph, lowering={"plan": two_choices})) is None
    assert construct_of(CONFIRMED, reduced_case(graph, lowering={"mutation": {"seed": [0], "count": 1}})) is None
    assert construct_of(CONFIRMED, reduced_case(graph, disruption={"violation": {}})) is None
    two = generate_graph(specs, np.random.default_rng(3), 2, Coverage(), ops=["abs", "negative"], dtypes=["float32"])
    assert len(two.operators) == 2
    assert construct_of({"kind": "wrong-result", "confirmed": True}, reduced_case(two)) is None


def test_generation_never_draws_an_avoided_op_dtype_and_counts_each_draw_turned_down(specs):
    stats = GenStats()
    avoid = frozenset({AvoidedOp("atan2", "float32")})
    drawn = set()
    for seed in range(8):
        graph = generate_graph(specs, np.random.default_rng(seed), 6, Coverage(), ops=["atan2", "abs"],
                               dtypes=["float32", "float64"], stats=stats, avoid=avoid)
        drawn |= {(n.op, n.dtype) for n in graph.operators}
    assert ("atan2", "float32") not in drawn and ("atan2", "float64") in drawn  # the op at other dtypes stays
    assert stats.avoided_found["atan2[float32]"] > 0 and stats.avoided == {}
    with pytest.raises(HirfuzzError, match="avoided"):
        generate_graph(specs, np.random.default_rng(0), 2, Coverage(), ops=["atan2"], dtypes=["float32"], avoid=avoid)


def _schedule(specs, names, dtypes, enabled=True, kinds=("llvm",)):
    return AvoidanceSchedule(enabled, kinds, lambda avoid: drawable(specs, names, dtypes, kinds, avoid))


def test_an_offered_construct_takes_effect_at_the_next_case_generated_and_is_recorded(specs):
    schedule = _schedule(specs, ["atan2", "abs"], None)
    assert schedule.avoided_at(0) == frozenset()
    atan2 = Construct("atan2", "float32", "llvm")
    thread = threading.Thread(target=schedule.offer, args=(atan2, "findings/0001-crash-x"))
    thread.start()
    thread.join()
    schedule.offer(atan2, "findings/0002-crash-y")           # the same construct: avoided once
    schedule.offer(Construct("abs", "int8", "cuda"), "z")      # not a target of the campaign
    assert schedule.avoided_at(5) == {AvoidedOp("atan2", "float32")}
    assert schedule.avoided_at(4) == frozenset()             # the schedule says from which case
    assert schedule.to_json() == [{"construct": {"op": "atan2", "dtype": "float32", "target": "llvm"},
                                   "finding": "findings/0001-crash-x", "from_case": 5}]
    again = _schedule(specs, ["atan2", "abs"], None)
    again.restore(schedule.to_json())
    assert again.avoided_at(7) == {AvoidedOp("atan2", "float32")} and again.avoidances == schedule.avoidances


def test_a_construct_that_would_leave_nothing_to_draw_is_kept_and_off_means_none(specs):
    schedule = _schedule(specs, ["atan2"], ["float32"])
    schedule.offer(Construct("atan2", "float32", "llvm"), "findings/0001-crash-x")
    assert schedule.avoided_at(0) == frozenset() and schedule.kept == {"atan2[float32]": "findings/0001-crash-x"}
    off = _schedule(specs, ["atan2", "abs"], None, enabled=False)
    off.offer(Construct("atan2", "float32", "llvm"), "findings/0001-crash-x")
    off.restore([{"construct": {"op": "abs", "dtype": "int8", "target": "llvm"}, "finding": "f", "from_case": 0}])
    assert off.avoided_at(3) == frozenset() and off.avoidances == []


def _maker(specs):
    info = dialect_info("relax")
    settings = Settings(seed=5, ops=6, only_ops=["atan2", "abs", "exp"], dtypes=["float32"], features=False)
    return CaseMaker(settings, specs, info, load_catalog([], builtin=info.catalog))


def test_the_schedule_fixes_the_cases_a_seed_generates(specs):
    """Cases before an avoidance takes effect are the seed's as without it; given the
    schedule alone, a new maker makes every case again as the campaign did."""
    plain, avoiding = _maker(specs), _maker(specs)
    before = [avoiding.make_case(i).graph.to_json() for i in range(4)]
    assert before == [plain.make_case(i).graph.to_json() for i in range(4)]
    avoiding.avoidance.offer(Construct("atan2", "float32", "llvm"), "findings/0001-crash-x")
    after = [avoiding.make_case(i).graph for i in range(4, 14)]
    assert not any(n.op == "atan2" for g in after for n in g.operators)
    assert any(n.op == "atan2" for i in range(4, 14) for n in plain.make_case(i).graph.operators)
    again = _maker(specs)
    again.avoidance.restore(avoiding.avoidance.to_json())
    assert [again.make_case(i).graph.to_json() for i in range(14)] == before + [g.to_json() for g in after]
    assert again.gen_stats.avoided_found == avoiding.gen_stats.avoided_found != {}


# --- plan forms: a failure that needs one choice of the lowering plan, whatever it computes ---

def test_a_plan_s_choices_have_their_forms_and_one_choice_is_a_form():
    plan = LoweringPlan(functions=[Cut(1, 2, "global", as_value=True), Cut(3, 3, "local", [2], plain=True)],
                        node_features={5: ["if_shape", "tuple"]}, dynamic_params=[0])
    assert [features for _, _, features in plan.entries()] == [
        {"function_global", "function_as_value"}, {"function_local", "closure_capture", "plain_block"},
        {"if_shape", "tuple"}, {"dynamic_param"}]
    assert plan.form() is None and LoweringPlan().form() is None
    assert LoweringPlan(functions=[Cut(1, 2, "local")]).form() == {"function_local"}
    # without a form: every choice drawn with all of its kinds goes, the others stay
    without, gone = plan.without_form(frozenset({"function_as_value"}))
    assert gone == 1 and [c.kind for c in without.functions] == ["local"] and without.dynamic_params == [0]
    without, gone = plan.without_form(frozenset({"tuple"}))  # the node's If stays
    assert gone == 1 and without.node_features == {5: ["if_shape"]} and len(without.functions) == 2
    without, gone = plan.without_form(frozenset({"tuple", "if_shape"}))
    assert gone == 1 and without.node_features == {}
    assert plan.without_form(frozenset({"if_prim"})) == (plan, 0)


def test_a_plan_s_one_choice_moves_to_another_graph_s_operator(specs):
    graph = generate_graph(specs, np.random.default_rng(3), 1, Coverage(), ops=["abs"], dtypes=["float32"])
    [op] = graph.operators
    inputs = [r.node for r in op.input_refs() if graph.nodes[r.node].kind == "var"]
    closure = LoweringPlan(functions=[Cut(5, 7, "local", [2], as_value=True)]).moved_to(graph)
    assert closure.functions == [Cut(op.id, op.id, "local", inputs, as_value=True)] and closure.form() == {
        "function_local", "function_as_value", "closure_capture"} - ({"closure_capture"} if not inputs else set())
    assert LoweringPlan(node_features={9: ["match_cast"]}).moved_to(graph).node_features == {op.id: ["match_cast"]}
    assert LoweringPlan(plain_nodes=[4]).moved_to(graph).plain_nodes == [op.id]


def test_a_plan_is_made_simpler_one_extra_at_a_time():
    plan = LoweringPlan(functions=[Cut(3, 3, "local", [2], as_value=True)], node_features={5: ["if_shape", "tuple"]})
    simpler = dict(plan.simpler())
    assert set(simpler) == {("functions", 0, "captures"), ("functions", 0, "as_value"),
                            ("node_features", 5, "if_shape"), ("node_features", 5, "tuple")}
    assert simpler[("functions", 0, "as_value")].functions == [Cut(3, 3, "local", [2], as_value=False)]
    assert simpler[("node_features", 5, "if_shape")].node_features == {5: ["tuple"]}
    assert LoweringPlan(functions=[Cut(3, 3, "global")]).simpler() == []


def test_a_confirmed_one_choice_plan_names_its_form_on_its_target_or_under_its_autodiff(specs):
    graph = generate_graph(specs, np.random.default_rng(3), 3, Coverage(), ops=["abs", "negative"], dtypes=["float32"])
    as_value = {"plan": LoweringPlan(functions=[Cut(1, 1, "global", as_value=True)]).to_json()}
    # only where the form failed alike around another operator (reduction_steps.FormAlone):
    # prelu on a symbolic channel fails by prelu, not by the match_cast
    assert construct_of(CONFIRMED, reduced_case(graph, lowering=as_value)) is None
    assert construct_of({**CONFIRMED, "extra": {"form_alone": False}}, reduced_case(graph, lowering=as_value)) is None
    alone = {**CONFIRMED, "extra": {"form_alone": True}}
    assert construct_of(alone, reduced_case(graph, lowering=as_value)) == PlanForm(
        ("function_as_value", "function_global"), "llvm")
    gradient = {"graph": graph.to_json(), "lowering": as_value, "disruption": None,
                "configs": [{**make_config("debug", "llvm", dialect="relay"), GRADIENT: "float64", AUTODIFF: "higher_order"}]}
    form = construct_of(alone, gradient)
    assert form == PlanForm(("function_as_value", "function_global"), GRADIENT, "higher_order")
    assert form.name == "plan[function_as_value+function_global] under higher_order"
    # with a pass sequence the pass may be what fails: no form
    assert construct_of(alone, reduced_case(graph, passes=[{"name": "LambdaLift"}], lowering=as_value)) is None


def test_a_form_under_an_autodiff_leaves_the_plans_of_that_autodiff_s_gradient_cases_alone():
    """Relay's higher-order autodiff fails on any closure (R34): once that form is avoided,
    its gradient cases are lowered without closures, the first-order ones and the other
    cases as drawn, and each plan it took something from is counted; the schedule saves
    and restores the form."""
    relay_specs = load_specs(dialect="relay")

    def maker():
        settings = Settings(seed=3, ops=6, dialect="relay", gradients=0.5, pass_fuzz=False)
        return CaseMaker(settings, relay_specs, dialect_info("relay"), None)

    plain, avoiding = maker(), maker()
    closure = PlanForm(("function_local",), GRADIENT, "higher_order")
    avoiding.avoidance.offer(closure, "findings/0001-crash-x")
    locals_of = {}
    for index in range(60):
        case = avoiding.make_case(index)
        drawn = plain.make_case(index)
        has_local = [any(c.kind == "local" for c in LoweringPlan.from_json(x.lowering["plan"]).functions)
                     for x in (case, drawn)]
        kind = (avoiding.autodiff(index) if avoiding.gradient_case(index) else "not gradient")
        locals_of.setdefault(kind, []).append(has_local)
    assert not any(mine for mine, _ in locals_of["higher_order"])
    assert any(theirs for _, theirs in locals_of["higher_order"])  # drawn, and taken away
    for kind in ("first_order", "not gradient"):
        assert all(mine == theirs for mine, theirs in locals_of[kind]) and any(m for m, _ in locals_of[kind])
    name = "plan[function_local] under higher_order"
    assert avoiding.gen_stats.avoided_found[name] == sum(t for _, t in locals_of["higher_order"])
    again = maker()
    again.avoidance.restore(avoiding.avoidance.to_json())
    assert again.avoidance.avoidances == avoiding.avoidance.avoidances
    assert again.avoidance.avoided_at(5) == {closure}
