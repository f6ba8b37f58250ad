"""Issue 19's reliability cases, as side_effect.yml (reliability.sh) ran them and converge left the node.

bad:          one site.yml run with one host alias per bad value: each fails
              before any change (changed=0, nothing under the config,
              install, model and cache directories), with a message naming
              its variable.
kill-install: site.yml killed while pip installs the engine: the instance's
              link does not point at the partial virtualenv.
kill-model:   the re-run killed while the model is copied: no partial model
              where the service reads it; the engine it installed is marked
              and linked (the partial one was recreated).
converge:     the next plain run converged with no manual step (and the
              idempotence stage ran it once more with no change).
"""

import os
import re

import pytest

OUT = os.path.join(os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", "/nonexistent"), "reliability")
LINK = "/opt/vllm/current-smollm2"
MODEL = "/var/lib/vllm/models/smollm2"

# host alias (molecule/reliability/inventory/hosts.yml) -> (class, variable the message must name)
BAD = {
    "out_of_range": ("out of range", "vllm_port"),
    "wrong_type": ("wrong type", "vllm_nodes"),
    "engine_option": ("option the release does not have", "vllm_engine_args"),
    "missing_path": ("path that does not exist", "vllm_python"),
    "injection": ("newline into the environment file", "vllm_api_key"),
    "shell_name": ("name with shell characters", "vllm_model_name"),
    "kv_cache_too_big": ("size that does not fit the host", "vllm_cpu_kvcache_space_gib"),
    "model_too_big": ("model that does not fit the disk", "vllm_model_dir"),
}


def _read(name):
    path = os.path.join(OUT, name)
    if not os.path.exists(path):
        pytest.fail(f"{path} is missing: the side_effect step did not run")
    with open(path) as handle:
        return handle.read()


def _recap(output):
    return {host: dict((key, int(value)) for key, value in re.findall(r"(\w+)=(\d+)", counts))
            for host, counts in re.findall(r"^(\S+)\s+: (ok=.*)$", output, re.M)}


def _failure(output, host):
    found = re.findall(r"^fatal: \[" + re.escape(host) + r"\]: FAILED! => (.*)$", output, re.M)
    assert len(found) == 1, f"{host}: {found}"
    return found[0]


def _state(name):
    return dict(line.split(" ", 1) if line.startswith("link") else (line.rsplit(" ", 1)[0], line.rsplit(" ", 1)[1])
                for line in _read(name).splitlines())


@pytest.mark.parametrize("host", sorted(BAD))
def test_bad_value_fails_before_any_change_naming_the_variable(host):
    output = _read("bad.out")
    recap = _recap(output)[host]
    assert recap["failed"] == 1 and recap["changed"] == 0, recap
    assert BAD[host][1] in _failure(output, host)


def test_nothing_was_written_by_the_bad_runs():
    assert _read("bad.rc").strip() != "0"
    assert _read("bad.before") == _read("bad.after") == ""


def test_the_injected_secret_is_not_repeated():
    failure = _failure(_read("bad.out"), "injection")
    assert "VLLM_LOGGING_LEVEL" not in failure and "DEBUG" not in failure


def test_the_install_was_killed_while_pip_ran_and_left_no_link_to_it():
    assert _read("kill-install.when").startswith("pip running: ")
    state = _state("kill-install.state")
    assert state["link"] == "none"
    assert [value for key, value in state.items() if key.startswith("venv ")] == ["unmarked"]


def test_the_copy_was_killed_and_left_no_partial_model_where_the_service_reads_it(host):
    assert _read("kill-model.when").startswith("staging present: ")
    state = _state("kill-model.state")
    assert state[f"model {MODEL}"] == "absent"
    assert state[f"model {MODEL}.partial"] == "unmarked"
    # The re-run recreated the partial virtualenv, completed it and linked it.
    venv = state["link"]
    assert state[f"venv {venv}"] == "marked"
    # ... the unmarked one set aside and removed in full (nothing left behind).
    chunk = _read("kill-model.out").split("TASK [kunpeng.vllm.vllm : Tell a complete engine virtualenv from one an "
                                          "interrupted run left]")[1].split("TASK [")[0]
    assert "changed: [node]" in chunk
    assert "Left behind" not in _read("kill-model.out")
    assert not host.file(f"{venv}.incomplete").exists


def test_the_plain_rerun_converged(host):
    target = host.file(LINK).linked_to
    assert host.file(f"{target}/.kunpeng-vllm-complete").exists
    assert host.file(f"{MODEL}/.kunpeng-model-complete").exists
    assert host.file(f"{MODEL}/config.json").exists
    assert not host.file(f"{MODEL}.partial").exists
    assert host.file("/etc/vllm/smollm2.launch.sh").exists
    assert host.run(f"{LINK}/bin/python -c 'import vllm'").rc == 0
