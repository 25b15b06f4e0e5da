"""A user's pass module that cannot be imported (a test of the pass catalog check)."""
raise RuntimeError("raises_on_import: this module is broken")
