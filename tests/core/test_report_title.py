"""Bug-report titles: at most 100 characters, cut between words, never inside one."""
import pytest

from hirfuzz.campaign.report import TITLE_WIDTH, shorten, title
from hirfuzz.core.graph import Graph, Node, Ref, TensorType
from hirfuzz.dialects import dialect_info

LONG = ("InternalError: Check failed: (t.MatchesCode(DLDataTypeCode::kDLFloat)) is false: the operands "
        "of an addition of boolean tensors must be floating point values when legalised for llvm")


@pytest.mark.parametrize("width", [40, 60, 100])
def test_a_shortened_line_ends_with_a_whole_word(width):
    short = shorten(LONG, width)
    assert len(short) <= width and short.endswith(" ...")
    kept, words = short[:-4].split(), LONG.split()[:len(short[:-4].split())]
    # whole words of the text, in order, none cut (the last one without its trailing colon)
    assert kept[:-1] == words[:-1] and kept[-1] == words[-1].rstrip(",:;(")


def test_a_title_names_the_reduced_programs_operator_and_fits():
    graph = Graph()
    graph.add(Node(0, "var", [TensorType((2, 2), "bool")]))
    graph.add(Node(1, "op", [TensorType((2, 2), "bool")], op="add", dtype="bool", inputs=[Ref(0), Ref(0)]))
    finding = {"kind": "crash", "stage": "build", "message": LONG, "extra": {}}
    for dialect in ("relax", "relay"):
        text = title(finding, graph, dialect_info(dialect))
        assert text.startswith(f"[Bug][{dialect.capitalize()}] add (bool): build fails: InternalError")
        assert len(text) <= TITLE_WIDTH and text.endswith(" ...")
