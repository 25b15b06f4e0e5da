"""A restructure of the coordinator changes nothing: a short fixed-seed Relax campaign
generates the same graphs, lowerings and configurations, judges every case alike and
saves the same findings, reduced alike, as the code before it did.

The golden file was first printed by tools/campaign_fingerprint.py at commit b3c28b5,
before the coordinator was split into cases, judging and summary and learnt the cross-IR
oracle (in another checkout folder: the fingerprint holds in any); the split and the
oracle left it as it was. It is reprinted whenever a change alters generation or judging
on purpose, and the commit that reprints it says why (so far: the shift ops' amount domain,
the generator's witness, passes that may change results joining the drawn sequences,
violations TVM documents as valid no longer drawn, summary.json's disruptive section
counting what its findings' repro.py holds: `reproducers`, empty in this campaign; the
planted worker SIGSEGV going to unconfirmed, as its scripts only raise a build error and a
worker killed by a signal is now confirmed only by a script killed by it; the mutant run
after the drawn pass sequence too, and structure-building mutators drawn first: the strict
campaign's mutator counts and configurations, its findings and judgements unchanged; each case's graph drawn from a random stream of its own and steered by the coverage of the cases 16 before it, so that case makers can draw side by side (issue 28): every campaign's graphs, the configurations unchanged, with what those graphs find; and the disruptive campaign's arity violations keyed as one missing check, and bool programs TVM cannot build no longer drawn as violations (issue 30); a pattern-rewrite pass's step naming the passes TVM runs inside it, `runs_inside_it` (issue 27): the configuration digests of the sequences holding one, nothing else; the stand_in reduction step (issue 27): the strict campaign's case 25 reduced after CanonicalizeBindings, ToMixedPrecision, no longer FoldBatchnormToConv2D, ToMixedPrecision, and its graph under that sequence to another two operators, its signature and the counts unchanged; InlinePrivateFunctions' step naming CanonicalizeBindings as run inside it (issue 27): the configuration digests of cases 21, 24 and 26, nothing else; a fifth of the cases drawn in the input dtypes a catalog pass documents, ToMixedPrecision's float32 (issue 27): the strict campaign's cases 7, 9, 14, 15, 17, 18, 22 and 25 drawn in float32 alone, its findings' signatures and hits unchanged); the Relax ops added in session 22 (nn.max_pool1d, nn.avg_pool1d, nn.adaptive_avg_pool1d, nn.conv1d_transpose, nn.conv2d_transpose, nn.nll_loss, collapse_sum_like, collapse_sum_to, median, bucketize, reverse_sequence) in the ops drawn (issue 27): every campaign's graphs; the strict campaign finds a fifth root cause, avg_pool1d in ceil mode on a symbolic width typed with T.if_then_else, which the build cannot type, and builds 29 of its 30 cases; the disruptive campaign's arity finding is no longer drawn; Relax's
nn.cross_entropy_with_logits in the ops drawn (session 23): every campaign's graphs; the strict
campaign no longer draws the ceil-mode avg_pool1d and finds instead prelu's legalization
failing on a symbolic channel count (topi.nn.prelu's get_const_int: "Expect value to be
constant int"), and the disruptive campaign finds outer taking inputs of two dtypes without a
word (InferTypeOuter checks ranks only and types the result as x1's); the Relax ops added in
session 24 (the 3-D convolutions and pools, image.resize2d, image.grid_sample, index_tensor,
index_put, slice_scatter, meshgrid) in the ops drawn: every campaign's graphs; the strict
campaign no longer draws prelu on a symbolic channel count, so finds three of its four
findings, and the disruptive campaign's violations meet only TVM's own diagnostics; the
quantization ops quantize and dequantize in the ops drawn (session 30): every campaign's
graphs; the strict campaign builds 29 of its 30 cases and finds prelu's symbolic channel
count again beside its three findings, and the disruptive campaign's run-stage rejection is
a lower-stage one). Pass probing (campaign.probe) leaves
it as it is: the strict campaign draws its sequences and is never steered, and the planted
one pins its passes with direct=False (steering is tested in tests/relax/test_pass_probe.py). Two runs of the same code give
the same fingerprint: the campaigns run with --jobs 1, so cases, reductions and hits come
in one order, and the fingerprint leaves out times and worker figures. Finding signatures
name TVM's source frames, so a new TVM calls for a new golden file: print it with the
tool at a commit before the change it is to guard.
"""
import json
import subprocess
import sys

from conftest import ROOT

GOLDEN = ROOT / "tests" / "relax" / "data" / "campaign_golden.json"


def test_campaign_gives_the_same_graphs_and_findings_as_before_the_restructure(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "campaign_fingerprint.py"), "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=1200, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    now, golden = json.loads(proc.stdout), json.loads(GOLDEN.read_text())
    assert now.keys() == golden.keys()
    for campaign in golden:  # one campaign, then one part of it, at a time: a readable diff
        for part in ("counts", "findings"):
            assert now[campaign][part] == golden[campaign][part], f"{campaign}: {part}"
        for index, case in golden[campaign]["cases"].items():
            assert now[campaign]["cases"].get(index) == case, f"{campaign}: case {index}"
        assert now[campaign]["cases"].keys() == golden[campaign]["cases"].keys(), campaign
