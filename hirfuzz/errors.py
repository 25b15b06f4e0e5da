"""Errors a user can cause and fix: they are printed as one line, never as a traceback."""


class HirfuzzError(Exception):
    """Bad input from the user (a spec, a flag, an output folder), named with where it is."""


class ExprError(HirfuzzError):
    """A spec expression that does not parse, names something unknown, or fails to evaluate."""


class SpecError(HirfuzzError):
    """A malformed op spec: the message names the file, the op and the field."""

    def __init__(self, where: str, message: str):
        super().__init__(f"{where}: {message}")
        self.where = where
