"""hirfuzz: a coverage-guided fuzzer for the high-level IR (Relax) of Apache TVM."""

__version__ = "0.1.0"
