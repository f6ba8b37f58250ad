"""kunpeng.vllm.ascend_plan on probed hosts: the facts come from accelerator_facts on the committed fixtures.

Hosts: the Atlas 800I A2 sysfs tree and npu-smi replies (fixtures/sysfs, fixtures/ascend), the version files
of an installed v1 stack (fixtures/ascend/versions), and sysfs trees of other chips written by the Molecule
scenario's sysfs double (molecule/ascend/doubles/make-sysfs.sh).
"""

import json
import os
import subprocess

import fakes
import pytest
from ansible_collections.kunpeng.vllm.plugins.module_utils import fact_contract
from ansible_collections.kunpeng.vllm.plugins.module_utils.backends import registry as backends
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.service import service_spec
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.endpoint_security import private_users
from ansible_collections.kunpeng.vllm.plugins.modules import ascend_plan
from conftest import FIXTURES, ROOT
from module_runner import run_main
import vllm_plans

A2 = os.path.join(FIXTURES, "ascend", "atlas-800i-a2")
A2_6OF8 = os.path.join(FIXTURES, "ascend", "atlas-800i-a2-6of8")
A2_SYSFS = os.path.join(FIXTURES, "sysfs", "atlas-800i-a2")
MAKE_SYSFS = os.path.join(ROOT, "molecule", "ascend", "doubles", "make-sysfs.sh")

# Package names of the Molecule scenario's v1 / v2 doubles (molecule/ascend/doubles/packages).
with open(os.path.join(FIXTURES, "ascend", "packages.json")) as _handle:
    PACKAGE_NAMES = json.load(_handle)
V1 = PACKAGE_NAMES["v1"]
V2 = PACKAGE_NAMES["v2"]


def probe(tmp_path, sysfs=A2_SYSFS, npu_smi=None, installed=False, arch="aarch64", install_info="ascend_install.info"):
    """kunpeng_accelerators of a replayed Kunpeng host (optionally with npu-smi replies and the v1 version files)."""
    extra = fakes.ascend_root(str(tmp_path)) if installed else {}
    if installed:
        extra["ascend_install_info"] = os.path.join(FIXTURES, "ascend", "versions", install_info)
    args = fakes.host_args(str(tmp_path), sysfs, "kunpeng920", arch, **extra)
    if npu_smi:
        fakes.write_tool(args["tool_path"][0], "npu-smi", fakes.npu_smi_replies(npu_smi))
    result, _warnings = fakes.run_module(args)
    return fakes.facts_of(result), args.get("ascend_root", str(tmp_path / "Ascend"))


def sysfs_of(tmp_path, device_id):
    root = tmp_path / f"sys-{device_id}"
    subprocess.run(["sh", MAKE_SYSFS, str(root), device_id, "8"], check=True)
    return str(root)


def run(facts, install_path, check_mode=False, **args):
    args.setdefault("package_dir", "/srv/ascend")
    args.update(accelerators=facts, install_path=install_path, reboot_marker=os.path.join(install_path, "no-marker"))
    return run_main(ascend_plan.main, args, check_mode)


def files(names):
    return {component: {"file": name} for component, name in names.items()}


def test_first_install_on_a_bare_a2_host(tmp_path):
    facts, root = probe(tmp_path)
    failed, result = run(facts, root, packages=files(V1), package_dir="/srv/ascend")
    assert not failed and result["changed"] is False
    assert result["series"] == "910b" and result["arch"] == "aarch64"
    assert result["plan"] == ["driver", "firmware", "toolkit", "kernels", "nnal"]
    driver = result["steps"][0]
    assert driver["mode"] == "install" and driver["from"] == "" and driver["to"] == "24.1.rc1"
    assert driver["argv"] == ["bash", f"/var/cache/kunpeng-vllm/ascend/{V1['driver']}", "--nox11", "--full",
                              "--install-username=HwHiAiUser", "--install-usergroup=HwHiAiUser", "--install-path=" + root, "--quiet"]
    nnal = result["steps"][-1]["argv"]
    assert nnal[:2] == ["bash", "-c"] and nnal[4] == os.path.join(root, "ascend-toolkit/set_env.sh")
    assert result["device_group"] == "HwHiAiUser"
    assert result["report"]["device_group"] == "HwHiAiUser"
    assert result["installs"] is True and result["ran"] is False
    # No driver answers on a bare host: nothing to check the devices with.
    assert result["verify"] == {"reprobe": False, "check_devices": False}


def test_upgrade_of_an_installed_a2_host(tmp_path):
    facts, root = probe(tmp_path, npu_smi=A2, installed=True)
    failed, result = run(facts, root, packages=files(V2), package_source="host", package_dir="/srv/ascend")
    assert not failed
    assert result["installed"]["driver"] == "24.1.rc1" and result["installed"]["toolkit"] == "8.1.RC1"
    assert result["plan"] == ["firmware", "driver", "toolkit", "kernels", "nnal"]
    # the v1 record files name driver, firmware and toolkit; kernels and NNAL have no version file there
    assert [step["mode"] for step in result["steps"]] == ["upgrade", "upgrade", "upgrade", "install", "install"]
    assert result["package_paths"]["firmware"] == f"/srv/ascend/{V2['firmware']}"
    assert result["message"].startswith("Ascend 910b on aarch64: firmware 7.1.0.11.220 -> 7.7.0.1.231 (upgrade), driver")


def test_installed_versions_are_not_run_again(tmp_path):
    facts, root = probe(tmp_path, npu_smi=A2, installed=True)
    failed, result = run(facts, root, packages=files({key: V1[key] for key in ("driver", "firmware", "toolkit")}))
    assert not failed and result["plan"] == [] and result["steps"] == []
    assert result["installs"] is False
    assert result["message"] == "Ascend 910b on aarch64: nothing to install"


def test_check_mode_gives_the_same_plan(tmp_path):
    facts, root = probe(tmp_path, npu_smi=A2, installed=True)
    assert run(facts, root, packages=files(V2)) == run(facts, root, check_mode=True, packages=files(V2))


@pytest.mark.parametrize("device_id, driver, series", [
    ("0xd803", "Atlas-A3-hdk-npu-driver_25.0.rc1_linux-aarch64.run", "A3"),
    ("0xd500", "Ascend-hdk-310p-npu-driver_24.1.rc1_linux-aarch64.run", "310p"),
])
def test_other_series_take_their_own_names(tmp_path, device_id, driver, series):
    facts, root = probe(tmp_path, sysfs=sysfs_of(tmp_path, device_id))
    failed, result = run(facts, root, packages=files({"driver": driver}))
    assert not failed and result["series"] == series and result["plan"] == ["driver"]
    failed, result = run(facts, root, packages=files({"driver": V1["driver"]}))
    assert failed and "is the 910b aarch64 package" in result["msg"]


def test_wrong_architecture_is_refused_on_the_probed_host(tmp_path):
    facts, root = probe(tmp_path)
    failed, result = run(facts, root, packages=files(dict(V1, driver="Ascend-hdk-910b-npu-driver_24.1.rc1_linux-x86-64.run")))
    assert failed
    assert "is the 910b x86_64 package, but this host is series 910b (Ascend 910B) on aarch64" in result["msg"]


def test_a1_host_has_no_packages(tmp_path):
    facts, root = probe(tmp_path, sysfs=sysfs_of(tmp_path, "0xd801"))
    failed, result = run(facts, root, packages=files(V1))
    assert failed and "PCI shows Ascend 910 (series '')" in result["msg"]
    assert not run(facts, root, packages=files(V1), series="910b")[0]


def test_device_nodes_and_problems_from_the_probe(tmp_path):
    facts, root = probe(tmp_path, npu_smi=A2, installed=True)
    _failed, result = run(facts, root)
    assert result["device_nodes"] == [f"/dev/davinci{n}" for n in range(8)] + ["/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc"]
    assert result["device_problems"] == []


def test_missing_chips_are_a_device_problem(tmp_path):
    facts, root = probe(tmp_path, npu_smi=A2_6OF8, installed=True)
    _failed, result = run(facts, root)
    assert result["device_problems"] == ["npu-smi reports 6 chip(s) for 8 on the PCI bus"]
    bare, root = probe(tmp_path / "bare")
    assert run(bare, root)[1]["device_problems"] == ["npu-smi not found", "npu-smi reports 0 chip(s) for 8 on the PCI bus"]


@pytest.mark.parametrize("runs, rebooted, marker, required, pending", [
    ([{"component": "firmware", "stdout": ""}, {"component": "driver", "stdout": "ok"}], False, False, True, True),
    ([{"component": "firmware", "stdout": ""}], True, False, False, False),
    ([{"component": "toolkit", "stdout": ""}], False, False, False, False),
    # an earlier run's firmware still waits for the boot that empties /run
    ([], False, True, False, True),
])
def test_reboot_pending_in_the_report(tmp_path, runs, rebooted, marker, required, pending):
    facts, root = probe(tmp_path, npu_smi=A2, installed=True)
    marker_path = tmp_path / "marker"
    if marker:
        marker_path.write_text("firmware\n")
    failed, result = run_main(ascend_plan.main, {"accelerators": facts, "install_path": root, "runs": runs, "rebooted": rebooted,
                                                 "reboot_marker": str(marker_path), "env_file": "/etc/vllm/ascend.env"})
    assert not failed
    report = result["report"]
    assert fact_contract.check("kunpeng_ascend", report) == []
    assert report["reboot_required"] is required and report["reboot_pending"] is pending
    assert report["changed"] == [run["component"] for run in runs]
    assert report["driver_version"] == "24.1.rc1" and report["cann_version"] == "8.1.RC1" and report["series"] == "910b"
    assert report["env_file"] == "/etc/vllm/ascend.env" and report["nnal_installed"] is False


def test_environment_from_an_env_dump(tmp_path):
    facts, root = probe(tmp_path)
    dump = "PATH=/usr/bin\n" + ascend_plan.ap.ENV_MARKER + "\nPATH=/usr/bin\nLD_LIBRARY_PATH=/usr/local/Ascend/driver/lib64:\n"
    failed, result = run(facts, root, env_output=dump)
    assert not failed and result["environment"] == {"LD_LIBRARY_PATH": "/usr/local/Ascend/driver/lib64"}


# --- the report in the vllm unit ---------------------------------------------------------------------

def render_unit(backend, kunpeng_ascend):
    """roles/vllm/templates/vllm.service.j2 rendered with the vllm role's defaults and vars, as Ansible would."""
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar
    from core_compat import trust_as_template

    def trust(value):
        if isinstance(value, str):
            return trust_as_template(value)
        if isinstance(value, dict):
            return {key: trust(item) for key, item in value.items()}
        if isinstance(value, list):
            return [trust(item) for item in value]
        return value

    loader = DataLoader()
    variables = {}
    for name in ("defaults", "vars"):
        variables.update(trust(loader.load_from_file(os.path.join(ROOT, "roles", "vllm", name, "main.yml"))))
    # site.yml: the plan (a replayed host) before the ascend role, whose report the role then renders.
    variables.update(kunpeng_vllm_plan=vllm_plans.plan(backend), kunpeng_vllm_cluster=vllm_plans.single(),
                     ansible_managed="managed", vllm_model_name="m",
                     __vllm_endpoint={"private_users": private_users("auto", "", "")})
    if kunpeng_ascend is not None:
        variables["kunpeng_ascend"] = kunpeng_ascend
    with open(os.path.join(ROOT, "roles", "vllm", "templates", "vllm.service.j2")) as handle:
        text = Templar(loader=loader, variables=variables).template(trust_as_template(handle.read()))
    return [line for line in text.splitlines() if line.startswith(("SupplementaryGroups=", "DeviceAllow=", "DevicePolicy=", "PrivateDevices="))]


@pytest.mark.parametrize("install_info, groups", [
    # the default run user: the driver (installed without --install-for-all) keeps the NPUs to HwHiAiUser's group
    ("ascend_install.info", ["SupplementaryGroups=HwHiAiUser"]),
    # a driver installed for all users: no group to join
    ("ascend_install-root.info", []),
])
def test_vllm_unit_joins_the_driver_group_and_allows_its_devices(tmp_path, install_info, groups):
    facts, root = probe(tmp_path, npu_smi=A2, installed=True, install_info=install_info)
    _failed, result = run(facts, root)
    lines = render_unit("ascend", result["report"])
    assert [line for line in lines if line.startswith("SupplementaryGroups=")] == groups
    assert [line for line in lines if line.startswith(("DeviceAllow=", "DevicePolicy="))] == (
        ["DevicePolicy=closed"] + [f"DeviceAllow=/dev/davinci{n} rw" for n in range(8)]
        + ["DeviceAllow=/dev/davinci_manager rw", "DeviceAllow=/dev/devmm_svm rw", "DeviceAllow=/dev/hisi_hdc rw"])


def test_vllm_service_entry_reads_the_report(tmp_path):
    """plan/service.py on this module's report: the driver's env file, group and device nodes."""
    facts, root = probe(tmp_path, npu_smi=A2, installed=True)
    _failed, result = run(facts, root, env_file="/etc/vllm/ascend.env")
    entry = service_spec(backends.get("ascend"), facts, "", None, {"kunpeng_ascend": result["report"]})
    assert entry["environment_files"] == [result["report"]["env_file"]] == ["/etc/vllm/ascend.env"]
    assert entry["supplementary_groups"] == ["HwHiAiUser"]
    assert entry["device_allow"] == [f"{node} rw" for node in result["report"]["device_nodes"]]


def test_cpu_unit_has_no_driver_group():
    assert render_unit("cpu", None) == ["PrivateDevices=yes", "DevicePolicy=closed"]


@pytest.mark.parametrize("runs, verify_devices, pending, rebooted, reprobe, check", [
    ([], False, False, False, False, False),
    ([], True, False, False, True, True),
    ([{"component": "toolkit", "stdout": ""}], False, False, False, True, False),
    # The new firmware waits for a reboot the role was not allowed to do: the devices are not checked yet.
    ([{"component": "firmware", "stdout": ""}], True, True, False, True, False),
    # ... and are once the role rebooted the host.
    ([{"component": "firmware", "stdout": ""}], True, True, True, True, True),
])
def test_verify_steps_on_an_installed_a2_host(tmp_path, runs, verify_devices, pending, rebooted, reprobe, check):
    facts, root = probe(tmp_path, npu_smi=A2, installed=True)
    failed, result = run(facts, root, runs=runs, verify_devices=verify_devices, pending_reboot=pending, rebooted=rebooted)
    assert not failed
    assert result["ran"] is bool(runs)
    assert result["verify"] == {"reprobe": reprobe, "check_devices": check}


@pytest.mark.parametrize("engine_version, refusal", [
    ("0.7.3", None),     # the CANN 8.1.RC1 row of the v1 packages
    ("", None),          # no release asked: the vllm plan picks one for the CANN installed
    ("0.23.0", "vllm_version 0.23.0: CANN 8.1.RC1 from ascend_packages.toolkit (Ascend-cann-toolkit_8.1.RC1_linux-aarch64.run), "
               "vllm-ascend 0.23.0 needs CANN 9.1.0; use vllm-ascend 0.7.3 or supply the CANN 9.1.0 packages in "
               "ascend_packages. Nothing was changed."),
])
def test_engine_release_is_checked_against_the_cann_packages_before_any_change(tmp_path, engine_version, refusal):
    facts, root = probe(tmp_path)
    failed, result = run(facts, root, packages=files(V1), engine_version=engine_version)
    if refusal is None:
        assert not failed and result["plan"][0] == "driver"
    else:
        assert failed and result["msg"] == refusal
