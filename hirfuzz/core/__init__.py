"""The core: graphs, op specs, generation, coverage, reference and oracles. No TVM here."""
