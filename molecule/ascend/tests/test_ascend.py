"""kunpeng.vllm.ascend after a first install (v1 doubles) and an upgrade (v2).

Everything here runs against TEST DOUBLES of Huawei's installers and npu-smi
(molecule/ascend/doubles): no NPU is reachable from this project's CI.  The
doubles write the vendor's files in the vendor's formats and log each run, so
these tests read what a real host would show: version files, the install
record, the service environment, and the order the installers ran in.
"""

import re

ROOT = "/usr/local/Ascend"
LOG = "/var/log/ascend_seclog/ascend_install.log"
ENV_FILE = "/etc/vllm/ascend.env"


def kv(host, path):
    content = host.file(path).content_string
    return dict(line.split("=", 1) for line in content.splitlines() if "=" in line)


def test_installers_ran_once_each_in_huaweis_order(host):
    runs = [tuple(line.split("[double] ", 1)[1].split()) for line in host.file(LOG).content_string.splitlines()]
    assert runs == [
        # first install: driver before firmware
        ("driver", "24.1.rc1", "full"),
        ("firmware", "7.1.0.11.220", "full"),
        ("toolkit", "8.1.RC1", "install"),
        ("kernels", "8.1.RC1", "install"),
        ("nnal", "8.1.RC1", "install"),
        # upgrade: firmware before driver
        ("firmware", "7.7.0.1.231", "upgrade"),
        ("driver", "25.0.rc1.1", "upgrade"),
        ("toolkit", "8.2.RC1", "upgrade"),
        ("kernels", "8.2.RC1", "upgrade"),
        ("nnal", "8.2.RC1", "upgrade"),
    ]


def test_vendor_version_files_show_the_upgrade(host):
    assert kv(host, f"{ROOT}/driver/version.info")["Version"] == "25.0.rc1.1"
    assert kv(host, f"{ROOT}/firmware/version.info")["Version"] == "7.7.0.1.231"
    toolkit = kv(host, f"{ROOT}/ascend-toolkit/latest/aarch64-linux/ascend_toolkit_install.info")
    assert toolkit["version"] == "8.2.RC1" and toolkit["arch"] == "aarch64"
    assert kv(host, f"{ROOT}/ascend-toolkit/latest/opp_kernel/version.info")["version_dir"] == "8.2.RC1"
    assert re.search(r"(?m)^\s*Ascend-cann-atb : 8\.2\.RC1$", host.file(f"{ROOT}/nnal/atb/latest/version.info").content_string)


def test_install_record_names_the_run_user(host):
    record = kv(host, "/etc/ascend_install.info")
    assert record["UserName"] == "HwHiAiUser" and record["UserGroup"] == "HwHiAiUser"
    assert record["Driver_Install_Status"] == "complete"
    assert record["Driver_Install_For_All"] == "no"
    assert record["Firmware_Install_Type"] == "full"
    user = host.user("HwHiAiUser")
    assert user.exists and user.group == "HwHiAiUser"


def test_staged_packages_are_removed(host):
    staging = host.file("/var/cache/kunpeng-vllm/ascend")
    assert staging.is_directory and staging.mode == 0o700
    assert staging.listdir() == []


def test_env_file_holds_the_toolkit_and_nnal_variables(host):
    env = host.file(ENV_FILE)
    assert env.user == "root" and env.group == "root" and env.mode == 0o644
    values = {key: value.strip('"') for key, value in kv(host, ENV_FILE).items()}
    assert values["ASCEND_TOOLKIT_HOME"] == f"{ROOT}/ascend-toolkit/latest"
    assert values["ASCEND_OPP_PATH"] == f"{ROOT}/ascend-toolkit/latest/opp"
    # ascend_nnal_cxx_abi: "0" reached NNAL's set_env.sh
    assert values["ATB_HOME_PATH"] == f"{ROOT}/nnal/atb/latest/atb/cxx_abi_0"
    assert values["ATB_OPSRUNNER_SETUP_CACHE_ENABLE"] == "1"
    libs = values["LD_LIBRARY_PATH"].split(":")
    assert f"{ROOT}/nnal/atb/latest/atb/cxx_abi_0/lib" in libs and f"{ROOT}/ascend-toolkit/latest/lib64" in libs
    assert f"{ROOT}/driver/lib64/driver" in libs
    assert "" not in libs, "an empty LD_LIBRARY_PATH entry would load libraries from the working directory"
    assert values["PATH"].endswith("/usr/bin:/sbin:/bin")
    assert not {"SHLVL", "PWD", "_", "HOME", "LANG"} & set(values)


def test_a_systemd_service_sees_the_environment(host):
    out = host.check_output(
        "systemd-run --quiet --wait --pipe -p EnvironmentFile=%s printenv ATB_HOME_PATH ASCEND_TOOLKIT_HOME", ENV_FILE)
    assert out.splitlines() == [f"{ROOT}/nnal/atb/latest/atb/cxx_abi_0", f"{ROOT}/ascend-toolkit/latest"]


def test_npu_smi_from_the_driver_reports_eight_healthy_npus(host):
    listing = host.check_output("/usr/local/bin/npu-smi info -l")
    assert re.search(r"Total Count\s*:\s*8", listing)
    board = host.check_output("/usr/local/bin/npu-smi info -t board -i 3")
    assert re.search(r"Software Version\s*:\s*25\.0\.rc1\.1", board)
    assert re.search(r"Firmware Version\s*:\s*7\.7\.0\.1\.231", board)


def test_a_service_with_the_driver_group_can_open_its_files(host):
    # What the vllm unit does with kunpeng_ascend.device_group: SupplementaryGroups= of the driver's group
    # (HwHiAiUser here; the driver was installed without --install-for-all).
    out = host.check_output("systemd-run --quiet --wait --pipe -p User=nobody -p SupplementaryGroups=HwHiAiUser id -Gn")
    assert "HwHiAiUser" in out.split()
