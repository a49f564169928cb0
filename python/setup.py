"""The version comes from the top-level CMakeLists.txt (one version number), and the wheel
is platform-specific: it carries the native bpu-lint binary and its libraries."""
import os
import re
import sys

from setuptools import Distribution, setup

try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # setuptools < 70 keeps it in the wheel package
    from wheel.bdist_wheel import bdist_wheel

HERE = os.path.dirname(os.path.abspath(__file__))
CMAKELISTS = os.path.join(HERE, "..", "CMakeLists.txt")


def cmake_version():
    try:
        with open(CMAKELISTS, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        sys.exit(f"{CMAKELISTS}: cannot read the version: {e.strerror}")
    match = re.search(r"^project\(bpu_lint VERSION ([0-9]+\.[0-9]+\.[0-9]+)", text, re.M)
    if not match:
        sys.exit(f"{CMAKELISTS}: no 'project(bpu_lint VERSION x.y.z' line")
    return match.group(1)


class BinaryDistribution(Distribution):
    """Native content: the wheel is not pure (Root-Is-Purelib: false) and the package goes to
    the wheel's root (platlib) rather than under .data/purelib."""

    def has_ext_modules(self):
        return True


class PlatformWheel(bdist_wheel):
    """Any Python 3, but one platform: the bundled binary's (glibc 2.35+, x86-64)."""

    def get_tag(self):
        return "py3", "none", "manylinux_2_35_x86_64"


setup(version=cmake_version(), distclass=BinaryDistribution, cmdclass={"bdist_wheel": PlatformWheel})
