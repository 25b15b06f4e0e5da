"""Each IR has defaults of its own (campaign.settings.DIALECT_DEFAULTS): Relay's chosen by
distinct findings an hour on Relay, Relax's kept as they were chosen on Relax; the command
line takes the fuzzed IR's, and a flag given overrides it."""
import json

import pytest

from conftest import run_hirfuzz
from hirfuzz.campaign.cases import CaseMaker
from hirfuzz.campaign.settings import DEFAULT_MAX_PASSES, DIALECT_DEFAULTS, Settings, defaults_for
from hirfuzz.core.passes import load_catalog
from hirfuzz.core.spec import load_specs
from hirfuzz.dialects import dialect_info


def test_relax_keeps_the_defaults_it_was_benchmarked_with():
    relax = defaults_for("relax")
    assert (relax.ops, relax.mutations, relax.executors, relax.max_passes) == (40, 0, (), DEFAULT_MAX_PASSES)
    # finishing a Relax finding is bounded only as before (reduce_graph's own checks)
    assert (relax.reduce_trials, relax.reduce_seconds, relax.reduce_share) == (None, None, None)


def test_every_ir_s_default_executors_are_its_own_and_its_reductions_are_bounded_where_said():
    for name, defaults in DIALECT_DEFAULTS.items():
        assert set(defaults.executors) <= set(dialect_info(name).executors), name
    relay = defaults_for("relay")
    assert relay.reduce_trials and relay.reduce_seconds and relay.reduce_share is not None


@pytest.mark.parametrize("max_passes", [1, 2])
def test_drawn_sequences_hold_at_most_max_passes(max_passes):
    info = dialect_info("relay")
    settings = Settings(dialect="relay", seed=3, ops=4, max_passes=max_passes)
    maker = CaseMaker(settings, load_specs(dialect="relay"), info, load_catalog([], builtin=info.catalog))
    lengths = [len(c["passes"]) for i in range(40) for c in maker.make_case(i).configs if c["passes"]]
    assert lengths and max(lengths) == max_passes, lengths


@pytest.mark.slow  # two Relay campaigns of one case
def test_the_command_line_takes_the_fuzzed_ir_s_defaults_and_a_flag_overrides_them(tmp_path):
    relay = defaults_for("relay")
    proc = run_hirfuzz("--ir", "relay", "--iterations", 1, "--no-progress", "--jobs", 1, "--out", tmp_path / "a",
                       "--no-reduce", "--seed", 3)
    assert proc.returncode == 0, proc.stderr
    settings = json.loads((tmp_path / "a" / "campaign.json").read_text())["settings"]
    assert (settings["ops"], settings["max_passes"], settings["reduce_share"]) == (
        relay.ops, relay.max_passes, relay.reduce_share), settings
    assert settings["executors"] == ["vm", *relay.executors]
    proc = run_hirfuzz("--ir", "relay", "--iterations", 1, "--no-progress", "--jobs", 1, "--out", tmp_path / "b",
                       "--no-reduce", "--seed", 3, "--ops", 3, "--max-passes", 2, "--executors", "none",
                       "--reduce-share", "none", "--reduce-trials", 7)
    assert proc.returncode == 0, proc.stderr
    settings = json.loads((tmp_path / "b" / "campaign.json").read_text())["settings"]
    assert (settings["ops"], settings["max_passes"], settings["executors"], settings["reduce_share"],
            settings["reduce_trials"]) == (3, 2, ["vm"], None, 7), settings
    bad = run_hirfuzz("--ir", "relay", "--reduce-share", "-1", "--iterations", 1)
    assert bad.returncode != 0 and "--reduce-share" in bad.stderr and "Traceback" not in bad.stderr
