"""vllm_endpoint as Ansible runs it: the key file is written once, 0600, reused, and never written in check mode."""

import json
import os
import stat

from module_runner import run_main

from ansible_collections.kunpeng.vllm.plugins.modules import vllm_endpoint


def args(key_file, host="0.0.0.0", **overrides):
    # The engine config's shape is the plan's (plugins/module_utils/plan/deployment.py engine_config).
    config = {"host": host, "port": 8000, "served-model-name": "smollm2"}
    return dict({"api_key": "", "engine_config": config, "key_file": str(key_file)}, **overrides)


def test_generates_once_and_reuses(tmp_path):
    key_file = tmp_path / "smollm2.api-key"
    failed, first = run_main(vllm_endpoint.main, args(key_file))
    assert not failed and first["changed"] and first["api_key_source"] == "generate"
    assert len(first["api_key"]) >= 40 and first["api_key"] not in first["message"]
    assert stat.S_IMODE(os.stat(key_file).st_mode) == 0o600
    assert key_file.read_text() == first["api_key"] + "\n"
    failed, second = run_main(vllm_endpoint.main, args(key_file))
    assert not failed and not second["changed"] and second["api_key_source"] == "stored"
    assert second["api_key"] == first["api_key"] and second["key_file"] == str(key_file)


def test_check_mode_writes_nothing(tmp_path):
    key_file = tmp_path / "smollm2.api-key"
    failed, result = run_main(vllm_endpoint.main, args(key_file), check_mode=True)
    assert not failed and result["changed"] and result["api_key"] == "" and not key_file.exists()


def test_a_loose_key_file_is_put_back_to_0600(tmp_path):
    key_file = tmp_path / "smollm2.api-key"
    key_file.write_text("old-key\n")
    key_file.chmod(0o644)
    failed, result = run_main(vllm_endpoint.main, args(key_file))
    assert not failed and result["changed"] and result["api_key"] == "old-key"
    assert stat.S_IMODE(os.stat(key_file).st_mode) == 0o600


def test_given_loopback_and_open_write_no_file(tmp_path):
    key_file = tmp_path / "smollm2.api-key"
    for overrides, source, key in (({"api_key": "users-key"}, "given", "users-key"), ({"host": "127.0.0.1"}, "loopback", ""),
                                   ({"allow_unauthenticated": True}, "open", "")):
        failed, result = run_main(vllm_endpoint.main, args(key_file, **overrides))
        assert not failed and not result["changed"] and result["api_key_source"] == source
        # The effective key: the user's when given (the role keeps it as kunpeng_vllm_api_key), none otherwise.
        assert result["api_key"] == key and result["key_file"] == ""
    assert not key_file.exists()


def test_private_users_auto_and_bad_value(tmp_path):
    failed, result = run_main(vllm_endpoint.main, args(tmp_path / "k", host="127.0.0.1", virtualization_type="docker",
                                                       virtualization_role="guest"))
    assert not failed and result["private_users"]["enabled"] is False
    failed, result = run_main(vllm_endpoint.main, args(tmp_path / "k", host="127.0.0.1", private_users="maybe"))
    assert failed and "vllm_private_users" in result["msg"]


def test_diff_shows_the_key_file_never_the_key(tmp_path):
    key_file = tmp_path / "smollm2.api-key"
    failed, result = run_main(vllm_endpoint.main, args(key_file), check_mode=True, diff=True)
    assert not failed and result["diff"] == {
        "before": {"path": str(key_file), "state": "absent"},
        "after": {"path": str(key_file), "state": "file", "mode": "0600", "content": "a new random key (not shown)"}}
    failed, result = run_main(vllm_endpoint.main, args(key_file), diff=True)
    assert not failed and result["changed"] and result["api_key"] not in repr(result["diff"])
    key_file.chmod(0o644)
    failed, result = run_main(vllm_endpoint.main, args(key_file), diff=True)
    assert (result["diff"]["before"]["mode"], result["diff"]["after"]["mode"]) == ("0644", "0600")
    assert result["api_key"] not in repr(result["diff"])
    failed, result = run_main(vllm_endpoint.main, args(key_file), diff=True)
    assert not result["changed"] and "diff" not in result


def test_route_guard_follows_the_key(tmp_path):
    """An instance with a key gets the route guard in its engine config; without a key it does not."""
    for overrides, enabled in (({}, True), ({"api_key": "users-key", "host": "127.0.0.1"}, True),
                               ({"host": "127.0.0.1"}, False), ({"allow_unauthenticated": True}, False)):
        failed, result = run_main(vllm_endpoint.main, args(tmp_path / "k", metrics_sources=["10.0.0.9"], **overrides))
        assert not failed and result["route_guard"]["enabled"] is enabled
        assert result["engine_config"]["host"] == overrides.get("host", "0.0.0.0")
        assert ("middleware" in result["engine_config"]) is enabled
        if enabled:
            assert result["engine_config"]["middleware"] == "kunpeng_vllm_route_guard.RouteGuard"
            assert result["route_guard"]["environment"] == {"KUNPENG_VLLM_METRICS_SOURCES": "10.0.0.9"}


def test_a_middleware_of_the_users_is_refused_with_a_key(tmp_path):
    config = {"host": "0.0.0.0", "port": 8000, "middleware": "my.Middleware"}
    failed, result = run_main(vllm_endpoint.main, args(tmp_path / "k", engine_config=config, api_key="users-key"))
    assert failed and "middleware" in result["msg"]


def _run_for_real(tmp_path, module_args):
    """The module as a process with AnsibleModule's own exit path (no patched exit_json): what Ansible receives,
    after it has masked the values of no_log options."""
    import subprocess
    import sys

    import conftest

    args_file = tmp_path / "args.json"
    args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": module_args}))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([conftest._tree, os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-m", "ansible_collections.kunpeng.vllm.plugins.modules.vllm_endpoint",
                          str(args_file)], capture_output=True, text=True, env=env, cwd=str(tmp_path), check=False)
    return json.loads(out.stdout)


def test_a_given_key_comes_back_as_itself_not_as_the_no_log_placeholder(tmp_path):
    """The role writes the returned key into the service environment: masked, the service would run with the
    placeholder as its key (every client with the real key refused)."""
    result = _run_for_real(tmp_path, args(tmp_path / "k", api_key="demo-key-change-me"))
    assert result["api_key_source"] == "given"
    assert result["api_key"] == "demo-key-change-me"
    # The key is in the result once, as api_key. ansible-core up to 2.20 also echoes the module's arguments
    # (``invocation``), masked; 2.21 leaves them out of a module run this way.
    assert json.dumps(result).count("demo-key-change-me") == 1
    if "invocation" in result:
        assert result["invocation"]["module_args"]["api_key"] == "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"


def test_a_generated_key_comes_back_for_real_too(tmp_path):
    result = _run_for_real(tmp_path, args(tmp_path / "k"))
    assert result["api_key_source"] == "generate" and len(result["api_key"]) >= 40
    assert json.dumps(result).count(result["api_key"]) == 1
    if "invocation" in result:
        assert result["invocation"]["module_args"]["api_key"] == ""
