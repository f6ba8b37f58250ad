"""One model served by two hosts: vLLM's native data parallelism across the members of kv_cluster.

Tests run in file order; the kill test is last because it restarts the members.
"""

import hashlib
import json
import re
import time
import urllib.error
import urllib.request

from conftest import API_KEY, HEAD, MODEL, RAY, RAY_AS_MEMBER, RAY_TOKEN, RAY_UNIT, UNIT, WORKER, address


def _request(url, body=None, timeout=60):
    """(status, text) of a GET (or a POST of ``body``); (0, reason) when nothing answers."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, headers={"Authorization": f"Bearer {API_KEY}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except OSError as exc:
        return 0, str(exc)


def _complete(base_url, prompt="The capital of France is", max_tokens=4):
    return _request(base_url + "/v1/completions", {"model": MODEL, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0})


def _served_by_engine(base_url):
    """engine label -> requests finished, from the head's /metrics."""
    status, text = _request(base_url + "/metrics")
    assert status == 200, text[:300]
    served = {}
    for line in text.splitlines():
        if line.startswith("vllm:request_success_total{"):
            engine = re.search(r'engine="(\d+)"', line).group(1)
            served[engine] = served.get(engine, 0) + float(line.rsplit(" ", 1)[1])
    return served


def test_head_runs_the_api_and_the_worker_runs_headless(head, worker):
    for member in (head, worker):
        assert member.service(UNIT).is_running and member.service(UNIT).is_enabled
    head_config = head.file(f"/etc/vllm/{MODEL}.yaml").content_string
    worker_config = worker.file(f"/etc/vllm/{MODEL}.yaml").content_string
    assert "data-parallel-size: 2" in head_config and "data-parallel-size-local: 1" in head_config
    assert f"data-parallel-address: {address(HEAD)}" in head_config and "headless" not in head_config
    assert "headless: true" in worker_config and "data-parallel-start-rank: 1" in worker_config
    assert f"data-parallel-address: {address(HEAD)}" in worker_config


def test_each_member_announces_its_own_address(head, worker):
    for member, name in ((head, HEAD), (worker, WORKER)):
        env = member.check_output(f"cat /etc/vllm/{MODEL}.env")
        assert f"VLLM_HOST_IP={address(name)}" in env
        assert "GLOO_SOCKET_IFNAME=eth0" in env


def test_both_engines_serve_requests_behind_the_head(base_url):
    before = _served_by_engine(base_url)
    for n in range(8):
        status, text = _complete(base_url, f"Count to {n}:")
        assert status == 200, text[:300]
    after = _served_by_engine(base_url)
    assert sorted(after) == ["0", "1"], after
    for engine in ("0", "1"):
        assert after[engine] > before.get(engine, 0), (before, after)


def test_ray_cluster_lists_both_members_with_their_cpus(head, worker):
    """Ray (from the shared engine image) forms one cluster beside the engines: the head's `ray status` lists both nodes."""
    for member in (head, worker):
        assert member.service(RAY_UNIT).is_running and member.service(RAY_UNIT).is_enabled
    cpus = {name: int(member.check_output("nproc --all")) for name, member in ((HEAD, head), (WORKER, worker))}
    deadline = time.monotonic() + 60
    while True:
        status = head.check_output(f"{RAY_AS_MEMBER} status -v --address {address(HEAD)}:6379")
        active = status.split("Active:", 1)[1].split("Pending:", 1)[0]
        if len(re.findall(r"node_[0-9a-f]+", active)) == 2 or time.monotonic() > deadline:
            break
        time.sleep(3)
    assert len(re.findall(r"node_[0-9a-f]+", active)) == 2, status
    total = re.search(r"Total Usage:\s*\n\s*[0-9.]+/([0-9.]+) CPU", status)
    assert total and float(total.group(1)) == sum(cpus.values()), status
    per_node = [float(n) for n in re.findall(r"Usage:\s*\n\s*[0-9.]+/([0-9.]+) CPU", status.split("Total Usage:", 1)[1])]
    assert sorted(per_node) == sorted(float(n) for n in cpus.values()), status
    # the worker joined the head from its own address on the cluster network
    joined = worker.check_output(f"journalctl -u {RAY_UNIT} -o cat --no-pager | grep 'Local node IP' | tail -n 1")
    assert re.sub(r"\x1b\[[0-9;]*m", "", joined).endswith(f"Local node IP: {address(WORKER)}"), joined


def test_ray_lives_in_a_virtualenv_of_its_own_never_in_the_release_s_shared_one(head, worker):
    """Issue 37: Ray was pip-installed after the fact into <install_dir>/<version>-cpu, which every instance of the
    release shares.  The plan now installs it with vLLM into a virtualenv named for that set (the engine image holds
    both, as the role would have made them), and the shared one has no Ray."""
    for member in (head, worker):
        link = member.file("/opt/vllm/current-smollm2").linked_to
        assert re.fullmatch(r"/opt/vllm/0\.32\.0-cpu-x[0-9a-f]{10}", link), link
        assert member.run(f"{link}/bin/python -c 'import ray; print(ray.__version__)'").stdout.strip() == "2.60.0"
        shared = member.run("/opt/vllm/0.32.0-cpu/bin/python -c 'import ray'")
        assert shared.rc != 0 and "No module named 'ray'" in shared.stderr
        # the Ray unit runs that virtualenv's ray, through the instance's link
        assert f"ExecStart={RAY} " in member.file(f"/etc/systemd/system/{RAY_UNIT}").content_string


def test_ray_keeps_its_session_in_the_short_ray_tmpdir(head, worker):
    """RAY_TMPDIR is <cache>/ray-<first 8 hex digits of sha256(instance)>: below <cache>/<instance>/tmp Ray's socket
    paths took 88 bytes plus the instance name, over the 107-byte AF_UNIX limit from a 20-character name on."""
    ray_tmpdir = f"/var/cache/vllm/ray-{hashlib.sha256(MODEL.encode()).hexdigest()[:8]}"
    for member in (head, worker):
        assert f"RAY_TMPDIR={ray_tmpdir}\n" in member.file(f"/etc/vllm/{MODEL}.env").content_string
        assert member.file(f"{ray_tmpdir}/ray/session_latest/sockets").is_directory
        assert member.file(ray_tmpdir).user == "vllm"


def test_both_members_hold_the_one_cluster_token_for_the_service_user_only(head, worker):
    tokens = []
    for member in (head, worker):
        token = member.file(RAY_TOKEN)
        assert token.is_file and token.mode == 0o600 and token.user == "vllm", (token.mode, token.user)
        tokens.append(token.content_string)
        # handed to Ray by path in the unit's environment, never on a command line
        unit = member.check_output(f"systemctl cat {RAY_UNIT}")
        assert f"RAY_AUTH_TOKEN_PATH={RAY_TOKEN}" in unit and "RAY_AUTH_MODE=token" in unit
        assert token.content_string.strip() not in unit
        argv = member.check_output("cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' ' || true")
        assert token.content_string.strip() not in argv
    assert tokens[0] == tokens[1] and len(tokens[0].strip()) >= 32


# A Ray client from the worker's container, where Ray is installed, with no
# credential of the members (a fresh HOME: no ~/.ray/auth_token): as Ray's
# default client (no authentication), and presenting a wrong token.  Each is
# bounded (timeout), and must not get the cluster's status.
def _ray_status_without_the_token(member, auth):
    return member.run(f"timeout 120 env -i PATH=/usr/bin:/bin HOME=$(mktemp -d) {auth} {RAY} status --address {address(HEAD)}:6379")


def test_a_ray_client_without_the_token_is_refused(head, worker):
    """Issue 29: on the converged scenario a container without any credential ran `ray status` against the head and
    joined with `ray start`.  The members form the cluster with the token (test above); a client without it is refused."""
    for auth in ("", "RAY_AUTH_MODE=token RAY_AUTH_TOKEN=not-the-cluster-token"):
        result = _ray_status_without_the_token(worker, auth)
        assert result.rc != 0, f"{auth or 'no authentication'}: rc 0\n{result.stdout[-2000:]}"
        assert not re.search(r"node_[0-9a-f]+", result.stdout), result.stdout[-2000:]
    # the same client with the token file gets the status: the refusal is the token's doing, not the network's
    allowed = worker.run(f"timeout 120 env -i PATH=/usr/bin:/bin HOME=$(mktemp -d) RAY_AUTH_MODE=token "
                         f"RAY_AUTH_TOKEN_PATH={RAY_TOKEN} {RAY} status --address {address(HEAD)}:6379")
    assert allowed.rc == 0 and re.search(r"node_[0-9a-f]+", allowed.stdout), allowed.stdout[-2000:] + allowed.stderr[-2000:]


def _both_engines_answer(base_url, before):
    """Requests complete and both engines' counters rise (a request routed to a lost engine hangs: short timeout)."""
    for n in range(6):
        status, dummy = _request(base_url + "/v1/completions", {"model": MODEL, "prompt": f"Say {n}", "max_tokens": 2}, timeout=20)
        if status != 200:
            return False
    after = _served_by_engine(base_url)
    return all(after.get(engine, 0) > before.get(engine, 0) for engine in ("0", "1"))


def test_killed_worker_comes_back_and_the_group_serves_again(head, worker, base_url, record_property):
    """systemd restarts a killed worker; vLLM 0.32's head does not take a restarted --headless engine back
    (requests routed to it hang, the head logs nothing), so the head is restarted too and the members form
    the group again.  The figures are printed (pytest -s) and recorded as properties."""
    restarts = int(worker.check_output(f"systemctl show {UNIT} -p NRestarts --value"))
    started = time.monotonic()
    worker.run_expect([0], f"systemctl kill -s KILL {UNIT}")
    while int(worker.check_output(f"systemctl show {UNIT} -p NRestarts --value")) == restarts:
        assert time.monotonic() - started < 60, "systemd did not restart the killed worker"
        time.sleep(1)
    back = time.monotonic() - started
    assert worker.service(UNIT).is_running
    head.run_expect([0], f"systemctl restart {UNIT}")
    before = _served_by_engine_when_up(base_url, started + 900)
    while not _both_engines_answer(base_url, before):
        assert time.monotonic() - started < 900, "the group did not serve again within 900 s of the worker's kill"
        time.sleep(5)
    answered = time.monotonic() - started
    record_property("worker_restarted_s", round(back, 1))
    record_property("group_serves_again_s", round(answered, 1))
    print(f"worker restarted by systemd {back:.1f} s after the kill; both engines served again after {answered:.1f} s")


def _served_by_engine_when_up(base_url, deadline):
    while time.monotonic() < deadline:
        status, dummy = _request(base_url + "/health", timeout=10)
        if status == 200:
            return _served_by_engine(base_url)
        time.sleep(5)
    raise AssertionError("the head's API did not come back")
