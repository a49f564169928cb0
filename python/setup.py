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


# ELF e_machine values of the bundled binary, and the wheel platform each runs on.
MACHINES = {62: "x86_64", 183: "aarch64"}
BUNDLED_BINARY = os.path.join(HERE, "bpulint", "_bundle", "bin", "bpu-lint")


def bundle_machine():
    """The bundled binary's architecture (x86_64 when there is none yet: a build from the
    sources). Read from its ELF header, so a cross-built bundle gets its own tag."""
    try:
        with open(BUNDLED_BINARY, "rb") as f:
            header = f.read(20)
    except FileNotFoundError:
        return "x86_64"
    if header[:4] != b"\x7fELF" or header[5] != 1:
        sys.exit(f"{BUNDLED_BINARY}: not a little-endian ELF file")
    machine = int.from_bytes(header[18:20], "little")
    if machine not in MACHINES:
        sys.exit(f"{BUNDLED_BINARY}: ELF machine {machine} is neither x86-64 nor aarch64")
    return MACHINES[machine]


class PlatformWheel(bdist_wheel):
    """Any Python 3, but one platform: the bundled binary's (glibc 2.35+, x86-64 or aarch64)."""

    def get_tag(self):
        return "py3", "none", "manylinux_2_35_" + bundle_machine()


setup(version=cmake_version(), distclass=BinaryDistribution, cmdclass={"bdist_wheel": PlatformWheel})
