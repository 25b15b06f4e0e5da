"""One bug masking another within a case (issue 27): the worker runs every configuration of a
case, and a configuration that fails with a finding the campaign already holds no longer hides
a later one that fails otherwise."""
from hirfuzz.campaign.judge import Judge
from hirfuzz.protocol import encode_array

from test_pass_checks import SMALL, maker


def crash(message: str) -> dict:
    return {"status": "error", "stage": "passes", "exc_type": "InternalError", "message": message,
            "traceback": f"InternalError: {message}\n", "timings": {}, "stages": {}}


def answer_with_two_crashes(case) -> dict:
    """The baseline agrees with the reference; the last two configurations fail, differently."""
    fine = {"status": "ok", "outputs": [encode_array(f.value) for f in case.expected], "timings": {}, "stages": {}}
    others = [dict(fine) for _ in case.configs[1:]]
    others[-2], others[-1] = crash("Check failed: first fault"), crash("Check failed: second fault")
    return {**fine, "others": others}


def test_a_configuration_failing_with_a_known_finding_does_not_hide_a_new_one_after_it(specs):
    case = maker(**SMALL, pass_checks=2).make_case(0)
    answer = answer_with_two_crashes(case)
    judge = Judge(specs, {})
    first = judge.classify(case, answer).finding
    assert "first fault" in first.message and first.extra["config"] == case.configs[-2]
    # the campaign holds the first: the second is the case's finding
    past = judge.classify(case, answer, known=lambda signature: signature == first.signature)
    second = past.finding
    assert "second fault" in second.message and second.extra["config"] == case.configs[-1] and past.past_known
    # both held: the first known one is the outcome (a hit), as without `known`
    both = {first.signature, second.signature}
    again = judge.classify(case, answer, known=both.__contains__)
    assert again.finding.signature == first.signature and not again.past_known
