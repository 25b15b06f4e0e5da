"""setup.cfg holds the metadata; this file adds the one thing it cannot say.

The op specs (opspecs/) and the pass catalog (passes.yaml) stand at the top of the
repository, outside the package, so that a pass developer sees them first. A wheel carries a
copy of them inside the package (hirfuzz/opspecs/, hirfuzz/passes.yaml), where hirfuzz.data
looks first; MANIFEST.in puts them in the sdist, from which a wheel is then built the same
way. An editable install copies nothing: the package finds them at the top of its checkout.

Why a build_py step: it is setuptools' own place for copying package data into the build,
and the wheel, the sdist's wheel and `pip install .` all pass through it.
[options.data_files] installs under the environment's prefix (share/...), not in the
package, where nothing can find it reliably, and an editable install ignores it; a
package_dir mapping of opspecs/ cannot take a single file (passes.yaml), and would make an
editable install serve the data through setuptools' import hooks.
"""
import glob
import os

from setuptools import setup
from setuptools.command.build_py import build_py

TOP_LEVEL_DATA = ["passes.yaml", *sorted(glob.glob(os.path.join("opspecs", "*.yaml")))]


class BuildPyWithTopLevelData(build_py):
    """build_py, plus the top-level data copied into the built package."""

    def top_level_data(self) -> dict:
        """Where each top-level data file goes in the build (target -> source)."""
        return {os.path.join(self.build_lib, "hirfuzz", name): name for name in TOP_LEVEL_DATA}

    def build_package_data(self):
        super().build_package_data()
        for target, source in self.top_level_data().items():
            self.mkpath(os.path.dirname(target))
            self.copy_file(source, target)

    def get_outputs(self, include_bytecode=1):
        outputs = super().get_outputs(include_bytecode)
        return outputs + [t for t in self.top_level_data() if t not in outputs]

    def get_output_mapping(self):  # an editable install in strict mode links these
        return {**super().get_output_mapping(), **self.top_level_data()}


setup(cmdclass={"build_py": BuildPyWithTopLevelData})
