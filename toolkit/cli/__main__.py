"""`python -m toolkit.cli`: the same command line as `mcp-rl` (accelerate launch -m and subprocess tests use it)."""

import sys

from toolkit.cli import main

if __name__ == "__main__":  # importing the package's modules (pkgutil.walk_packages) must not run it
    sys.exit(main())
