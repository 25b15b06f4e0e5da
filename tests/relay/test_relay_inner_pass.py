"""A Relay pass that is a Sequential of others (FoldScaleAxis: Backward- and
ForwardFoldScaleAxis, then FoldConstant) and fails as one of them fails alone is blamed on
that one, in its title and root key, as Relax's wrappers are (dialects.base.innermost_failing):
FoldConstant's fault was filed as FoldScaleAxis's (bench27 relay seed 17 0007)."""
import json

from hirfuzz.campaign.reducer import _PREFIXES
from hirfuzz.core.finding import failed_pass_of, root_key

from relay_env import run_in_relay


def test_fold_scale_axis_failing_as_fold_constant_is_blamed_on_fold_constant():
    proc = run_in_relay("tests/relay/inner_pass_probe.py")
    assert proc.returncode == 0, proc.stderr[-3000:]
    wrapper, alone = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert (wrapper["failed_pass"], wrapper["inner_passes"]) == ("FoldScaleAxis", ["FoldConstant"]), wrapper
    assert (alone["failed_pass"], alone["inner_passes"]) == ("FoldConstant", None), alone
    # the trials inside add nothing to the failure's message: the same error either way
    assert wrapper["message"].splitlines()[-1] == alone["message"].splitlines()[-1]
    # both keyed on FoldConstant, where no TVM frame places the crash
    signature = "crash|passes|InternalError||Check failed: fv.size() == N (N vs. N) : Function:"
    keys = {root_key(signature, _PREFIXES, failed_pass_of(extra, names))
            for extra, names in (({"failed_pass": "FoldScaleAxis", "innermost_pass": "FoldConstant"},
                                  ["DeadCodeElimination", "FoldScaleAxis"]),
                                 ({"failed_pass": "FoldConstant"}, ["DeadCodeElimination", "FoldConstant"]))}
    assert keys == {"root|crash|InternalError|pass:FoldConstant|Check failed: fv.size() == N (N vs. N) : Function:"}
