"""The coordinator: the campaign loop, workers and their sandbox, reduction, triage, output."""
