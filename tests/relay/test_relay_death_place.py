"""A Relay worker's death keyed by where it died (issue 33): TVM 0.19 prints nothing as it
segfaults, so the worker's breadcrumbs (standard library only: its venv has no yaml) are
all that says which pass of which configuration killed it."""
from pathlib import Path

from hirfuzz.breadcrumbs import Place, Stage
from hirfuzz.campaign.coordinator import Campaign, Settings
from hirfuzz.campaign.sandbox import Death, Worker
from hirfuzz.core.spec import load_specs
from hirfuzz.protocol import make_config

from relay_env import relay_interpreter

USER_PASSES = Path(__file__).parents[1] / "user_passes"


def test_a_relay_worker_that_dies_in_a_pass_names_it(tmp_path):
    python, env = relay_interpreter()
    settings = Settings(out=str(tmp_path / "out"), iterations=0, ops=4, dialect="relay", tvm_python=python,
                        tvm_env=env, seed=1)
    host = Campaign(settings, load_specs(dialect="relay"), progress=False).reductions.host
    crash = {"name": "PlantedSegfault", "args": {}, "import": "deaths:segfault", "search_dir": str(USER_PASSES)}
    configs = [make_config(dialect="relay"),
               make_config(dialect="relay", passes=[{"name": "SimplifyExpr", "args": {}}, crash], opt_level=1)]
    drawn = host.make_case(0)
    case = host.make_case(0, drawn.graph, configs=configs, lowering=drawn.lowering)
    w = Worker(tmp_path / "worker.log", python=python, extra_env=env, dialect="relay")
    try:
        death = w.run_one(case.request, timeout_s=120)
    finally:
        w.close()
    assert isinstance(death, Death) and death.signal == "SIGSEGV", death
    assert death.place == Place(Stage.PASSES, 1, "PlantedSegfault"), death
    finding = host.classify(case, death).finding
    assert finding.signature == "crash|worker|SIGSEGV|passes:PlantedSegfault", finding.signature
    assert finding.extra["config"] == configs[1]
