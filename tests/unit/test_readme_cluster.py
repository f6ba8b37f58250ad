"""The multi-node plans of docs/multi-node.md are what the planner prints for its example clusters.

cluster_hosts.example_text runs the real probe (replayed fixtures), vllm_plan and vllm_cluster; the
page must hold that text verbatim, so a planner change the page does not follow fails here.
"""

import os
import sys

import pytest
from conftest import ROOT

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "plugins", "modules"))

import cluster_hosts  # noqa: E402


@pytest.mark.parametrize("name", sorted(cluster_hosts.EXAMPLES))
def test_readme_shows_the_plan_the_planner_prints(name):
    with open(os.path.join(ROOT, "docs", "multi-node.md"), encoding="utf-8") as handle:
        page = handle.read()
    assert "```yaml\n" + cluster_hosts.example_text(name) + "```" in page
