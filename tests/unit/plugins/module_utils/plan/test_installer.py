"""uv or pip for each install step (plugins/module_utils/plan/installer.py), on the plan's real steps."""

import os
import sys

import pytest

from ansible_collections.kunpeng.vllm.plugins.filter.vllm_install_steps import vllm_install_steps
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import installer

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))

import vllm_plans  # noqa: E402

from ansible.errors import AnsibleFilterError  # noqa: E402

UV = "/opt/vllm/wheelhouse/.bin/uv"
VENV = "/opt/vllm/0.32.0-cpu"
WHEEL_STEP = {"name": "wheelhouse", "packages": [], "pip_args": ["--no-deps"], "env": {},
              "requirements": "/opt/vllm/wheelhouse/requirements.txt"}
RESOLVE_STEP = {"name": "engine", "packages": ["vllm==0.26.0"], "pip_args": [], "env": {}, "requirements": ""}
VENDOR_STEP = {"name": "torch", "packages": ["torch==2.9.0+cpu"], "env": {}, "requirements": "",
               "pip_args": ["--extra-index-url=https://download.pytorch.org/whl/cpu"]}
ENGINE_STEP = dict(RESOLVE_STEP, env={"VLLM_TARGET_DEVICE": "cpu"})
SOURCE_STEP = dict(RESOLVE_STEP, packages=["https://github.com/vllm-project/vllm/archive/v0.26.0.tar.gz"],
                   env={"VLLM_TARGET_DEVICE": "cpu"})
PATH_STEP = dict(SOURCE_STEP, packages=["/srv/src/vllm"])
VENDOR_ENV_STEP = dict(RESOLVE_STEP, env={"PIP_EXTRA_INDEX_URL": "https://mirror.example/simple"})
LOCAL = ["/opt/vllm/wheelhouse"]

# step, installer, no_index, find_links, reuse_host_torch, uv -> tool, words of the reason
CASES = [
    (WHEEL_STEP, "auto", True, LOCAL, False, UV, "uv", "offline"),
    (RESOLVE_STEP, "auto", True, LOCAL, False, UV, "uv", "offline"),
    (WHEEL_STEP, "pip", True, LOCAL, False, UV, "pip", "vllm_installer is pip"),
    (WHEEL_STEP, "auto", True, LOCAL, False, "", "pip", "no uv on the node"),
    (WHEEL_STEP, "auto", False, LOCAL, False, UV, "pip", "reads a package index"),
    (WHEEL_STEP, "auto", True, LOCAL + ["https://user:secret@mirror/simple"], False, UV, "pip", "find-links"),
    (WHEEL_STEP, "auto", True, ["file:///srv/wheels"], False, UV, "uv", "offline"),
    # offline, pip ignores an index option; uv never gets it
    (VENDOR_STEP, "auto", True, LOCAL, False, UV, "uv", "offline"),
    (VENDOR_STEP, "auto", False, LOCAL, False, UV, "pip", "reads a package index"),
    (dict(VENDOR_STEP, pip_args=["--pre"]), "auto", True, LOCAL, False, UV, "pip", "--pre"),
    (dict(VENDOR_STEP, pip_args=["--extra-index-url", "https://x/simple"]), "auto", True, LOCAL, False, UV, "pip",
     "--extra-index-url"),
    # a build-only variable on a step of requirements: uv, wheels only
    (ENGINE_STEP, "auto", True, LOCAL, False, UV, "uv", "offline"),
    (SOURCE_STEP, "auto", True, LOCAL, False, UV, "pip", "environment"),
    (PATH_STEP, "auto", True, LOCAL, False, UV, "pip", "environment"),
    (VENDOR_ENV_STEP, "auto", True, LOCAL, False, UV, "pip", "environment"),
    (WHEEL_STEP, "auto", True, LOCAL, True, UV, "uv", "offline"),
    (RESOLVE_STEP, "auto", True, LOCAL, True, UV, "pip", ".pth"),
    (WHEEL_STEP, "uv", True, LOCAL, False, UV, "uv", "offline"),
    (WHEEL_STEP, "uv", False, LOCAL, False, UV, "", "reads a package index"),
]


@pytest.mark.parametrize("step,choice,no_index,links,reuse,uv,tool,reason", CASES)
def test_choice(step, choice, no_index, links, reuse, uv, tool, reason):
    got = installer.choose(step, choice, no_index, links, reuse, uv, VENV)
    assert got["tool"] == tool
    assert reason in got["reason"]
    assert bool(got["argv"]) == (tool == "uv")


def test_uv_argv_is_offline_compiled_and_keeps_the_step():
    argv = installer.choose(WHEEL_STEP, "auto", True, LOCAL, False, UV, VENV)["argv"]
    assert argv == [UV, "pip", "install", "--python", f"{VENV}/bin/python", "--no-index", "--offline", "--no-config",
                    "--compile-bytecode", "--find-links", "/opt/vllm/wheelhouse", "--no-deps",
                    "--requirement", "/opt/vllm/wheelhouse/requirements.txt"]
    argv = installer.choose(RESOLVE_STEP, "auto", True, LOCAL, False, UV, VENV)["argv"]
    assert argv[-1] == "vllm==0.26.0" and "--no-deps" not in argv and "--requirement" not in argv


def test_uv_builds_nothing_when_the_step_sets_build_variables():
    argv = installer.choose(ENGINE_STEP, "auto", True, LOCAL, False, UV, VENV)["argv"]
    assert "--no-build" in argv and argv[-1] == "vllm==0.26.0"
    argv = installer.choose(VENDOR_STEP, "auto", True, LOCAL, False, UV, VENV)["argv"]
    assert "--no-build" not in argv and not any("index" in arg and "--no-index" != arg for arg in argv)


def test_real_cpu_plan_offline_wheelhouse_of_the_demo_installs_with_uv():
    """The demo's wheelhouse (every wheel, vllm_pip_no_index) without a requirements file: both cpu steps."""
    plan = _plan(pip_no_index=True)
    steps = vllm_install_steps(plan["role_steps"], plan["pip_args"], "auto", False, UV, plan["venv"])
    assert [step["installer"]["tool"] for step in steps] == ["uv", "uv"]
    assert all("download.pytorch.org" not in " ".join(step["installer"]["argv"]) for step in steps)


def test_unknown_installer_is_refused():
    with pytest.raises(ValueError):
        installer.choose(WHEEL_STEP, "poetry", True, LOCAL, False, UV, VENV)


def _plan(**request):
    return vllm_plans.plan("cpu", request=dict({"wheelhouse_src": "/srv/wheelhouse"}, **request))


def test_real_cpu_plan_offline_wheelhouse_installs_with_uv_and_no_secret():
    plan = _plan(pip_no_index=True, wheelhouse_requirements="requirements.txt")
    steps = vllm_install_steps(plan["role_steps"], plan["pip_args"], "auto", False, UV, plan["venv"])
    assert [step["installer"]["tool"] for step in steps] == ["uv"]
    argv = steps[0]["installer"]["argv"]
    assert f"{plan['wheelhouse_dir']}/requirements.txt" in argv and "--timeout" not in argv


def test_real_cpu_plan_with_an_index_keeps_pip_and_never_puts_the_url_in_an_argv():
    # the role hands the planner the URL without its credentials (kunpeng.vllm.vllm_index_auth, netrc for pip);
    # the planner refuses one that still carries them (test_index_auth.py)
    plan = _plan(pip_index_url="https://mirror.example/simple")
    steps = vllm_install_steps(plan["role_steps"], plan["pip_args"], "auto", False, UV, plan["venv"])
    assert {step["installer"]["tool"] for step in steps} == {"pip"}
    assert all("mirror.example" not in " ".join(step["installer"]["argv"]) for step in steps)


def test_filter_refuses_a_step_uv_cannot_run_when_uv_is_asked_for():
    plan = _plan()
    with pytest.raises(AnsibleFilterError, match="uv cannot run"):
        vllm_install_steps(plan["role_steps"], plan["pip_args"], "uv", False, UV, plan["venv"])


def test_find_links_of_the_plan_args():
    assert installer.find_links(["--timeout", "120", "--no-index", "--find-links=/a", "--find-links=/b"]) == ["/a", "/b"]


# tool, plan's pip_args, step's pip_args, no_index -> the source a progress line names (never a credential)
@pytest.mark.parametrize("tool, pip_args, step_args, no_index, source", [
    ("uv", ["--no-index", "--find-links=/opt/vllm/wheelhouse"], ["--no-deps"], True,
     "the wheels in /opt/vllm/wheelhouse"),
    ("pip", [], [], False, "pip from the index of pip's configuration"),
    ("pip", ["--index-url", "https://user:s3cret@mirror.example/simple"], [], False,
     "pip from https://mirror.example/simple"),
    ("pip", ["--index-url=https://token@mirror.example/simple", "--find-links=/opt/vllm/wheelhouse"],
     ["--extra-index-url=https://download.pytorch.org/whl/cpu"], False,
     "pip from https://mirror.example/simple, /opt/vllm/wheelhouse, https://download.pytorch.org/whl/cpu"),
    ("pip", [], ["--extra-index-url=https://download.pytorch.org/whl/cpu"], False,
     "pip from https://download.pytorch.org/whl/cpu, the index of pip's configuration"),
    ("pip", ["--no-index", "--find-links=https://u:p@wheels.example/"], [], True, "pip from https://wheels.example/"),
])
def test_install_source(tool, pip_args, step_args, no_index, source):
    links = installer.find_links(pip_args)
    assert installer.install_source(tool, pip_args, step_args, no_index, links) == source


def test_every_step_names_its_source():
    steps = vllm_install_steps([WHEEL_STEP, VENDOR_STEP], ["--no-index", "--find-links=/opt/vllm/wheelhouse"], "auto",
                               False, UV, VENV)
    # offline, the vendor step's index option changes nothing: uv from the same wheels
    assert [step["installer"]["source"] for step in steps] == [
        "the wheels in /opt/vllm/wheelhouse", "the wheels in /opt/vllm/wheelhouse"]
    steps = vllm_install_steps([WHEEL_STEP, dict(VENDOR_STEP, pip_args=["--pre"])],
                               ["--no-index", "--find-links=/opt/vllm/wheelhouse"], "auto", False, UV, VENV)
    assert steps[1]["installer"]["source"] == "pip from /opt/vllm/wheelhouse"
