"""The Ascend role's decisions as tables: names, versions, order, flags, environment, sentences.

Each case is a row; a new chip, package name or installer flag is a new row.
Cases that need a probed host live in tests/unit/plugins/modules/test_ascend_plan.py,
where the facts come from accelerator_facts on the committed fixtures.
"""

import json
import os

import pytest
import yaml
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import ascend_plan as ap
from ansible_collections.kunpeng.vllm.plugins.module_utils.probe import chips, pci
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import compat_matrix
from conftest import FIXTURES, ROOT

# Package names of the Molecule scenario's v1 / v2 doubles (molecule/ascend/doubles/packages).
with open(os.path.join(FIXTURES, "ascend", "packages.json")) as _handle:
    PACKAGE_NAMES = json.load(_handle)

V1 = PACKAGE_NAMES["v1"]


def packages(names):
    return {component: {"file": name} for component, name in names.items()}


# --- one chip table ------------------------------------------------------------------------------

def test_every_installable_stem_has_package_names():
    assert set(ap.PACKAGE_NAMES) == set(chips.PACKAGE_STEMS) == {"910b", "A3", "310p"}


def test_ascend_series_choices_are_the_chip_tables_stems():
    with open(os.path.join(ROOT, "roles", "ascend", "meta", "argument_specs.yml")) as handle:
        spec = yaml.safe_load(handle)["argument_specs"]["main"]["options"]["ascend_series"]
    assert spec["choices"] == [""] + chips.PACKAGE_STEMS


@pytest.mark.parametrize("device_id, chip, series, stem", [
    ("0xd801", "Ascend 910", "A1", None),
    ("0xd802", "Ascend 910B", "A2", "910b"),
    ("0xd803", "Ascend 910_93", "A3", "A3"),
    ("0xd500", "Ascend 310P", "300I Duo", "310p"),
    ("0xd100", "Ascend 310", "310", None),
])
def test_chip_table_feeds_pci_matrix_and_packages(device_id, chip, series, stem):
    assert pci.ASCEND_DEVICES[device_id][0] == chip
    assert compat_matrix.atlas_series({"pci": {"ascend_chips": [chip]}}) == series
    assert ap.host_stem([chip]) == (stem or "")


# --- package names -------------------------------------------------------------------------------

@pytest.mark.parametrize("name, version", [
    ("Ascend-hdk-910b-npu-driver_24.1.rc1_linux-aarch64.run", "24.1.rc1"),
    ("Ascend-hdk-910b-npu-driver_25.0.rc1.1_linux-x86-64.run", "25.0.rc1.1"),
    ("Ascend-hdk-910b-npu-firmware_7.7.0.1.231.run", "7.7.0.1.231"),
    ("Ascend-cann-toolkit_8.1.RC1_linux-x86_64.run", "8.1.RC1"),
    ("/srv/pkgs/Atlas-A3-cann-kernels_8.3.RC2_linux-aarch64.run", "8.3.RC2"),
    ("Ascend-cann-A3-ops_8.5.0_linux-aarch64.run", "8.5.0"),
    ("toolkit.run", ""),
    ("Ascend-cann-toolkit_latest.tar.gz", ""),
])
def test_version_from_name(name, version):
    assert ap.version_from_name(name) == version


@pytest.mark.parametrize("component, name, identified", [
    ("driver", "Ascend-hdk-910b-npu-driver_24.1.rc1_linux-x86-64.run", "910b x86_64"),
    ("driver", "Atlas-A3-hdk-npu-driver_25.0.rc1_linux-aarch64.run", "A3 aarch64"),
    ("firmware", "Ascend-hdk-310p-npu-firmware_7.1.0.11.220.run", "310p"),
    ("kernels", "Ascend-cann-kernels-310p_8.1.RC1_linux-aarch64.run", "310p aarch64"),
    ("kernels", "Ascend-cann-910b-ops_8.5.0_linux-x86_64.run", "910b x86_64"),
    ("toolkit", "Ascend-cann-toolkit_8.1.RC1_linux-x86_64.run", "x86_64"),
    ("toolkit", "Ascend-hdk-910b-npu-driver_24.1.rc1_linux-aarch64.run", ""),
])
def test_identify_package(component, name, identified):
    assert ap.identify_package(name, component) == identified


@pytest.mark.parametrize("stem, component, arch, names", [
    ("910b", "driver", "aarch64", ["Ascend-hdk-910b-npu-driver_<version>_linux-aarch64.run"]),
    ("910b", "driver", "x86_64", ["Ascend-hdk-910b-npu-driver_<version>_linux-x86-64.run"]),
    ("A3", "firmware", "aarch64", ["Atlas-A3-hdk-npu-firmware_<version>.run"]),
    ("A3", "kernels", "aarch64", ["Atlas-A3-cann-kernels_<version>_linux-aarch64.run", "Ascend-cann-A3-ops_<version>_linux-aarch64.run"]),
    ("310p", "nnal", "x86_64", ["Ascend-cann-nnal_<version>_linux-x86_64.run"]),
])
def test_expected_names(stem, component, arch, names):
    assert ap.expected_names(stem, component, arch) == names


def test_right_packages_pass():
    ap.check_packages(packages(V1), "910b", "aarch64", ["Ascend 910B"])
    ap.check_packages(packages(dict(V1, kernels="Ascend-cann-910b-ops_8.5.0_linux-aarch64.run")), "910b", "aarch64", ["Ascend 910B"])


@pytest.mark.parametrize("change, expected", [
    ({"driver": "Ascend-hdk-910b-npu-driver_24.1.rc1_linux-x86-64.run"},
     ["ascend_packages.driver.file 'Ascend-hdk-910b-npu-driver_24.1.rc1_linux-x86-64.run' is the 910b x86_64 package",
      "series 910b (Ascend 910B) on aarch64",
      "Use the package named Ascend-hdk-910b-npu-driver_<version>_linux-aarch64.run"]),
    ({"toolkit": "Ascend-cann-toolkit_8.1.RC1_linux-x86_64.run"},
     ["is the x86_64 package", "Use the package named Ascend-cann-toolkit_<version>_linux-aarch64.run"]),
    ({"kernels": "Ascend-cann-kernels-310p_8.1.RC1_linux-aarch64.run"},
     ["'Ascend-cann-kernels-310p_8.1.RC1_linux-aarch64.run' is the 310p aarch64 package",
      "Use the package named Ascend-cann-kernels-910b_<version>_linux-aarch64.run or Ascend-cann-910b-ops_<version>_linux-aarch64.run"]),
    ({"firmware": "Ascend-hdk-310p-npu-firmware_7.1.0.11.220.run"},
     ["is the 310p package", "Ascend-hdk-910b-npu-firmware_<version>.run"]),
    ({"nnal": "nnal.run"}, ["is not a recognised Ascend nnal package name"]),
])
def test_wrong_packages_are_refused(change, expected):
    with pytest.raises(ap.AscendPlanError) as error:
        ap.check_packages(packages(dict(V1, **change)), "910b", "aarch64", ["Ascend 910B"])
    for text in expected + ["Nothing was changed."]:
        assert text in str(error.value)


@pytest.mark.parametrize("stem, arch, chip_names, expected", [
    ("", "aarch64", [], "PCI shows no Ascend chip (series ''), architecture aarch64"),
    ("", "aarch64", ["Ascend 910"], "PCI shows Ascend 910 (series '')"),
    ("910b", "ppc64le", ["Ascend 910B"], "architecture ppc64le"),
])
def test_unknown_series_or_arch_is_refused(stem, arch, chip_names, expected):
    with pytest.raises(ap.AscendPlanError) as error:
        ap.check_packages(packages(V1), stem, arch, chip_names)
    assert expected in str(error.value) and "set ascend_series to one of 910b, A3, 310p" in str(error.value)


@pytest.mark.parametrize("pkgs, source, pkg_dir, url, expected", [
    ({"drivers": {"file": "x.run"}}, "controller", "/p", "", "unknown component(s) drivers"),
    ({"driver": {"sha256": "00"}}, "controller", "/p", "", "no file: for driver"),
    ({"driver": {"file": "x.run"}}, "url", "", "", "'url' needs ascend_package_base_url"),
    ({"driver": {"file": "x.run"}}, "host", "", "", "'host' needs ascend_package_dir"),
    ({"driver": {"file": "../../etc/x.run", "sha256": "ab" * 32}}, "controller", "/p", "", "not a path, for driver"),
    # review round 6: a downloaded package is run as root; without its sha256 a tampered download ran as root
    ({"driver": {"file": "x.run"}}, "url", "", "http://mirror.internal/ascend", "each needs its sha256: (sha256sum"),
    ({"driver": {"file": "x.run", "sha256": "00"}, "firmware": {"file": "f.run", "sha256": "ab" * 32}}, "url", "",
     "https://mirror.internal/ascend", "none for driver"),
])
def test_bad_settings_are_refused(pkgs, source, pkg_dir, url, expected):
    with pytest.raises(ap.AscendPlanError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        ap.check_settings(pkgs, source, pkg_dir, url)


SHA = "ab" * 32


def test_downloaded_packages_pinned_by_sha256_are_accepted():
    ap.check_settings({"driver": {"file": "x.run", "sha256": SHA}}, "url", "", "http://mirror.internal/ascend")
    ap.check_settings({"driver": {"file": "x.run"}}, "controller", "/p", "")  # a file the operator copies: optional


@pytest.mark.parametrize("spec, stat, expected", [
    ({"file": "d.run", "sha256": SHA.upper()}, {"exists": True, "checksum": SHA}, None),
    ({"file": "d.run"}, {"exists": True, "checksum": SHA}, None),  # no sha256 declared: presence only
    ({"file": "d.run", "sha256": "0" * 64}, {"exists": True, "checksum": SHA},
     f"ascend_packages.driver: sha256 of /p/d.run is {SHA}, expected {'0' * 64}. The file is damaged or not the release you meant"),
    ({"file": "d.run"}, {"exists": False}, "ascend_packages.driver: /p/d.run does not exist on the controller; put the package there"),
])
def test_package_files(spec, stat, expected):
    if expected is None:
        ap.check_files({"driver": spec}, {"driver": stat}, "controller", "/p/")
        return
    with pytest.raises(ap.AscendPlanError) as error:
        ap.check_files({"driver": spec}, {"driver": stat}, "controller", "/p/")
    assert expected in str(error.value) and str(error.value).endswith("Nothing was changed.")


# --- the plan --------------------------------------------------------------------------------------

NONE = {component: "" for component in ap.COMPONENTS}
V1_INSTALLED = {"driver": "24.1.rc1", "firmware": "7.1.0.11.220", "toolkit": "8.1.RC1", "kernels": "8.1.RC1", "nnal": "8.1.RC1"}
V2_WANTED = {"driver": "25.0.rc1.1", "firmware": "7.7.0.1.231", "toolkit": "8.2.RC1", "kernels": "8.2.RC1", "nnal": "8.2.RC1"}
COMPLETE = {"Driver_Install_Status": "complete"}


@pytest.mark.parametrize("installed, wanted, record, plan", [
    # first install: driver before firmware (Huawei's first-installation order)
    (NONE, ap.wanted_versions(packages(V1)), {}, ["driver", "firmware", "toolkit", "kernels", "nnal"]),
    # upgrade over an installed driver: firmware before driver
    (V1_INSTALLED, V2_WANTED, COMPLETE, ["firmware", "driver", "toolkit", "kernels", "nnal"]),
    # installed versions are not run again, whatever the case of RC
    (V1_INSTALLED, dict(V1_INSTALLED, toolkit="8.1.rc1", driver="24.1.RC1"), COMPLETE, []),
    # trailing zeros do not make a different version (the one vendor comparator)
    (dict(V1_INSTALLED, firmware="7.1.0.11.220.0"), {"firmware": "7.1.0.11.220"}, COMPLETE, []),
    # a driver whose last install did not complete runs again
    (V1_INSTALLED, {"driver": "24.1.rc1", "toolkit": "8.1.RC1"}, {"Driver_Install_Status": "installing"}, ["driver"]),
    # only what is requested
    (V1_INSTALLED, {"nnal": "8.2.RC1"}, COMPLETE, ["nnal"]),
])
def test_plan(installed, wanted, record, plan):
    assert ap.plan_components(installed, wanted, record) == plan


def test_wanted_prefers_the_declared_version():
    assert ap.wanted_versions({"kernels": {"file": V1["kernels"], "version": "8.1.RC1.alpha"}, "nnal": {"file": V1["nnal"]}}) == {
        "kernels": "8.1.RC1.alpha", "nnal": "8.1.RC1"}


@pytest.mark.parametrize("kernels_info, nnal_info, kernels, nnal", [
    ("Version=7.6.T1.0.B010\nversion_dir=8.1.RC1\n", "Ascend-cann-atb : 8.1.RC1\nAscend-cann-atb Version : 8.1.RC1.B080\n", "8.1.RC1", "8.1.RC1"),
    (None, None, "", ""),
])
def test_cann_version_files(kernels_info, nnal_info, kernels, nnal):
    installed = ap.installed_versions({}, kernels_info, nnal_info)
    assert installed["kernels"] == kernels and installed["nnal"] == nnal


@pytest.mark.parametrize("component, mode, user, group, path, flags", [
    # Default run user HwHiAiUser: named, and no --install-for-all; the service joins the group instead.
    ("driver", "install", "HwHiAiUser", "HwHiAiUser", "/usr/local/Ascend",
     ["--nox11", "--full", "--install-username=HwHiAiUser", "--install-usergroup=HwHiAiUser", "--quiet"]),
    ("driver", "install", "root", "root", "/usr/local/Ascend",
     ["--nox11", "--full", "--install-username=root", "--install-usergroup=root", "--install-for-all", "--quiet"]),
    ("driver", "upgrade", "HwHiAiUser", "HwHiAiUser", "/usr/local/Ascend", ["--nox11", "--upgrade", "--quiet"]),
    ("firmware", "install", "HwHiAiUser", "HwHiAiUser", "/usr/local/Ascend", ["--nox11", "--full", "--quiet"]),
    ("firmware", "upgrade", "root", "root", "/opt/Ascend", ["--nox11", "--upgrade", "--install-path=/opt/Ascend", "--quiet"]),
    ("toolkit", "install", "HwHiAiUser", "HwHiAiUser", "/usr/local/Ascend", ["--nox11", "--install", "--quiet"]),
    ("nnal", "install", "root", "root", "/usr/local/Ascend/", ["--nox11", "--install", "--install-for-all", "--quiet"]),
    ("kernels", "upgrade", "HwHiAiUser", "HwHiAiUser", "/usr/local/Ascend", ["--nox11", "--upgrade", "--quiet"]),
])
def test_installer_flags(component, mode, user, group, path, flags):
    assert ap.installer_flags(component, mode, user, group, path) == flags


@pytest.mark.parametrize("user, group, device_group", [
    ("HwHiAiUser", "HwHiAiUser", "HwHiAiUser"),  # without --install-for-all the service must share this group
    ("npuadmin", "npu", "npu"),
    ("root", "root", ""),  # installed for all users: no group to join (and never root's)
])
def test_device_group_follows_install_for_all(user, group, device_group):
    assert ap.device_group(user, group) == device_group
    assert ("--install-for-all" in ap.installer_flags("driver", "install", user, group)) == (device_group == "")


@pytest.mark.parametrize("record, device_group", [
    ({"UserName": "HwHiAiUser", "UserGroup": "HwHiAiUser", "Driver_Install_For_All": "no"}, "HwHiAiUser"),
    ({"UserName": "npu", "UserGroup": "npu"}, "npu"),
    ({"UserName": "root", "UserGroup": "root", "Driver_Install_For_All": "yes"}, ""),
    ({}, "HwHiAiUser"),  # no record yet (before the first install): the role's settings
])
def test_device_group_of_an_installed_driver(record, device_group):
    assert ap.device_group("HwHiAiUser", "HwHiAiUser", record) == device_group


@pytest.mark.parametrize("component, toolkit_env, argv", [
    ("toolkit", "/usr/local/Ascend/ascend-toolkit/set_env.sh", ["bash", "/s/t.run", "--quiet"]),
    ("nnal", None, ["bash", "/s/t.run", "--quiet"]),
    ("nnal", "/usr/local/Ascend/ascend-toolkit/set_env.sh",
     ["bash", "-c", '. "$1" >/dev/null 2>&1; shift; exec bash "$@"', "ascend-nnal", "/usr/local/Ascend/ascend-toolkit/set_env.sh",
      "/s/t.run", "--quiet"]),
])
def test_installer_argv(component, toolkit_env, argv):
    assert ap.installer_argv(component, "/s/t.run", ["--quiet"], toolkit_env) == argv


@pytest.mark.parametrize("component, output, needed", [
    ("firmware", "", True),
    ("driver", "Driver package installed successfully! Reboot now or after driver installation.", True),
    ("driver", "Driver package installed successfully!", False),
    ("toolkit", "please reboot", False),
])
def test_reboot_needed(component, output, needed):
    assert ap.reboot_needed(component, output) is needed


# --- the service environment -------------------------------------------------------------------------

BEFORE = "PATH=/usr/bin:/bin\nHOME=/root\nLANG=C\nSHLVL=1\nPWD=/\n_=/usr/bin/env\n"


@pytest.mark.parametrize("after, env", [
    ("PATH=/usr/local/Ascend/ascend-toolkit/latest/bin:/usr/bin:/bin\nHOME=/root\nLANG=C\nSHLVL=2\nPWD=/tmp\n_=/usr/bin/env\n"
     "ASCEND_TOOLKIT_HOME=/usr/local/Ascend/ascend-toolkit/latest\n",
     {"PATH": "/usr/local/Ascend/ascend-toolkit/latest/bin:/usr/bin:/bin", "ASCEND_TOOLKIT_HOME": "/usr/local/Ascend/ascend-toolkit/latest"}),
    # a set_env.sh appending to an unset LD_LIBRARY_PATH leaves an empty component: dropped
    ("PATH=/usr/bin:/bin\nLD_LIBRARY_PATH=/usr/local/Ascend/driver/lib64::/usr/local/Ascend/nnal/atb/latest/lib:\n",
     {"LD_LIBRARY_PATH": "/usr/local/Ascend/driver/lib64:/usr/local/Ascend/nnal/atb/latest/lib"}),
    # empty fields only matter in *PATH variables; values with '=' survive
    ("PATH=/usr/bin:/bin\nASCEND_OPP_PATH=/opp:\nATB_OPTS=a=b::c\n", {"ASCEND_OPP_PATH": "/opp", "ATB_OPTS": "a=b::c"}),
    (BEFORE, {}),
])
def test_env_diff(after, env):
    assert ap.env_diff(BEFORE + ap.ENV_MARKER + "\n" + after) == env


def test_env_dump_without_marker_is_an_error():
    with pytest.raises(ap.AscendPlanError, match="no marker line"):
        ap.env_diff(BEFORE)


# --- sentences ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("plan, message", [
    ([], "Ascend 910b on aarch64: nothing to install"),
    (["firmware", "driver"], "Ascend 910b on aarch64: firmware 7.1.0.11.220 -> 7.7.0.1.231 (upgrade), driver 24.1.rc1 -> 25.0.rc1.1 (upgrade)"),
])
def test_plan_message(plan, message):
    assert ap.plan_message("910b", "aarch64", plan, V1_INSTALLED, V2_WANTED) == message


@pytest.mark.parametrize("changed, message", [
    (["firmware", "driver"],
     "firmware, driver changed: reboot the host to load them (or set ascend_reboot: true). The device check is skipped until then."),
    ([], "An earlier run changed the firmware or driver and the host has not rebooted since: reboot it to load them "
         "(or set ascend_reboot: true). The device check is skipped until then."),
])
def test_reboot_message_names_the_variable(changed, message):
    assert ap.reboot_message(changed) == message


@pytest.mark.parametrize("ran, verify, driver, pending, rebooted, reprobe, check", [
    (False, False, "24.1.rc1", False, False, False, False),
    (True, False, "24.1.rc1", False, False, True, False),
    (False, True, "24.1.rc1", False, False, True, True),
    (False, True, None, False, False, True, False),
    (False, True, "", False, False, True, False),
    (True, True, "24.1.rc1", True, False, True, False),
    (True, True, "24.1.rc1", True, True, True, True),
    (True, True, None, True, True, True, False),
])
def test_verify_steps(ran, verify, driver, pending, rebooted, reprobe, check):
    assert ap.verify_steps(ran, verify, driver, pending, rebooted) == {"reprobe": reprobe, "check_devices": check}


@pytest.mark.parametrize("packages, expected", [
    ({"toolkit": {"file": "Ascend-cann-toolkit_8.5.0_linux-aarch64.run"}},
     ("8.5.0", "ascend_packages.toolkit (Ascend-cann-toolkit_8.5.0_linux-aarch64.run)")),
    ({"toolkit": {"file": "pkgs/Ascend-cann-toolkit_8.3.RC2_linux-x86_64.run"}},
     ("8.3.RC2", "ascend_packages.toolkit (Ascend-cann-toolkit_8.3.RC2_linux-x86_64.run)")),
    ({"toolkit": {"file": "cann.run", "version": "9.1.0"}}, ("9.1.0", "ascend_packages.toolkit.version")),
    ({"toolkit": {"file": "cann.run"}}, ("", "")),             # no version in the name, none given
    ({"driver": {"file": "Ascend-hdk-910b-npu-driver_25.2.0_linux-aarch64.run"}}, ("", "")),
    ({}, ("", "")),
    ({"toolkit": "not a dict"}, ("", "")),
])
def test_supplied_cann(packages, expected):
    assert ap.supplied_cann(packages) == expected


@pytest.mark.parametrize("packages, engine_version, message", [
    ({"toolkit": {"file": "Ascend-cann-toolkit_8.5.0_linux-aarch64.run"}}, "0.13.0", None),
    ({"toolkit": {"file": "Ascend-cann-toolkit_8.5.1_linux-aarch64.run"}}, "0.13.0", None),   # a later 8.5 release
    ({"toolkit": {"file": "Ascend-cann-toolkit_8.5.0_linux-aarch64.run"}}, "0.18.0", "needs CANN 8.5.1"),
    ({"toolkit": {"file": "Ascend-cann-toolkit_9.1.0_linux-aarch64.run"}}, "0.13.0", r"is built for CANN 8.5.0 \(8.5.x\)"),
    ({"toolkit": {"file": "Ascend-cann-toolkit_8.5.0_linux-aarch64.run"}}, "0.99.0", "has no row"),
    ({"toolkit": {"file": "cann.run", "version": "8.3.RC2"}}, "0.11.0", None),
    ({"driver": {"file": "Ascend-hdk-910b-npu-driver_25.2.0_linux-aarch64.run"}}, "0.23.0", None),  # no CANN given
    ({"toolkit": {"file": "Ascend-cann-toolkit_8.5.0_linux-aarch64.run"}}, "", None),           # no release asked
])
def test_check_engine_version(packages, engine_version, message):
    if message is None:
        ap.check_engine_version(packages, engine_version)
    else:
        with pytest.raises(ap.AscendPlanError, match=message) as err:
            ap.check_engine_version(packages, engine_version)
        assert str(err.value).startswith(f"vllm_version {engine_version}: ") and str(err.value).endswith("Nothing was changed.")
