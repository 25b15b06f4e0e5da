"""No bug masking another (campaign.avoidance): the construct a confirmed finding's reduced
program names, generation without it, and the schedule that fixes from which case on."""
import threading

import numpy as np
import pytest

from hirfuzz.campaign.avoidance import AvoidanceSchedule, Construct, construct_of
from hirfuzz.campaign.cases import CaseMaker
from hirfuzz.campaign.settings import Settings
from hirfuzz.core.coverage import Coverage
from hirfuzz.core.generate import GenStats, drawable, generate_graph, single_op_graph
from hirfuzz.core.passes import load_catalog
from hirfuzz.dialects import dialect_info
from hirfuzz.errors import HirfuzzError
from hirfuzz.protocol import make_config

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
    assert construct_of(CONFIRMED, reduced_case(graph, lowering={"plan": {}})) is None
    assert construct_of(CONFIRMED, reduced_case(graph, lowering={"mutation": {"seed": [0], "count": 1}})) is None
    assert construct_of(CONFIRMED, reduced_case(graph, disruption={"violation": {}})) is None
    two = generate_graph(specs, np.random.default_rng(3), 2, Coverage(), ops=["abs", "negative"], dtypes=["float32"])
    assert len(two.operators) == 2
    assert construct_of({"kind": "wrong-result", "confirmed": True}, reduced_case(two)) is None


def test_generation_never_draws_an_avoided_op_dtype_and_counts_each_draw_turned_down(specs):
    stats = GenStats()
    avoid = frozenset({("atan2", "float32")})
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
    assert schedule.avoided_at(5) == {("atan2", "float32")}
    assert schedule.avoided_at(4) == frozenset()             # the schedule says from which case
    assert schedule.to_json() == [{"construct": {"op": "atan2", "dtype": "float32", "target": "llvm"},
                                   "finding": "findings/0001-crash-x", "from_case": 5}]
    again = _schedule(specs, ["atan2", "abs"], None)
    again.restore(schedule.to_json())
    assert again.avoided_at(7) == {("atan2", "float32")} and again.avoidances == schedule.avoidances


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
