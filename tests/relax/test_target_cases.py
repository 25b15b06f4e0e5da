"""A campaign with a cuda target (CaseMaker, made here without a GPU): its plans are drawn
as an llvm-only campaign's, then stripped of the symbolic-shape features cuda cannot lower
(hirfuzz/targets.yaml), counted; its graphs avoid what cuda cannot build."""
from hirfuzz.campaign.cases import CaseMaker
from hirfuzz.campaign.settings import Settings
from hirfuzz.core.passes import load_catalog
from hirfuzz.core.plan import LoweringPlan
from hirfuzz.dialects import dialect_info

SYMBOLIC = {"match_cast", "shape_of"}


def _maker(specs, targets, **settings):
    info = dialect_info("relax")
    return CaseMaker(Settings(targets=targets, seed=11, ops=10, **settings), specs, info,
                     load_catalog([], builtin=info.catalog))


def _plan_of(lowering: dict) -> LoweringPlan:
    return LoweringPlan.from_json(lowering["plan"])


def test_cuda_plans_hold_no_symbolic_shapes_and_the_stripped_ones_are_counted(specs):
    llvm, cuda = _maker(specs, ["llvm"]), _maker(specs, ["llvm", "cuda"])
    stripped_by_hand: dict[str, int] = {}
    for index in range(25):
        graph = llvm.make_case(index).graph
        plain, cut = llvm.case_lowering(graph, index), cuda.case_lowering(graph, index, stats=cuda.gen_stats)
        plan, drawn = _plan_of(cut), _plan_of(plain)
        assert not plan.dynamic_params
        assert not any(SYMBOLIC & set(f) for f in plan.node_features.values())
        # the same stream: everything else is what the llvm-only campaign drew
        assert [c.to_json() for c in plan.functions] == [c.to_json() for c in drawn.functions]
        assert plan.plain_nodes == drawn.plain_nodes
        assert plan.node_features == {n: kept for n, f in drawn.node_features.items()
                                      if (kept := [x for x in f if x not in SYMBOLIC])}
        for n, feats in drawn.node_features.items():
            for f in SYMBOLIC & set(feats):
                stripped_by_hand[f] = stripped_by_hand.get(f, 0) + 1
        if drawn.dynamic_params:
            stripped_by_hand["dynamic_param"] = stripped_by_hand.get("dynamic_param", 0) + len(drawn.dynamic_params)
    assert set(stripped_by_hand) == {"match_cast", "shape_of", "dynamic_param"}, stripped_by_hand
    assert cuda.gen_stats.plan_features_stripped == stripped_by_hand
    assert llvm.gen_stats.plan_features_stripped == {}


def test_a_cuda_campaigns_cases_avoid_excluded_ops_and_count_in_the_generation_statistics(specs):
    maker = _maker(specs, ["llvm", "cuda"], only_ops=["mod", "round", "add"], dtypes=["float16", "float32"])
    for index in range(12):
        case = maker.make_case(index)
        assert not any(n.op in ("mod", "round") and n.dtype == "float16" for n in case.graph.operators)
        plan = _plan_of(case.lowering)
        assert not plan.dynamic_params and not any(SYMBOLIC & set(f) for f in plan.node_features.values())
    stats = maker.gen_stats
    assert stats.avoided["cuda"].get("mod[float16]", 0) + stats.avoided["cuda"].get("round[float16]", 0) > 0
    assert sum(stats.plan_features_stripped.values()) > 0
    # a case made again from its graph (resumed) is not counted twice
    before = dict(stats.plan_features_stripped)
    maker.make_case(0, maker.make_case(99).graph)
    assert stats.plan_features_stripped != before  # case 99 was generated: counted
    again = dict(stats.plan_features_stripped)
    maker.make_case(3, case.graph)
    assert stats.plan_features_stripped == again


def test_an_llvm_campaign_strips_nothing(specs):
    maker = _maker(specs, ["llvm"])
    drawn = [_plan_of(maker.make_case(i).lowering) for i in range(15)]
    assert any(p.dynamic_params for p in drawn) and any("match_cast" in f for p in drawn for f in p.node_features.values())
    assert maker.gen_stats.plan_features_stripped == {} and maker.gen_stats.avoided == {}
