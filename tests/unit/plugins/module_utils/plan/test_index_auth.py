"""Package index credentials stay out of pip's command line, the plan and its fact (issue 37 point 7).

pip's documentation ("Authentication"): credentials in an index URL as ``user:password@`` or a single-part token as
``token@``; without credentials in the URL pip asks the netrc file ("netrc support"), which requests'
``get_netrc_auth`` (psf/requests src/requests/utils.py) reads from the file the ``NETRC`` variable names.
"""

import json
import os
import sys

import pytest

from ansible_collections.kunpeng.vllm.plugins.filter.vllm_index_auth import vllm_index_auth
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import deployment, index_auth
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.capacity import PlanError

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "modules"))
import plan_hosts  # noqa: E402

SECRET = "s3cr%2Ft-pw"


@pytest.mark.parametrize("index_url, extras, expected", [
    ("", [], {"index_url": "", "extra_index_urls": [], "netrc": ""}),
    ("https://mirror.example/simple", ["https://download.pytorch.org/whl/cpu"],
     {"index_url": "https://mirror.example/simple", "extra_index_urls": ["https://download.pytorch.org/whl/cpu"], "netrc": ""}),
    # user:password, percent-encoded as pip wants it in a URL, decoded in the netrc
    (f"https://ci:{SECRET}@mirror.example:8443/simple", [],
     {"index_url": "https://mirror.example:8443/simple", "extra_index_urls": [],
      "netrc": "machine mirror.example login ci password s3cr/t-pw\n"}),
    # a single-part token is the login, with no password
    ("", ["https://0123456789abcdef@pkgs.example/whl", "https://other.example/simple"],
     {"index_url": "", "extra_index_urls": ["https://pkgs.example/whl", "https://other.example/simple"],
      "netrc": "machine pkgs.example login 0123456789abcdef\n"}),
])
def test_the_urls_lose_their_credentials_to_the_netrc(index_url, extras, expected):
    assert index_auth.index_auth(index_url, extras) == expected
    assert vllm_index_auth(index_url, extras) == expected


def test_a_credential_a_netrc_cannot_carry_is_refused_without_repeating_it():
    with pytest.raises(ValueError) as raised:
        index_auth.split("https://ci:two%20words@mirror.example/simple")
    assert "two" not in str(raised.value)


@pytest.mark.parametrize("request_", [
    {"pip_index_url": f"https://ci:{SECRET}@mirror.example/simple"},
    {"pip_extra_index_urls": ["https://x.example/cpu", "https://0123456789abcdef@pkgs.example/whl"]},
])
def test_pip_args_refuse_a_url_with_credentials_and_do_not_repeat_them(request_):
    with pytest.raises(PlanError) as raised:
        deployment.pip_args(dict(deployment.REQUEST_DEFAULTS, **request_))
    assert SECRET not in str(raised.value) and "0123456789abcdef" not in str(raised.value)


def test_a_plan_from_credentialed_index_urls_holds_no_credential():
    """What the vllm role hands the planner (the URLs through kunpeng.vllm.vllm_index_auth): the serialized plan, its
    pip arguments (pip's command line) and every step's arguments hold neither the password nor the token."""
    auth = vllm_index_auth(f"https://ci:{SECRET}@mirror.example/simple", ["https://0123456789abcdef@download.example/cpu"])
    result = plan_hosts.role_plan("cpu-x86", "auto", architecture="x86_64", pip_index_url=auth["index_url"],
                                  pip_extra_index_urls=auth["extra_index_urls"])
    text = json.dumps(result)
    for secret in (SECRET, "s3cr/t-pw", "0123456789abcdef", "ci:"):
        assert secret not in text
    argv = result["pip_args"] + [arg for step in result["role_steps"] for arg in step["pip_args"]]
    assert "--index-url" in argv and "https://mirror.example/simple" in argv
    assert "--extra-index-url=https://download.example/cpu" in argv
    assert not any("@" in arg for arg in argv)
    assert auth["netrc"] == ("machine mirror.example login ci password s3cr/t-pw\n"
                             "machine download.example login 0123456789abcdef\n")


@pytest.mark.parametrize("url, expected", [
    ("https://models.internal/smol.tar.zst", {"url": "https://models.internal/smol.tar.zst", "username": "", "password": ""}),
    ("https://ci:s3cret@models.internal/smol.tar.zst?sig=x",
     {"url": "https://models.internal/smol.tar.zst?sig=x", "username": "ci", "password": "s3cret"}),
    ("https://TOKEN@models.internal:8443/m.tgz", {"url": "https://models.internal:8443/m.tgz", "username": "TOKEN", "password": ""}),
    ("https://ci:p%40ss%3Aw@host/x", {"url": "https://host/x", "username": "ci", "password": "p@ss:w"}),
    ("git+https://ci:TOKEN@github.com/x/vllm@v1", {"url": "git+https://github.com/x/vllm@v1", "username": "ci", "password": "TOKEN"}),
    ("/srv/models/smol", {"url": "/srv/models/smol", "username": "", "password": ""}),
    ("org/model", {"url": "org/model", "username": "", "password": ""}),
    ("", {"url": "", "username": "", "password": ""}),
])
def test_credentials_come_off_a_url(url, expected):
    assert index_auth.credentials(url) == expected
    assert index_auth.without_credentials(url) == expected["url"]
    assert not index_auth.has_credentials(expected["url"])


@pytest.mark.parametrize("values, credentials", [
    ({"vllm_model_src": "https://oauth2:TOKEN@gitlab.internal/m.tar.gz", "vllm_port": 8000}, ["vllm_model_src"]),
    ({"vllm_model_src": "https://TOKEN@gitlab.internal/m.tar.gz"}, ["vllm_model_src"]),
    ({"vllm_pip_find_links": ["/srv/wheels", "https://ci:pw@wheels.internal/"]}, ["vllm_pip_find_links"]),
    ({"vllm_environment": {"HF_ENDPOINT": "https://u:p@hf.internal"}}, ["vllm_environment"]),
    ({"vllm_model_src": "/data/models/m", "vllm_model_name": "m", "vllm_engine_args": {"host": "0.0.0.0"}}, []),
    ({"vllm_model_src": "org/model", "vllm_hf_endpoint": "https://hf-mirror.internal"}, []),
    ({}, []),
])
def test_values_with_credentials_in_a_url_go_with_the_secrets(values, credentials):
    """Review round 3: vllm_model_src's user:token@ form came back in the input check's module arguments."""
    split = index_auth.credential_values(values)
    assert sorted(split["credentials"]) == credentials
    assert sorted(split["plain"]) == sorted(set(values) - set(credentials))
    assert dict(split["plain"], **split["credentials"]) == values
