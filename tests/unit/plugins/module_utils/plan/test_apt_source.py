"""deb822 apt sources: the ansible.builtin.deb822_repository arguments of the base mirror and the CUDA repository,
and the file each lands in (the same file the templates of earlier releases wrote, so it is replaced in place)."""

import os

import pytest
import yaml

from ansible.errors import AnsibleFilterError
from ansible_collections.kunpeng.vllm.plugins.filter.deb822_source import deb822_source as source_filter
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.apt_source import deb822_source, sources_file

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))))
CUDA = "https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/"
MIRROR = "http://mirror.example.internal/debian"


def _vars(role):
    with open(os.path.join(ROOT, "roles", role, "vars", "main.yml")) as handle:
        return yaml.safe_load(handle)


@pytest.mark.parametrize(("name", "path"), [
    # ansible.builtin.deb822_repository: lower case, blanks and "_" become "-", anything else outside [a-z0-9-] goes.
    ("kunpeng-vllm-cuda", "/etc/apt/sources.list.d/kunpeng-vllm-cuda.sources"),
    ("Kunpeng_vLLM mirror", "/etc/apt/sources.list.d/kunpeng-vllm-mirror.sources"),
    ("cuda.12 (local)", "/etc/apt/sources.list.d/cuda12-local.sources"),
])
def test_sources_file_follows_the_module_naming(name, path):
    assert sources_file(name) == path


@pytest.mark.parametrize(("role", "name", "path"), [
    ("base", "__base_apt_mirror_name", "__base_apt_mirror_file"),
    ("nvidia", "__nvidia_apt_source_name", "__nvidia_apt_source"),
])
def test_each_role_source_lands_where_its_template_wrote_it(role, name, path):
    variables = _vars(role)
    assert sources_file(variables[name]) == variables[path]


@pytest.mark.parametrize(("uri", "kwargs", "expected"), [
    # NVIDIA's flat repository, signed by the key the role downloads.
    (CUDA, {"name": "kunpeng-vllm-cuda", "suites": ["/"], "keyring": "/etc/apt/keyrings/kunpeng-vllm-cuda.asc"},
     {"name": "kunpeng-vllm-cuda", "types": ["deb"], "uris": [CUDA], "suites": ["/"],
      "signed_by": "/etc/apt/keyrings/kunpeng-vllm-cuda.asc"}),
    # A local test repository without a key.
    ("file:///opt/kv-repo/debian12/x86_64/", {"name": "kunpeng-vllm-cuda", "suites": ["/"], "trusted": True},
     {"name": "kunpeng-vllm-cuda", "types": ["deb"], "uris": ["file:///opt/kv-repo/debian12/x86_64/"],
      "suites": ["/"], "trusted": True}),
    # The base mirror: Debian's suites and components, its archive keyring; text lists are split on blanks.
    (MIRROR, {"name": "kunpeng-vllm-mirror", "suites": "bookworm bookworm-updates",
              "components": ["main", "", "non-free-firmware"],
              "keyring": "/usr/share/keyrings/debian-archive-keyring.gpg",
              "path": "/etc/apt/sources.list.d/kunpeng-vllm-mirror.sources"},
     {"name": "kunpeng-vllm-mirror", "types": ["deb"], "uris": [MIRROR], "suites": ["bookworm", "bookworm-updates"],
      "components": ["main", "non-free-firmware"], "signed_by": "/usr/share/keyrings/debian-archive-keyring.gpg"}),
])
def test_deb822_source(uri, kwargs, expected):
    assert deb822_source(uri, **kwargs) == expected
    assert source_filter(uri, **kwargs) == expected


@pytest.mark.parametrize(("uri", "kwargs", "problem"), [
    ("", {"name": "m", "suites": ["bookworm"], "components": ["main"]}, "has no URI"),
    (MIRROR, {"name": "m", "suites": [], "components": ["main"]}, "has no suite"),
    (CUDA, {"name": "c", "suites": ["/"], "components": ["main"]}, "takes no components"),
    (CUDA, {"name": "c", "suites": ["/", "bookworm"]}, "stands alone"),
    (MIRROR, {"name": "m", "suites": ["bookworm"]}, "need at least one component"),
    (CUDA, {"name": "c", "suites": ["/"], "keyring": "/k.asc", "trusted": True}, "not both"),
    (CUDA, {"name": "c", "suites": ["/"], "keyring": "k.asc"}, "not an absolute path"),
    # A renamed source would leave the old file beside the new one.
    (CUDA, {"name": "cuda", "suites": ["/"], "path": "/etc/apt/sources.list.d/kunpeng-vllm-cuda.sources"},
     "would be written to /etc/apt/sources.list.d/cuda.sources"),
])
def test_deb822_source_refuses(uri, kwargs, problem):
    with pytest.raises(ValueError, match=problem):
        deb822_source(uri, **kwargs)
    with pytest.raises(AnsibleFilterError, match=f"deb822_source: .*{problem}"):
        source_filter(uri, **kwargs)
