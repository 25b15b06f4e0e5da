"""Case makers (campaign.makers): the same seed draws the same cases, whatever the number of
maker processes, and a resumed campaign draws what an uninterrupted one would."""
import json

import pytest

from hirfuzz.campaign.cases import CaseMaker
from hirfuzz.campaign.coverage_ledger import COVERAGE_LAG
from hirfuzz.campaign.makers import ProcessMakers, RayMakers
from hirfuzz.campaign.settings import Settings
from hirfuzz.core.coverage import Coverage
from hirfuzz.core.passes import load_catalog
from hirfuzz.dialects import dialect_info

# past the lag, so that later cases are generated against earlier cases' coverage
CASES = COVERAGE_LAG + 8
SETTINGS = Settings(seed=3, ops=6, iterations=CASES)


def new_maker(specs, settings=SETTINGS) -> CaseMaker:
    info = dialect_info("relax")
    return CaseMaker(settings, specs, info, load_catalog([], builtin=info.catalog))


def drawn(case) -> str:
    """What a worker is sent of a case: its graph, inputs, configurations and lowering."""
    return json.dumps(case.request, sort_keys=True)


def by_pool(specs, makers: int) -> tuple[list[str], CaseMaker]:
    maker = new_maker(specs)
    pool = ProcessMakers(makers, maker, 0, CASES)
    try:
        return [drawn(pool.take(i)) for i in range(CASES)], maker
    finally:
        pool.close()


def test_the_same_seed_draws_the_same_cases_with_1_2_and_8_makers(specs):
    alone = new_maker(specs)  # the coordinator drawing them itself (--makers 0)
    expected = [drawn(alone.make_case(i)) for i in range(CASES)]
    assert len(set(expected)) == CASES
    for makers in (1, 2, 8):
        cases, maker = by_pool(specs, makers)
        assert cases == expected, f"--makers {makers} drew other cases"
        assert maker.coverage == alone.coverage and maker.gen_stats == alone.gen_stats, makers


def test_a_case_sees_the_coverage_of_the_cases_the_lag_before_it(specs):
    """Up to the lag a case is drawn as against no coverage at all; past it, the coverage of
    the earlier cases steers some (a few ops, so that it soon turns insertions down)."""
    few = Settings(seed=3, ops=6, iterations=CASES, only_ops=["abs", "exp", "negative", "sqrt"])
    maker, fresh = new_maker(specs, few), new_maker(specs, few)
    steered = []
    for i in range(CASES):
        case = maker.make_case(i)
        unsteered = fresh.draw_case(i, Coverage(), frozenset()).case
        steered.append(drawn(case) != drawn(unsteered))
    assert not any(steered[:COVERAGE_LAG + 1]) and any(steered[COVERAGE_LAG + 1:]), steered


def test_a_resumed_maker_draws_what_an_uninterrupted_one_draws(specs):
    """The checkpoint's coverage.json and `coverage_recent` (CoverageLedger.saved) give the
    next cases the coverage they would have seen; its generation statistics carry on."""
    whole = new_maker(specs)
    expected = [drawn(whole.make_case(i)) for i in range(CASES)]
    first = new_maker(specs)
    stop = COVERAGE_LAG + 3
    assert [drawn(first.make_case(i)) for i in range(stop)] == expected[:stop]
    coverage, recent = first.ledger.saved(stop)
    assert recent and all(stop - COVERAGE_LAG <= case < stop for _, _, case in recent)
    state = json.loads(json.dumps({"coverage": json.loads(coverage), "coverage_recent": recent,
                                   "gen_stats": first.gen_stats.__dict__, "next_index": stop}))
    resumed = new_maker(specs)
    resumed.restore(state)
    assert [drawn(resumed.make_case(i)) for i in range(stop, CASES)] == expected[stop:]
    assert resumed.coverage == whole.coverage and resumed.gen_stats == whole.gen_stats
    assert resumed.ledger.saved(CASES) == whole.ledger.saved(CASES)  # the next checkpoint's files alike


@pytest.mark.ray
def test_makers_on_a_ray_instance_draw_the_cases_the_coordinator_draws(specs):
    """--ray: the makers are actors; what each must learn of the coverage goes with its calls."""
    ray = pytest.importorskip("ray")
    from hirfuzz.campaign.raypool import LOCAL, connect
    expected = [drawn(new_maker(specs).make_case(i)) for i in range(CASES)]
    connect(LOCAL)
    try:
        maker = new_maker(specs)
        pool = RayMakers(2, maker, 0, CASES)
        try:
            assert [drawn(pool.take(i)) for i in range(CASES)] == expected
        finally:
            pool.close()
    finally:
        ray.shutdown()
