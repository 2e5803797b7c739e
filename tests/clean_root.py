"""``python -m tests.clean_root ROOT``: take down whatever lab the suite's lab processes left under ROOT (the phase of
./scripts/test that runs the heavy and the light lab tests in two processes sharing one root); exit 1 when a lab
process had to be stopped."""

from __future__ import annotations

import sys
from pathlib import Path


def main() -> int:
    root = Path(sys.argv[1])
    if not root.exists():
        return 0
    from tests.conftest import clean_root

    stray = clean_root(root)
    if stray:
        print(f"processes left behind: {stray}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
