import os
import shutil
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
sys.path.insert(0, str(EXAMPLES))

# Small generated workloads: seconds, not minutes.
WORKLOAD = "zipf:blocks=50K,alpha=0.9,writes=300K"


@pytest.fixture(scope="session")
def zonekit_bin():
    """The CLI the package is compared with (scripts/python-test builds it). Absent: skipped
    visibly, failing under CI=true."""
    path = os.environ.get("ZONEKIT_BIN") or shutil.which("zonekit")
    if not path or not Path(path).exists():
        if os.environ.get("CI") == "true":
            pytest.fail("ZONEKIT_BIN is not set and zonekit is not on PATH (scripts/python-test sets it)")
        pytest.skip("no zonekit CLI to compare with: set ZONEKIT_BIN")
    return path
