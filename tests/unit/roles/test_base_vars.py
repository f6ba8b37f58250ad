"""kunpeng.vllm.base resolves the right platform data on every supported OS.

Only Debian 12 containers run here, so these tests resolve the role's
variables (tasks/set_vars.yml through kunpeng.vllm._common: support check,
then the vars/ layers) for made-up facts of every platform in ONE
ansible-playbook run (one inventory host per platform), check in plain Python
that each vars file of every role holds only what differs from the layers
below it, and check that argument_specs stops a wrongly typed variable before
anything changes.
"""

import json
import os
import re

import pytest
import role_vars
from playbook_run import run_playbook

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

# Facts the role reads (tasks/set_vars.yml _common_facts and the platform facts), per platform.
PLATFORMS = {
    "openEuler 22.03": {
        "distribution": "openEuler",
        "distribution_version": "22.03",
        "distribution_major_version": "22",
        "distribution_release": "LTS-SP4",
        "os_family": "RedHat",
        "pkg_mgr": "dnf",
    },
    "openEuler 24.03": {
        "distribution": "openEuler",
        "distribution_version": "24.03",
        "distribution_major_version": "24",
        "distribution_release": "LTS-SP1",
        "os_family": "RedHat",
        "pkg_mgr": "dnf",
    },
    "Ubuntu 22.04": {
        "distribution": "Ubuntu",
        "distribution_version": "22.04",
        "distribution_major_version": "22",
        "distribution_release": "jammy",
        "os_family": "Debian",
        "pkg_mgr": "apt",
    },
    "Ubuntu 24.04": {
        "distribution": "Ubuntu",
        "distribution_version": "24.04",
        "distribution_major_version": "24",
        "distribution_release": "noble",
        "os_family": "Debian",
        "pkg_mgr": "apt",
    },
    "Debian 12": {
        "distribution": "Debian",
        "distribution_version": "12.11",
        "distribution_major_version": "12",
        "distribution_release": "bookworm",
        "os_family": "Debian",
        "pkg_mgr": "apt",
    },
}
UNSUPPORTED = {
    "Fedora 40": {
        "distribution": "Fedora",
        "distribution_version": "40",
        "distribution_major_version": "40",
        "distribution_release": "",
        "os_family": "RedHat",
        "pkg_mgr": "dnf",
    },
    "Alpine 3.20": {
        "distribution": "Alpine",
        "distribution_version": "3.20.3",
        "distribution_major_version": "3",
        "distribution_release": "",
        "os_family": "Alpine",
        "pkg_mgr": "apk",
    },
    "Ubuntu 20.04": {
        "distribution": "Ubuntu",
        "distribution_version": "20.04",
        "distribution_major_version": "20",
        "distribution_release": "focal",
        "os_family": "Debian",
        "pkg_mgr": "apt",
    },
    "Debian 12 on ppc64le": dict(PLATFORMS["Debian 12"], architecture="ppc64le"),
}
COMMON = {
    "kernel": "6.6.0-28.0.0.34.oe2403.aarch64",
    "architecture": "aarch64",
    "service_mgr": "systemd",
    "virtualization_type": "kvm",
    "virtualization_role": "host",
}


def _host(platform):
    return re.sub(r"[^a-z0-9]", "", platform.lower())


@pytest.fixture(scope="module")
def resolved(collections_path, tmp_path_factory):
    """Every platform, supported or not, resolved by one ansible-playbook run: (output, host -> variables)."""
    out = tmp_path_factory.mktemp("resolved")
    platforms = {_host(name): dict(COMMON, **facts) for name, facts in {**PLATFORMS, **UNSUPPORTED}.items()}
    proc = run_playbook(collections_path, "resolve_vars.yml", {"platforms": platforms, "out": str(out)},
                        hosts=sorted(platforms))
    output = proc.stdout + proc.stderr
    found = {name[:-len(".json")]: json.loads((out / name).read_text()) for name in os.listdir(out)}
    return output, found


@pytest.mark.parametrize("platform", sorted(PLATFORMS))
def test_supported_platform_resolves(resolved, platform):
    output, found = resolved
    assert _host(platform) in found, output
    resolved = found[_host(platform)]
    facts = PLATFORMS[platform]
    assert resolved["pkg_mgr"] == facts["pkg_mgr"]
    packages = set(resolved["packages"])
    compiler, build = set(resolved["compiler_packages"]), set(resolved["build_packages"])
    assert {"python3", "numactl", "pciutils", "curl", "ca-certificates"} <= packages
    # What a wheel install in eager mode never needs is not in the base set.
    assert not {"gcc", "g++", "gcc-c++", "make", "cmake", "git"} & packages
    assert "gcc" in compiler and {"make", "cmake", "git"} <= build
    packages |= compiler | build
    assert resolved["driver_packages"] == ["dkms"]
    if facts["distribution"] == "openEuler":
        assert {"gcc-c++", "python3-devel", "numactl-libs", "numactl-devel"} <= packages
        assert not {"python3-dev", "libnuma1", "python3-venv"} & packages
        assert resolved["kernel_headers_package"] == "kernel-devel-" + COMMON["kernel"]
        assert resolved["ca_anchor_dir"] == "/etc/pki/ca-trust/source/anchors"
        assert resolved["ca_update_command"] == ["update-ca-trust", "extract"]
        assert resolved["ca_bundle"] == "/etc/pki/tls/certs/ca-bundle.crt"
        assert resolved["nologin_shell"] == "/sbin/nologin"
        assert resolved["chrony_service"] == "chronyd"
        assert resolved["firewall"] == "firewalld"
        assert resolved["apt_keyring"] is None and resolved["apt_mirror_source"] is None
    else:
        assert {"g++", "python3-dev", "python3-venv", "libnuma1"} <= packages
        assert not {"python3-devel", "numactl-libs"} & packages
        assert resolved["kernel_headers_package"] == "linux-headers-" + COMMON["kernel"]
        assert resolved["ca_anchor_dir"] == "/usr/local/share/ca-certificates"
        assert resolved["ca_update_command"] == ["update-ca-certificates"]
        assert resolved["ca_bundle"] == "/etc/ssl/certs/ca-certificates.crt"
        assert resolved["nologin_shell"] == "/usr/sbin/nologin"
        assert resolved["chrony_service"] == "chrony"
        assert resolved["firewall"] == "ufw"
        release = facts["distribution_release"]
        assert resolved["apt_default_suites"][:2] == [release, release + "-updates"]
        if facts["distribution"] == "Ubuntu":
            assert resolved["apt_keyring"] == "/usr/share/keyrings/ubuntu-archive-keyring.gpg"
            assert resolved["apt_default_suites"][2:] == [release + "-security"]
            assert resolved["apt_default_components"] == ["main", "universe"]
        else:
            assert resolved["apt_keyring"] == "/usr/share/keyrings/debian-archive-keyring.gpg"
            assert resolved["apt_default_suites"][2:] == []
            assert resolved["apt_default_components"] == ["main"]
        # The mirror source (base_apt_mirror_url set): its ansible.builtin.deb822_repository arguments, in the file
        # the template of earlier releases wrote.
        assert resolved["apt_mirror_source"] == {
            "name": "kunpeng-vllm-mirror", "types": ["deb"], "uris": ["http://mirror.example.internal/debian"],
            "suites": resolved["apt_default_suites"], "components": resolved["apt_default_components"],
            "signed_by": resolved["apt_keyring"]}


@pytest.mark.parametrize("platform", sorted(UNSUPPORTED))
def test_unsupported_platform_fails_listing_supported(resolved, platform):
    output, found = resolved
    assert _host(platform) not in found
    facts = UNSUPPORTED[platform]
    message = re.search(rf"fatal: \[{_host(platform)}\]: FAILED! => (.*)", output)
    assert message, output
    arch = facts.get("architecture", COMMON["architecture"])
    assert f"does not support {facts['distribution']} {facts['distribution_version']} ({facts['os_family']} family) on {arch}." \
        in message.group(1), output
    assert "Supported platforms: Debian 12, Ubuntu 22.04/24.04, openEuler 22.03/24.03, on aarch64 or x86_64" in message.group(1)


def test_wrong_variable_type_fails_before_any_change(collections_path):
    proc = run_playbook(collections_path, "validate_args.yml", {"base_firewall_ports": "eighty"}, "--check")
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0, output
    assert "Validation of arguments failed" in output and "'base_firewall_ports'" in output, output
    # The validation is the first and only task that ran: nothing was gathered,
    # nothing changed.
    tasks = [line for line in output.splitlines() if line.startswith("TASK [")]
    assert len(tasks) == 1 and "Validating arguments against arg spec 'main'" in tasks[0], tasks
    assert re.search(r"localhost\s+: ok=0\s+changed=0\s+unreachable=0\s+failed=1", output), output


# --- the vars/ layers, in plain Python -------------------------------------

ROLES = os.path.join(ROOT, "roles")


_yaml = role_vars.read_yaml
_layer_files = role_vars.layer_files


def _calls_set_vars(role):
    tasks = os.path.join(ROLES, role, "tasks")
    for name in os.listdir(tasks):
        with open(os.path.join(tasks, name)) as handle:
            if re.search(r"name: kunpeng\.vllm\._common\n\s+tasks_from: set_vars\n", handle.read()):
                return True
    return False


def _layered_roles():
    """Every role whose platform variables kunpeng.vllm._common's set_vars loads."""
    return sorted(role for role in os.listdir(ROLES) if not role.startswith("_") and _calls_set_vars(role))


@pytest.mark.parametrize("role", _layered_roles())
@pytest.mark.parametrize("platform", sorted(PLATFORMS))
def test_each_vars_file_holds_only_its_differences(role, platform):
    """A key a platform file sets must change the value the layers below it give (e.g. Ubuntu.yml over Debian.yml)."""
    below = {}
    for name in _layer_files(role, dict(COMMON, **PLATFORMS[platform])):
        layer = _yaml(os.path.join(ROLES, role, "vars", name))
        repeated = sorted(key for key, value in layer.items() if key in below and below[key] == value)
        assert repeated == [], f"roles/{role}/vars/{name} repeats {repeated} from the layers below it"
        below.update(layer)


@pytest.mark.parametrize("role", _layered_roles())
def test_every_vars_file_is_a_layer_of_some_platform(role):
    """No vars file is dead: each is loaded for at least one supported platform."""
    loaded = set()
    for facts in PLATFORMS.values():
        loaded.update(_layer_files(role, dict(COMMON, **facts)))
    assert sorted(os.listdir(os.path.join(ROLES, role, "vars"))) == sorted(loaded)


def test_layer_order_is_least_specific_first():
    assert _layer_files("base", dict(COMMON, **PLATFORMS["Ubuntu 24.04"])) == ["main.yml", "Debian.yml", "Ubuntu.yml"]
    assert _layer_files("base", dict(COMMON, **PLATFORMS["openEuler 24.03"])) == ["main.yml", "openEuler.yml"]


def test_check_mode_without_apt_bindings_skips_the_apt_steps_and_says_so(collections_path):
    """An Ubuntu 24.04 GPU host (Ansible in a virtualenv, no python3-apt) failed half-way through --check
    (tests/unit/fixtures/nvidia/h200/base-check/base-check-diff.log): the apt module tried to install python3-apt.
    Check mode now skips the apt steps with a warning and goes on."""
    proc = run_playbook(collections_path, "validate_args.yml", {"__base_apt_pythons": ["/nonexistent/python3"]},
                        "--check", "--tags", "base_packages")
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "WARNING: --check skips the apt steps" in output, output
    for task in ("Refresh the package lists when they need it", "Install the build and inference packages without recommends"):
        assert re.search(re.escape(task) + r"\]\s*\**\s*skipping: \[localhost\]", output), (task, output)
    assert "auto-installing missing dependency" not in output, output
    # (check mode reports the local-facts file it would write as changed)
    assert re.search(r"localhost\s+: ok=\d+\s+changed=\d+\s+unreachable=0\s+failed=0", output), output


def test_tuning_report_keys_are_strings():
    """YAML 1.1 reads a bare ``off:`` key as the boolean false: the exported report had a ``false`` key
    (seen in tests/unit/fixtures/nvidia/h200/base-check/base-check-diff-after-fix.log, captured before the fix)."""
    tasks = _yaml(os.path.join(ROLES, "base", "tasks", "tuning.yml"))
    report = next(t["ansible.builtin.set_fact"]["kunpeng_base_tuning"] for t in tasks
                  if "kunpeng_base_tuning" in t.get("ansible.builtin.set_fact", {}))
    assert sorted(report) == ["applied", "items", "off", "skipped"]


# Roles whose platform knowledge lives in vars/ layers only (the vllm role and
# the playbooks are not converted yet).
ONE_OS_IDIOM = ["_common", "ascend", "base", "gateway", "monitoring", "nvidia", "wheelhouse"]


@pytest.mark.parametrize("role", ONE_OS_IDIOM)
def test_platforms_are_vars_files_not_branches_in_tasks(role):
    """An OS is a vars/<os_family|distribution>.yml file: tasks and templates never branch on os_family or the
    package manager fact, nor key a table by them (adding an OS then means adding vars files)."""
    found = []
    for folder in ("tasks", "handlers", "templates"):
        path = os.path.join(ROLES, role, folder)
        for name in sorted(os.listdir(path)) if os.path.isdir(path) else []:
            with open(os.path.join(path, name)) as handle:
                for number, line in enumerate(handle, 1):
                    if re.search(r"when:.*os_family|ansible_facts\[.pkg_mgr.\]|ansible_facts\.pkg_mgr|ansible_pkg_mgr"
                                 r"|ansible_os_family|^\s+(apt|dnf|ufw|firewalld|Debian|RedHat|openEuler):\s*\[", line):
                        found.append(f"roles/{role}/{folder}/{name}:{number}: {line.strip()}")
    assert found == []
