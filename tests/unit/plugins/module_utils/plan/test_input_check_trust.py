"""Values that widen who is trusted: short keys, proxies and metrics sources, credentials in URLs.

Each table holds the value a user may give and whether input_check refuses it before any change; a refused value's
message starts with the variable's name and never repeats a secret.
"""

import pytest

from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import gateway, input_check


def _check(role, name, value, **others):
    return input_check.check_values(role, dict(others, **{name: value}), memory_mb=16 * 1024)


# --- API keys: one minimum for vLLM's key and the gateway's keys (plan/gateway.py API_KEY_MIN_LENGTH) -------------

@pytest.mark.parametrize("role, name, value, refused", [
    ("vllm", "vllm_api_key", "a", True),
    ("vllm", "vllm_api_key", "x" * 15, True),
    ("vllm", "vllm_api_key", "x" * 16, False),
    ("vllm", "vllm_api_key", "demo-key-change-me", False),
    # empty: the role generates a key (or serves loopback / the explicit opt-out)
    ("vllm", "vllm_api_key", "", False),
    ("gateway", "gateway_api_keys", ["short-key"], True),
    ("gateway", "gateway_api_keys", ["0123456789abcdef", "short"], True),
    ("gateway", "gateway_api_keys", ["0123456789abcdef"], False),
])
def test_an_api_key_has_the_shared_minimum_length(role, name, value, refused):
    problems = _check(role, name, value)
    assert bool(problems) == refused, problems
    for problem in problems:
        assert problem.startswith(name) and str(gateway.API_KEY_MIN_LENGTH) in problem
        for key in value if isinstance(value, list) else [value]:
            assert repr(key) not in problem


def test_the_gateway_plan_and_the_input_rule_agree_on_the_minimum():
    for key, refused in (("x" * (gateway.API_KEY_MIN_LENGTH - 1), True), ("x" * gateway.API_KEY_MIN_LENGTH, False)):
        assert bool(gateway.validate_settings({"gateway_api_keys": [key]})) == refused
        assert bool(_check("gateway", "gateway_api_keys", [key])) == refused


# --- FORWARDED_ALLOW_IPS: single proxy addresses only (uvicorn's proxy_headers._TrustedHosts) ----------------------

@pytest.mark.parametrize("value, refused", [
    ("10.0.0.5,10.0.0.6", False),
    ("10.0.0.5, 10.0.0.6", False),
    ("10.0.0.5/32", False),
    ("10.0.0.5/255.255.255.255", False),
    ("fd00::5,::1", False),
    ("fd00::5/128", False),
    ("", False),
    ("*", True),
    ("10.0.0.5, 0.0.0.0/0", True),
    # the review's bypasses: every address, written otherwise
    ("0.0.0.0/1,128.0.0.0/1", True),
    ("0.0.0.0/00", True),
    ("0.0.0.0/0.0.0.0", True),
    ("::/0", True),
    ("::ffff:0:0/96", True),
    ("10.0.0.0/31", True),
    ("fd00::/127", True),
    # uvicorn compares a name as text with the peer's address: it never matches, or means something else
    ("proxy.internal", True),
    ("unix:/run/proxy.sock", True),
])
def test_forwarded_allow_ips_names_single_proxies_only(value, refused):
    problems = _check("vllm", "vllm_environment", {"FORWARDED_ALLOW_IPS": value})
    assert bool(problems) == refused, problems
    if refused:
        assert problems[0].startswith("vllm_environment.FORWARDED_ALLOW_IPS:") and "address" in problems[0]


# --- vllm_metrics_sources: at most an IPv4 /8 or an IPv6 /32 reads /metrics without the key ----------------------

@pytest.mark.parametrize("value, refused", [
    ("10.0.0.5", False),
    ("10.0.0.0/8", False),
    ("10.1.2.3/8", False),
    ("prometheus.internal", False),
    ("fd00:1234::/32", False),
    # (an entry starts with a letter or a digit: '::' is written 0::)
    ("0::ffff:10.0.0.0/104", False),
    ("0::ffff:10.0.0.5", False),
    ("0.0.0.0/0", True),
    ("0.0.0.0/00", True),
    ("0.0.0.0/0.0.0.0", True),
    ("0.0.0.0/1", True),
    ("128.0.0.0/1", True),
    ("10.0.0.0/7", True),
    ("0::/0", True),
    ("2000::/3", True),
    ("fd00::/31", True),
    # every IPv4 client of a dual-stack listener, as its mapped address
    ("0:0:0:0:0:ffff:0:0/96", True),
    ("0::ffff:0.0.0.0/97", True),
    ("0::/80", True),
])
def test_metrics_sources_are_no_wider_than_the_bound(value, refused):
    problems = _check("vllm", "vllm_metrics_sources", ["10.0.0.5", value])
    assert bool(problems) == refused, problems
    if refused:
        assert problems[0].startswith("vllm_metrics_sources[1]:") and "/8 (IPv4) or /32 (IPv6)" in problems[0]


def test_the_route_guards_own_variable_stays_refused_in_vllm_environment():
    problems = _check("vllm", "vllm_environment", {"KUNPENG_VLLM_METRICS_SOURCES": "10.0.0.5"})
    assert problems and "vllm_metrics_sources" in problems[0]


# --- secrets: a refused value of a no_log variable is never repeated, whatever its rule says -----------------------

PASSWORD = "Pa55w0rd-not-shown"
BAD_URL = f"https://ci:{PASSWORD}@mirror internal/simple"  # the space makes every URL, key and token rule refuse it


@pytest.mark.parametrize("name", input_check.SECRETS)
def test_a_secret_is_never_repeated_in_a_message(name):
    role = next(role for role, rules in input_check.RULES.items() if name in rules)
    value = [BAD_URL] if name.endswith(("_urls", "_keys", "_links")) else BAD_URL
    problems = _check(role, name, value)
    assert problems and problems[0].startswith(name), problems
    assert PASSWORD not in problems[0] and "mirror internal" not in problems[0], problems


def test_the_review_repro_base_pip_index_url_is_masked():
    for role, name in (("base", "base_pip_index_url"), ("vllm", "vllm_pip_index_url")):
        problems = _check(role, name, "https://ci:Pa$$w0rd@mirror.internal/simple")
        assert problems and "Pa$$w0rd" not in problems[0] and problems[0].startswith(f"{name}: the value"), problems


@pytest.mark.parametrize("problem, value, expected", [
    ("x: 'https://u:p@h/s' is bad", "https://u:p@h/s", "x: the value is bad"),
    ("x[1]: 'secret-two' is bad", ["secret-one", "secret-two"], "x[1]: the value is bad"),
    ("x: https://u:p@h/s/ is bad", "https://u:p@h/s/", "x: the value is bad"),
    # a bare short text is left (it would garble the message); its quoted form is not
    ("x: 'abc' is too short, abc", "abc", "x: the value is too short, abc"),
    ("x: nothing of it", {"K": "secret-value"}, "x: nothing of it"),
])
def test_without_secret(problem, value, expected):
    assert input_check.without_secret(problem, value) == expected


# --- vllm_environment_files: the files' variables are held to vllm_environment's rules -----------------------------

@pytest.mark.parametrize("text, refused", [
    ("HCCL_BUFFSIZE=200\nNCCL_SOCKET_IFNAME=eth0\n", False),
    ("FORWARDED_ALLOW_IPS=10.0.0.5,10.0.0.6\n", False),
    ("LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2\n", False),
    ("# FORWARDED_ALLOW_IPS=*\n", False),
    ("FORWARDED_ALLOW_IPS=*\n", True),
    ("  FORWARDED_ALLOW_IPS = \"0.0.0.0/1,128.0.0.0/1\"\n", True),
    ("KUNPENG_VLLM_METRICS_SOURCES=0.0.0.0/0\n", True),
    ("PYTHONPATH=/tmp\n", True),
    ("VLLM_SERVER_DEV_MODE='1'\n", True),
    ("LD_AUDIT=/usr/lib/x.so\n", True),
    ("LD_PRELOAD=/tmp/x.so\n", True),
    ("VLLM_ALLOW_INSECURE_SERIALIZATION=1\n", True),
])
def test_an_environment_file_holds_to_vllm_environments_rules(text, refused):
    problems = input_check.environment_file_problems({"/etc/vllm/extra.env": text})
    assert bool(problems) == refused, problems
    for problem in problems:
        assert problem.startswith("vllm_environment_files: /etc/vllm/extra.env sets ")


def test_every_file_and_variable_is_named():
    problems = input_check.environment_file_problems({"/etc/a.env": "LD_AUDIT=/usr/lib/x.so\nPYTHONPATH=/x\n",
                                                      "/etc/b.env": "FORWARDED_ALLOW_IPS=*\n"})
    assert [problem.split(":")[1].strip() for problem in problems] == [
        "/etc/a.env sets LD_AUDIT", "/etc/a.env sets PYTHONPATH", "/etc/b.env sets FORWARDED_ALLOW_IPS"]


# --- credentials in URLs: refused where they reach pip's command line, kept out of messages elsewhere --------------

@pytest.mark.parametrize("name, value, refused", [
    ("vllm_source_url", "git+https://github.com/vllm-project/vllm@v0.11.0", False),
    ("vllm_source_url", "git+ssh://git@github.com/vllm-project/vllm@v0.11.0", False),
    ("vllm_source_url", "/opt/src/vllm", False),
    ("vllm_source_url", "", False),
    ("vllm_source_url", "git+https://ci:TOKEN-not-shown@github.com/x/vllm@v1", True),
    ("vllm_source_url", "git+https://TOKEN-not-shown@github.com/x/vllm@v1", True),
    ("vllm_source_url", "https://ci:TOKEN-not-shown@mirror.internal/vllm-0.11.0.tar.gz", True),
    ("vllm_source_url", "git+ssh://git:TOKEN-not-shown@github.com/x/vllm", True),
    ("vllm_extra_packages", ["llguidance>=0.7", "git+https://TOKEN-not-shown@github.com/x/y@v1"], True),
    ("vllm_extra_packages", ["git+https://github.com/x/y@v1"], False),
    # review round 2: find-links reached pip's argv, the plan and its fact
    ("vllm_pip_find_links", ["https://ci:TOKEN-not-shown@wheels.internal/simple/"], True),
    ("vllm_pip_find_links", ["https://wheels.internal/simple/", "/srv/wheels"], False),
])
def test_pip_sources_carry_no_credentials(name, value, refused):
    problems = _check("vllm", name, value)
    assert bool(problems) == refused, problems
    for problem in problems:
        assert problem.startswith(name) and "netrc" in problem and "TOKEN-not-shown" not in problem


@pytest.mark.parametrize("name, value, refused, instead", [
    # review round 2: the endpoint reached the download's environment and every progress message
    ("vllm_hf_endpoint", "https://ci:TOKEN-not-shown@hf-mirror.internal", True, "vllm_hf_token"),
    ("vllm_hf_endpoint", "https://TOKEN-not-shown@hf-mirror.internal", True, "vllm_hf_token"),
    ("vllm_hf_endpoint", "https://hf-mirror.internal", False, ""),
    # ... and the artifact URL the refusal of an http:// URL repeated, password included
    ("vllm_engine_artifact_url", "http://ci:TOKEN-not-shown@artifacts.internal/vllm", True, "sha256 pin"),
    ("vllm_engine_artifact_url", "https://ci:TOKEN-not-shown@artifacts.internal/vllm", True, "sha256 pin"),
    ("vllm_engine_artifact_url", "https://artifacts.internal/vllm", False, ""),
])
def test_download_urls_carry_no_credentials(name, value, refused, instead):
    problems = _check("vllm", name, value)
    assert bool(problems) == refused, problems
    for problem in problems:
        assert problem.startswith(name) and instead in problem and "TOKEN-not-shown" not in problem


@pytest.mark.parametrize("value", [
    "https://ci:Pa55-not-shown@models.internal/smol.zip",
    "https://ci:Pa55-not-shown@models internal/smol.tar.gz",
])
def test_a_refused_model_url_is_shown_without_its_credentials(value):
    problems = _check("vllm", "vllm_model_src", value, vllm_model_source="url", vllm_model_sha256="a" * 64)
    assert problems and problems[0].startswith("vllm_model_src:"), problems
    assert "Pa55-not-shown" not in problems[0] and "ci:" not in problems[0]


def test_a_model_url_with_credentials_is_usable():
    assert _check("vllm", "vllm_model_src", "https://ci:Pa55@models.internal/smol.tar.gz", vllm_model_source="url",
                  vllm_model_sha256="a" * 64) == []


@pytest.mark.parametrize("value, refused", [
    ("https://glpat-TOKEN-not-shown@models.internal/m.tar.gz", True),
    ("https://oauth2:TOKEN-not-shown@models.internal/m.tar.gz", False),
    ("https://models.internal/m.tar.gz", False),
])
def test_a_model_url_has_no_token_in_its_user_part(value, refused):
    """Review round 2: a token-only user part went to get_url's url_username, which get_url logs on the node."""
    problems = _check("vllm", "vllm_model_src", value, vllm_model_source="url")
    assert bool(problems) is refused, problems
    for problem in problems:
        assert "user:token@host" in problem and "TOKEN-not-shown" not in problem


@pytest.mark.parametrize("role, name, value, refused", [
    # review round 3: a mirror URL's password ended in a 0644 sources.list / .repo file and the play's output
    ("base", "base_apt_mirror_url", "https://ci:TOKEN-not-shown@mirror.internal/debian", True),
    ("base", "base_dnf_mirror_url", "https://ci:TOKEN-not-shown@mirror.internal/openeuler", True),
    ("base", "base_apt_mirror_url", "https://mirror.internal/debian", False),
    ("nvidia", "nvidia_cuda_repo_base_url", "https://ci:TOKEN-not-shown@mirror.internal/cuda", True),
    ("ascend", "ascend_package_base_url", "https://TOKEN-not-shown@mirror.internal/ascend", True),
    ("ascend", "ascend_package_base_url", "https://mirror.internal/ascend", False),
    # review round 4: the Grafana repository settings (an apt source line holds its URL inside) and the uv wheel
    ("monitoring", "monitoring_grafana_repository",
     "deb [signed-by=/etc/apt/keyrings/grafana.asc] https://u:TOKEN-not-shown@mirror.internal/grafana stable main", True),
    ("monitoring", "monitoring_grafana_repository", "https://u:TOKEN-not-shown@mirror.internal/grafana/rpm", True),
    ("monitoring", "monitoring_grafana_repository", "deb https://apt.grafana.com stable main", False),
    ("monitoring", "monitoring_grafana_repository_key_url", "https://u:TOKEN-not-shown@mirror.internal/gpg.key", True),
    ("wheelhouse", "wheelhouse_uv_wheel", "uv @ https://u:TOKEN-not-shown@wheels.internal/uv.whl", True),
    # review round 5: the driver runfile's URL went raw to nvidia_plan and get_url, whose arguments -vvv shows
    ("nvidia", "nvidia_runfile_src", "https://deploy:TOKEN-not-shown@artifacts.internal/NVIDIA-Linux-aarch64-550.54.15.run",
     True),
    ("nvidia", "nvidia_runfile_src", "https://artifacts.internal/NVIDIA-Linux-aarch64-550.54.15.run", False),
    ("nvidia", "nvidia_runfile_src", "/srv/drivers/NVIDIA-Linux-aarch64-550.54.15.run", False),
])
def test_repository_and_download_urls_carry_no_credentials(role, name, value, refused):
    """Each names where the URL would go; the value is never repeated, and travels with the input check's secrets."""
    problems = _check(role, name, value)
    assert bool(problems) is refused, problems
    for problem in problems:
        assert problem.startswith(name) and "TOKEN-not-shown" not in problem and "the URL holds credentials" in problem
    from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import index_auth
    assert (name in index_auth.credential_values({name: value})["credentials"]) is refused


@pytest.mark.parametrize("name", ["VLLM_DP_MASTER_IP", "VLLM_DP_SIZE", "VLLM_DP_RANK", "VLLM_NIXL_SIDE_CHANNEL_HOST"])
def test_a_multi_node_layout_through_the_environment_is_refused(name):
    """Review round 4: the data parallel layout (VLLM_DP_*) and NIXL's side channel address through vllm_environment."""
    problems = _check("vllm", "vllm_environment", {name: "10.0.0.1"})
    assert problems and name in problems[0] and "vllm_cluster_group" in problems[0]


def test_an_environment_file_cannot_replace_the_api_key():
    """Review round 4: a file loaded after the role's replaced the key the role decided (or emptied it)."""
    for text in ("VLLM_API_KEY=abc\n", "VLLM_API_KEY=\n", "VLLM_API_KEY\t=sk-0123456789abcdef\n"):
        problems = input_check.environment_file_problems({"/etc/vllm/extra.env": text})
        assert problems and "sets VLLM_API_KEY" in problems[0], text
    assert _check("vllm", "vllm_environment", {"VLLM_MOONCAKE_BOOTSTRAP_PORT": "8998"})


@pytest.mark.parametrize("name", ["MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK"])
def test_a_torchrun_rendezvous_through_the_environment_is_refused(name):
    assert _check("vllm", "vllm_environment", {name: "10.0.0.1"})


@pytest.mark.parametrize("key", ["hf_token", "hf-token", "hfToken", "--hf-token"])
def test_a_token_in_the_engine_arguments_is_refused(key):
    """Review round 6: the engine config is in the plan's result and fact, the config file's diff and a ConfigMap."""
    problems = _check("vllm", "vllm_engine_args", {key: "hf_SECRETtokenABCDEFGHIJ0123456789"}, vllm_version="0.33.0")
    assert problems and "vllm_hf_token" in problems[0] and "hf_SECRETtoken" not in problems[0]


def test_the_config_root_of_the_ray_list_is_the_roles():
    assert _check("vllm", "vllm_environment", {"VLLM_CONFIG_ROOT": "/tmp/x"})
