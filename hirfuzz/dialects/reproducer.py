"""What every dialect's reproducer shares: its header, inputs, expected values and the
check of results. TVM-free: reproducers are written in the coordinator.

A reproducer prints marks (`protocol.REPRO_MARK`) saying how far it got; the checker
(campaign.triage) reads them back.
"""
from __future__ import annotations

import ast
from pathlib import Path

import numpy as np

from ..core.finding import Finding
from ..protocol import REPRO_MARK as MARK, describe_config


def source_of(module_file: Path, name: str) -> str:
    """The source text of a top-level function of a hirfuzz module, without importing it
    (it imports TVM, which the coordinator never does): reproducers copy the worker's code."""
    text = module_file.read_text()
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return ast.get_source_segment(text, node)
    raise ValueError(f"{module_file} has no function {name}")


def array_code(a: np.ndarray) -> str:
    return f"np.array({a.tolist()!r}, dtype={a.dtype.name!r})"


def user_modules(config: dict) -> list[str]:
    return sorted({f"{step['import'].split(':')[0]} (from {step.get('search_dir') or 'site-packages'})"
                   for step in config.get("passes", []) if step.get("import")})


def docstring(finding: Finding, config: dict, tvm_version: str | None, needs: str) -> list[str]:
    """The script's opening lines: what it shows, what it needs, how to run it."""
    modules = user_modules(config)
    return [
        '"""hirfuzz reproducer.',
        "",
        f"Finding: {finding.kind} ({finding.oracle} oracle) at stage '{finding.stage}'",
        f"Message: {finding.message}",
        f"TVM: {tvm_version or 'unknown'}; built as: {describe_config(config)}",
        f"Needs: {needs} and numpy",
        *([f"Needs your pass module(s): {', '.join(modules)}; the script puts that folder on sys.path"]
          if modules else []),
        "Run: python repro.py   (exit status 0 means the bug no longer reproduces)",
        '"""',
    ]


USER_PASS = """

def user_pass(path, search_dir, args):
    \"\"\"A pass from the user's own module (`import:` in their pass catalog).\"\"\"
    import importlib
    if search_dir and search_dir not in sys.path:
        sys.path.insert(0, search_dir)
    module, factory = path.split(":")
    return getattr(importlib.import_module(module), factory)(**args)
"""


def data_lines(inputs: list[np.ndarray], expected: list | None, rejection: bool) -> list[str]:
    """INPUTS, EXPECTED and EXPECT_REJECTION."""
    why = "an invalid program: accepting it is the bug" if rejection else "a valid program"
    lines = [f"EXPECT_REJECTION = {rejection!r}  # {why}",
             "INPUTS = [", *[f"    {array_code(a)}," for a in inputs], "]"]
    if expected is None:
        return lines + ["EXPECTED = None"]
    lines.append("EXPECTED = [  # (expected value or None if not comparable, rtol, atol)")
    lines += [f"    ({array_code(value) if value is not None else 'None'}, {rtol!r}, {atol!r}),"
              for value, rtol, atol in expected]
    return lines + ["]"]


# the end of every reproducer's main(), once `outputs` holds the results
CHECK_RESULTS = '''
    if EXPECT_REJECTION:
        print("{mark} accepted")
        return 1
    if EXPECTED is None:
        print("{mark} ok")
        return 0
    failed = False
    for i, (got, (want, rtol, atol)) in enumerate(zip(outputs, EXPECTED)):
        if want is None:
            continue  # not comparable: rounding may have been amplified
        if got.dtype != want.dtype or got.shape != want.shape:
            print(f"result {{i}}: got {{got.dtype}}{{list(got.shape)}}, expected {{want.dtype}}{{list(want.shape)}}")
            failed = True
        elif atol == 0 and rtol == 0:
            if not np.array_equal(got, want):
                print(f"result {{i}}: {{int(np.sum(got != want))}} elements differ\\n got {{got}}\\n expected {{want}}")
                failed = True
        elif not np.allclose(got.astype("float64"), want.astype("float64"), rtol=rtol, atol=atol):
            print(f"result {{i}}: outside rtol={{rtol}} atol={{atol}}\\n got {{got}}\\n expected {{want}}")
            failed = True
    print("{mark} mismatch" if failed else "{mark} ok")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
'''.format(mark=MARK)
