"""promtool from the distribution's prometheus package (scripts/testbed.sh installs it).

Tests that need it skip when it is absent, or fail when KV_REQUIRE_PROMTOOL=1
(the promtool stage of scripts/run-tests.sh sets it).
"""

import os
import shutil
import subprocess

import pytest

PROMTOOL = shutil.which("promtool")


def require():
    """The promtool path; skips (or fails under KV_REQUIRE_PROMTOOL=1) when there is none."""
    if PROMTOOL is None:
        if os.environ.get("KV_REQUIRE_PROMTOOL") == "1":
            pytest.fail("promtool is not on PATH (install the distribution's prometheus package: scripts/testbed.sh)")
        pytest.skip("promtool not on PATH")
    return PROMTOOL


def promtool_check_metrics(text):
    """``promtool check metrics`` on ``text``: (rc, output)."""
    proc = subprocess.run([require(), "check", "metrics"], input=text, capture_output=True, text=True, check=False)
    return proc.returncode, proc.stdout + proc.stderr
