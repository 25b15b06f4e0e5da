"""The coordinator: the campaign loop, workers and their sandbox, reduction, triage, output."""

# The defaults that gave the most distinct findings an hour (tools/bench_settings.py: two
# seeds, 15-minute campaigns side by side; the table is in README.md). Bigger graphs meet
# more bugs per build, and a mutant took a quarter of the cases without a finding of its own.
DEFAULT_OPS = 40
DEFAULT_MUTATIONS = 0
DEFAULT_FOLLOWUPS = 0
