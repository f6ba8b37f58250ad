"""KEY=VALUE files of the Ascend installers (doubles in fixtures/ascend/versions)."""

import os

from ansible_collections.kunpeng.vllm.plugins.module_utils.probe.kv_files import get_ci, parse_kv_text
from conftest import FIXTURES

VERSIONS = os.path.join(FIXTURES, "ascend", "versions")


def fixture(name):
    with open(os.path.join(VERSIONS, name)) as handle:
        return handle.read()


def test_driver_version_info():
    data = parse_kv_text(fixture("driver-version.info"))
    assert data["Version"] == "24.1.rc1"
    assert data["ascendhal_version"] == "7.35.19"
    assert data["compatible_version"] == "[V100R001C30],[V100R001C13],[V100R001C15],[V100R001C17]"
    assert data["compatible_version_fw"] == "[7.0.0,7.2.99]"


def test_firmware_install_and_toolkit():
    assert parse_kv_text(fixture("firmware-version.info"))["Version"] == "7.1.0.11.220"
    install = parse_kv_text(fixture("ascend_install.info"))
    assert install["Driver_Install_Status"] == "complete" and install["UserName"] == "HwHiAiUser"
    toolkit = parse_kv_text(fixture("ascend_toolkit_install.info"))
    assert get_ci(toolkit, "Version") == "8.1.RC1" and toolkit["arch"] == "aarch64"


def test_comments_quotes_and_junk():
    text = '# comment\n\nexport A="quoted value"\nB = 2\nnot a pair\nC=\nkey with space=x\n'
    data = parse_kv_text(text)
    assert data == {"A": "quoted value", "B": "2", "C": ""}
    assert get_ci(data, "c") is None  # empty counts as missing
    assert parse_kv_text(None) == {}
