"""A user's pass catalog (--passes) takes the form of the shipped passes.yaml: a section per
dialect, each holding a `passes:` list, of which a campaign reads its own dialect's; or, for
a file that serves one dialect, just the `passes:` list, whose passes join whichever dialect
the campaign fuzzes. A file that cannot serve the campaign says so in one line naming it."""
import re

import pytest

from conftest import run_hirfuzz
from hirfuzz.core.passes import load_catalog, parse_sequence
from hirfuzz.dialects import dialect_info
from hirfuzz.errors import HirfuzzError

SECTIONED = """\
relax:
  passes:
    - {name: MineForRelax, import: "mine_passes:for_relax"}
relay:
  passes:
    - {name: MineForRelay, import: "mine_passes:for_relay"}
"""


@pytest.fixture
def catalog_file(tmp_path):
    (tmp_path / "mine_passes.py").write_text("")  # found beside the catalog; never imported here

    def write(text: str):
        path = tmp_path / "mine.yaml"
        path.write_text(text)
        return path
    return write


@pytest.mark.parametrize("dialect,mine,other", [("relax", "MineForRelax", "MineForRelay"),
                                                ("relay", "MineForRelay", "MineForRelax")])
def test_a_campaign_reads_its_own_dialects_section(catalog_file, dialect, mine, other):
    path = catalog_file(SECTIONED)
    builtin = load_catalog(builtin=dialect_info(dialect).catalog).names()
    assert load_catalog([path], builtin=dialect_info(dialect).catalog).names() == builtin + [mine]
    proc = run_hirfuzz("--ir", dialect, "--passes", path, "--list-passes")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == builtin + [mine] and other not in proc.stdout


def test_a_passes_list_at_the_top_joins_either_dialects_catalog(catalog_file):
    path = catalog_file('passes:\n  - {name: MineForAny, import: "mine_passes:for_any"}\n')
    for dialect in ("relax", "relay"):
        assert load_catalog([path], builtin=dialect_info(dialect).catalog).names()[-1] == "MineForAny"


@pytest.mark.parametrize("text,message", [
    ('relay:\n  passes:\n    - {name: X, import: "mine_passes:x"}\n', "no 'relax' section (it has relay)"),
    ("relx:\n  passes: []\n", "unknown section(s) relx"),
    ("passes: []\nrelax:\n  passes: []\n", "both a 'passes' list and section(s) relax"),
    ('relax:\n  - {name: X, import: "mine_passes:x"}\n', "expected 'relax.passes' to hold a list"),
    ("[]\n", "expected a mapping"),
    ('relax:\n  passes:\n    - {name: X, import: "mine_passes:x", colour: red}\n', "relax.passes[0] (X): unknown key"),
    ('relax:\n  passes:\n    - {name: X, import: "mine_passes:x", runs_inside_it: CanonicalizeBindings}\n',
     "relax.passes[0] (X): 'runs_inside_it' is a list of pass names"),
    ('relax:\n  passes:\n    - {name: X, import: "mine_passes:x", runs_inside_it: [Canonicalise]}\n',
     "pass 'X': runs_inside_it names 'Canonicalise', which is not another of TVM's passes in the catalog"),
    ("relax:\n  passes: []\n  stand_ins: CanonicalizeBindings\n", "relax.stand_ins: a list of pass names"),
    ("passes: []\nstand_ins: [Canonicalise]\n",
     "stand_ins names 'Canonicalise', which is not a pass in the relax catalog"),
])
def test_a_catalog_that_cannot_serve_the_campaign_is_named_in_one_line(catalog_file, text, message):
    path = catalog_file(text)
    with pytest.raises(HirfuzzError, match=re.escape(message)):
        load_catalog([path])
    proc = run_hirfuzz("--passes", path, "--list-passes")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith(f"hirfuzz: error: {path}: ")
    assert message in proc.stderr


def test_a_pass_that_runs_tvm_passes_inside_it_names_them_in_its_steps(catalog_file):
    """What the worker tries alone where the pass fails (dialects.base.innermost_failing)."""
    path = catalog_file('passes:\n  - {name: Mine, import: "mine_passes:mine", runs_inside_it: [CanonicalizeBindings]}\n')
    catalog = load_catalog([path])
    assert parse_sequence("Mine", catalog)[0]["runs_inside_it"] == ["CanonicalizeBindings"]
    assert "runs_inside_it" not in parse_sequence("CanonicalizeBindings", catalog)[0]


def test_the_catalog_s_stand_ins_are_tried_after_the_passes_a_pass_runs_inside_it(catalog_file):
    """What reduction tries in place of a pass of a failing sequence (reduction_steps.StandIn):
    the passes it runs inside itself, then the catalog's stand-ins (the built-in Relax
    catalog's, then a user's), each once, never the pass itself, each as --pass-seq makes it."""
    from hirfuzz.core.passes import stand_ins_for
    path = catalog_file('passes:\n  - {name: Mine, import: "mine_passes:mine",'
                        ' runs_inside_it: [EliminateCommonSubexpr]}\n'
                        "stand_ins: [Normalize, CanonicalizeBindings]\n")
    catalog = load_catalog([path])
    assert catalog.stand_ins == ("CanonicalizeBindings", "Normalize")

    def names(name: str) -> list[str]:
        return [step["name"] for step in stand_ins_for(parse_sequence(name, catalog)[0], catalog)]
    assert names("Mine") == ["EliminateCommonSubexpr", "CanonicalizeBindings", "Normalize"]
    assert names("ReorderTakeAfterMatmul") == ["CanonicalizeBindings", "EliminateCommonSubexpr", "Normalize"]
    assert names("CanonicalizeBindings") == ["Normalize"]
    assert stand_ins_for(parse_sequence("Mine", catalog)[0], catalog)[0] == parse_sequence("EliminateCommonSubexpr",
                                                                                           catalog)[0]
    assert load_catalog(builtin=dialect_info("relay").catalog).stand_ins == ()
