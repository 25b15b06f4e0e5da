"""A worker runs a built program protocol.REPEAT_RUNS times and judges the first run whose
results differ from the first's (worker.run_repeatedly): a kernel reading memory it never
wrote is right on fresh pages and wrong after. A stand-in dialect's runs, so that which run
differs is certain (tests/relax/test_gradient_oracle.py has TVM's max_pool2d gradient)."""
import numpy as np

from hirfuzz import worker
from hirfuzz.protocol import REPEAT_RUNS


class Runs:
    """A dialect whose n-th run returns `results[n]` (the last one after that)."""

    def __init__(self, *results):
        self.results, self.calls = [[np.asarray(r)] for r in results], 0

    def run(self, executable, config, inputs):
        self.calls += 1
        return self.results[min(self.calls, len(self.results)) - 1]


def test_a_later_run_that_differs_is_the_one_judged():
    dialect = Runs([1.0, 0.0], [1.0, 0.0], [3.0, 0.0])
    outputs = worker.run_repeatedly(dialect, None, {}, [])
    assert outputs[0].tolist() == [3.0, 0.0] and dialect.calls == REPEAT_RUNS == 3


def test_runs_alike_give_the_first_run_s_results_and_nan_is_alike():
    dialect = Runs([np.nan, 2.0])
    assert np.isnan(worker.run_repeatedly(dialect, None, {}, [])[0][0]) and dialect.calls == REPEAT_RUNS


def test_a_slow_first_run_is_not_repeated(monkeypatch):
    monkeypatch.setattr(worker, "RUN_AGAIN_UNDER_S", 0.0)  # every run is "slow"
    dialect = Runs([1.0], [2.0])
    assert worker.run_repeatedly(dialect, None, {}, [])[0].tolist() == [1.0] and dialect.calls == 1
