"""The dialect contract (hirfuzz/dialects/README.md), checked for every dialect hirfuzz finds:
its files, its DialectInfo, its reproducer writer, and one small graph lowered, mutated,
put through a pass, built, run and rendered by its worker-side Dialect, under the
interpreter that holds its TVM (this Python for Relax; Relay's managed environment).

A dialect added under hirfuzz/dialects/ is checked here without a line of this file changing."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hirfuzz.core.calls import call_records
from hirfuzz.core.coverage import Coverage
from hirfuzz.core.generate import generate_graph
from hirfuzz.core.passes import load_catalog
from hirfuzz.core.reference import interpret
from hirfuzz.core.spec import load_specs
from hirfuzz.dialects import dialect_info, dialect_names
from hirfuzz.dialects.base import ReproducerWriter
from hirfuzz.envs import resolve_interpreter
from hirfuzz.protocol import make_config

ROOT = Path(__file__).resolve().parents[1]
DIALECTS = ROOT / "hirfuzz" / "dialects"

# every dialect's parts, under the same names (what each does: dialects/README.md)
FILES = ["__init__.py", "dialect.py", "lower.py", "passes.py", "executors.py", "text.py", "violate.py", "repro.py"]
HIRGEN_REWRITES = {"func_to_closure", "wrap_return", "call_wrap"}  # one name per idea in every dialect
OPS = ["add", "subtract", "multiply", "maximum", "nn.relu"]
PASS = {"name": "FoldConstant", "args": {}}   # in every catalog, preserves results

# runs under the dialect's interpreter: the worker-side half of the contract
WORKER_SIDE = r"""
import importlib, json, sys
import numpy as np
from hirfuzz.core.calls import op_traits
from hirfuzz.dialects import load_dialect
from hirfuzz.dialects.base import Dialect
from hirfuzz.dialects.mutation import MutatorRegistry

job = json.load(sys.stdin)
name, request, config, with_passes = job["dialect"], job["request"], job["config"], job["pass_config"]
inputs = [np.array(values, dtype=dtype) for values, dtype in job["inputs"]]
dialect = load_dialect(name)
assert isinstance(dialect, Dialect) and dialect.name == name, dialect
registry = importlib.import_module(f"hirfuzz.dialects.{name}.mutators").REGISTRY
assert isinstance(registry, MutatorRegistry), registry

module = dialect.lower(request)
dialect.check_well_formed(module)
mutant, applied = dialect.mutate(module, 0, 3, op_traits(request["calls"].values()))
dialect.check_well_formed(mutant)
transformed = dialect.apply_passes(mutant, with_passes)


def results(mod, config):
    built = dialect.build(mod, config)
    return [r.tolist() for r in dialect.run(dialect.load(built, config), config, inputs)]


text, constants = dialect.render(module)
print(json.dumps({"mutators": sorted(registry.mutators), "applied": applied, "text": text,
                  "original": results(module, config), "transformed": results(transformed, with_passes)}))
"""


def interpreter(info) -> tuple[str, dict]:
    """The dialect's worker interpreter, as a campaign picks it without --tvm-python."""
    if info.environment is None:
        return sys.executable, {}
    return resolve_interpreter(info.environment)


def small_case(name: str, seed: int = 3):
    specs = load_specs(dialect=name)
    graph = generate_graph(specs, np.random.default_rng(seed), 5, Coverage(), ops=OPS, dtypes=["float32"])
    rng = np.random.default_rng(seed)
    inputs = [rng.uniform(-2, 2, size=v.outputs[0].shape).astype(v.outputs[0].dtype) for v in graph.variables]
    request = {"case": 0, "graph": graph.to_json(), "calls": call_records(graph, specs), "plan": None}
    return specs, graph, inputs, request


@pytest.mark.parametrize("name", dialect_names())
def test_the_dialect_has_every_part_under_its_name(name):
    folder = DIALECTS / name
    missing = [f for f in FILES if not (folder / f).is_file()]
    assert not missing, f"dialects/{name} lacks {missing}"
    assert (folder / "mutators.py").is_file() or (folder / "mutators" / "__init__.py").is_file()
    info = dialect_info(name)
    assert info.name == name and info.baseline in info.executors
    assert isinstance(info.reproducer_writer(), ReproducerWriter)
    assert info.implementation == f"hirfuzz.dialects.{name}.dialect"
    assert PASS["name"] in load_catalog(builtin=info.catalog).entries


@pytest.mark.parametrize("name", dialect_names())
def test_one_small_graph_goes_through_every_step(name):
    info = dialect_info(name)
    specs, graph, inputs, request = small_case(name)
    config = make_config(info.baseline, dialect=name)
    job = {"dialect": name, "request": request, "config": config,
           "pass_config": make_config(info.baseline, passes=[PASS], dialect=name),
           "inputs": [[a.tolist(), a.dtype.name] for a in inputs]}
    python, extra = interpreter(info)
    env = {**os.environ, **extra, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([python, "-c", WORKER_SIDE], input=json.dumps(job), capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    reply = json.loads(proc.stdout.strip().splitlines()[-1])

    assert HIRGEN_REWRITES <= set(reply["mutators"]), reply["mutators"]
    assert reply["applied"] and set(reply["applied"]) <= set(reply["mutators"]), reply["applied"]
    assert reply["text"].strip()
    facts = interpret(graph, specs, {v.id: a for v, a in zip(graph.variables, inputs)})
    expected = [facts[ref].value for ref in graph.results()]
    assert len(reply["original"]) == len(expected)
    for got, want in zip(reply["original"], expected):
        np.testing.assert_allclose(np.array(got, dtype=want.dtype), want, rtol=1e-5, atol=1e-6)
    # the mutant after the pass computes what the original does (a mutant may expose more results)
    for got, want in zip(reply["transformed"], reply["original"]):
        np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-5, atol=1e-6)
