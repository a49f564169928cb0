"""The `bpu-lint` console script: replaces itself with the binary, so it is the CLI."""
import os
import sys

from ._runner import BinaryNotFoundError, executable


def main() -> None:
    try:
        exe = executable()
    except BinaryNotFoundError as e:
        print(f"bpu-lint: error: {e}", file=sys.stderr)
        sys.exit(2)  # as the CLI does when it cannot lint (1 would read as findings)
    os.execv(exe, ["bpu-lint", *sys.argv[1:]])


if __name__ == "__main__":
    main()
