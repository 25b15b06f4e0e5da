"""A pass's documented input (its catalog entry's `input_dtypes`, core.passes.input_contract_unmet):
Relax's ToMixedPrecision "assumes the input module to be fp32 only", so a program computing
in another dtype is not judged under a sequence holding it. bench21 relax-now 0036 (float64:
atan2 left with a float32 and a float64 operand) and 0038 (int64) were false alarms."""
import json
from pathlib import Path

from hirfuzz.campaign.judge import Judge
from hirfuzz.core.graph import Graph
from hirfuzz.core.passes import _step, input_contract_unmet
from hirfuzz.dialects import load_dialect
from hirfuzz.worker import execute_case
from test_pass_checks import maker

SAVED = Path(__file__).parent / "data" / "mixed_precision_float64_case.json"


def saved_case(dtype: str):
    """bench21 relax-now 0036's reduced program (matmul, batch_flatten, atan2), every dtype
    `dtype`, under its baseline and ToMixedPrecision as a campaign draws it now."""
    made = maker(seed=5)
    text = SAVED.read_text().replace('"float64"', f'"{dtype}"')
    saved = json.loads(text)
    step = _step(made.catalog.entries["ToMixedPrecision"], {"out_dtype": "float16"})
    configs = [saved["configs"][0], {**saved["configs"][1], "passes": [step]}]
    return made.make_case(0, graph=Graph.from_json(saved["graph"]), lowering={}, configs=configs)


def test_to_mixed_precision_on_a_float64_program_fails_and_is_not_judged(specs):
    case = saved_case("float64")
    reply = execute_case(case.request, load_dialect("relax"))
    assert reply["others"][0]["status"] == "error", reply["others"][0]  # TVM fails on it: out of contract
    assert Judge(specs, {}).classify(case, reply).finding is None
    assert input_contract_unmet(case.configs[1]["passes"], case.graph) == \
        "ToMixedPrecision takes programs computing in float32 only, not float64"


def test_the_same_program_in_float32_is_judged():
    case = saved_case("float32")
    assert input_contract_unmet(case.configs[1]["passes"], case.graph) is None
    reply = execute_case(case.request, load_dialect("relax"))
    assert reply["others"][0]["status"] != "error", reply["others"][0]  # within its contract it works


def test_a_share_of_cases_is_drawn_in_float32_alone_where_to_mixed_precision_is_judged():
    made = maker(seed=5, ops=8)
    contract = [i for i in range(60) if made.contract_dtypes(i) == ["float32"]]
    assert 5 <= len(contract) <= 25, contract  # CONTRACT_SHARE of 60
    for index in contract[:3]:
        case = made.make_case(index)
        assert {op.dtype for op in case.graph.operators} == {"float32"}
    others = [made.make_case(i) for i in [i for i in range(60) if i not in contract][:5]]
    assert any({op.dtype for op in case.graph.operators} != {"float32"} for case in others)
    # the user's --dtypes stand
    pinned = maker(seed=5, dtypes=["float16"])
    assert not any(pinned.contract_dtypes(i) for i in range(60))
