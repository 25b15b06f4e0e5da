"""The Relay pass catalog loads without TVM, and drawn sequences respect its properties,
including those a pass ends (ToGraphNormalForm ends A-normal form)."""
import numpy as np
import pytest

from hirfuzz.core.passes import (argument_variants, draw_sequence, load_catalog, parse_sequence,
                                 unmet_requirements)
from hirfuzz.dialects import dialect_info
from hirfuzz.errors import HirfuzzError

HIRGEN_PASSES = {"AlterOpLayout", "AnnotateSpans", "BatchingOps", "CanonicalizeCast", "CanonicalizeOps",
                 "DeadCodeElimination", "DynamicToStatic", "FastMath", "FirstOrderGradient",
                 "EliminateCommonSubexpr", "MergeCompilerRegions", "Inline", "LambdaLift", "LazyGradientInit",
                 "PartialEvaluate", "Legalize", "FoldConstant", "ToANormalForm", "ToGraphNormalForm",
                 "SimplifyInference", "ToBasicBlockNormalForm", "FuseOps", "DefuseOps", "SimplifyExpr",
                 "InferType"}


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(builtin=dialect_info("relay").catalog)


def test_relay_catalog_loads_with_hirgens_passes(catalog):
    assert 30 <= len(catalog.entries) <= 45
    assert HIRGEN_PASSES <= set(catalog.entries)
    assert not catalog.entries["LazyGradientInit"].draw
    assert not catalog.entries["FastMath"].preserves_results
    assert catalog.entries["ToANormalForm"].ends == ("gnf",)


def test_drawn_sequences_respect_requires_and_ends(catalog):
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(300):
        seq = draw_sequence(catalog, rng, max_len=8, only_preserving=False)
        assert unmet_requirements(seq, catalog) is None
        assert all(catalog.entries[s["name"]].draw for s in seq)
        for i, step in enumerate(seq):
            seen.add(step["name"])
            if step["name"] == "PartialEvaluate":  # ToANormalForm earlier, and nothing since ended anf
                last_anf = max(j for j in range(i) if seq[j]["name"] == "ToANormalForm")
                assert all("anf" not in catalog.entries[s["name"]].ends for s in seq[last_anf + 1:i])
    assert "PartialEvaluate" in seen


@pytest.mark.parametrize("name", ["FuseOps", "CanonicalizeCast"])
def test_passes_reading_op_patterns_come_after_simplify_inference(catalog, name):
    """dropout or instance_norm have no compute or op pattern before SimplifyInference
    rewrites them: a pass-order precondition that campaigns reported as TVM crashes."""
    rng = np.random.default_rng(1)
    drawn = 0
    for _ in range(400):
        names = [s["name"] for s in draw_sequence(catalog, rng, max_len=8, only_preserving=False)]
        if name in names:
            drawn += 1
            assert "SimplifyInference" in names[:names.index(name)], names
    assert drawn > 0
    with pytest.raises(HirfuzzError, match="inference-simplified"):
        parse_sequence(name, catalog)


def test_a_pass_that_ends_a_property_unmeets_it(catalog):
    assert parse_sequence("ToANormalForm,PartialEvaluate", catalog)
    with pytest.raises(HirfuzzError, match="PartialEvaluate"):
        parse_sequence("ToANormalForm,ToGraphNormalForm,PartialEvaluate", catalog)
    assert unmet_requirements([{"name": "ToANormalForm", "args": {}}, {"name": "FoldConstant", "args": {}},
                               {"name": "PartialEvaluate", "args": {}}], catalog) is None


def test_argument_variants_try_each_choice_once():
    assert argument_variants({}) == [{}]
    assert argument_variants({"a": [1, 2], "b": [True, False]}) == [
        {"a": 1, "b": True}, {"a": 2, "b": True}, {"a": 1, "b": False}]


def test_relax_catalog_unchanged_by_ends():
    relax = load_catalog()
    assert all(e.ends == () for e in relax.entries.values())
