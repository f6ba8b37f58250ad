"""The Hugging Face token is in no process's command line while the download runs (issue 29, point 3).

Runs roles/vllm/tasks/model_fetch_huggingface.yml with ansible-playbook on
the controller; `hf` is a stand-in that, while it "downloads", reads
/proc/*/cmdline of every process (Ansible's own `sh -c` included: a task's
``environment:`` is prefixed onto it) and the token file HF_TOKEN_PATH names.
"""

import json
import os
import stat
import sys
import textwrap

from playbook_run import run_playbook

TOKEN = "hf_kvtest" + "Q9zX7" * 4

FAKE_HF = textwrap.dedent('''\
    #!{python}
    import json, os, stat, sys
    token = {token!r}.encode()
    seen = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{{pid}}/cmdline", "rb") as handle:
                    line = handle.read()
            except OSError:
                continue
            if token in line:
                seen.append(line.replace(b"\\0", b" ").decode(errors="replace"))
    path = os.environ.get("HF_TOKEN_PATH", "")
    info = os.stat(path) if path else None
    report = {{"argv_with_token": seen, "token_in_env": any(token in v.encode() for v in os.environ.values()),
              "token_file": path, "file_mode": stat.S_IMODE(info.st_mode) if info else None,
              "file_holds_token": open(path, "rb").read() == token if path else False, "argv": sys.argv}}
    with open({report!r}, "w") as handle:
        json.dump(report, handle)
    os.makedirs(sys.argv[sys.argv.index("--local-dir") + 1], exist_ok=True)
''')


def test_the_token_is_in_a_root_only_file_and_in_no_command_line(collections_path, tmp_path):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    report = tmp_path / "report.json"
    hf = venv / "bin" / "hf"
    hf.write_text(FAKE_HF.format(python=sys.executable, token=TOKEN, report=str(report)))
    hf.chmod(0o755)
    secrets = tmp_path / "secrets.json"  # not -e on the command line: that would be the test's own leak
    secrets.write_text(json.dumps({"vllm_hf_token": TOKEN}))
    proc = run_playbook(collections_path, "vllm_model_token.yml", {
        "fake_venv": str(venv), "staging": str(tmp_path / "m.partial")}, "-e", f"@{secrets}")
    assert proc.returncode == 0, proc.stdout[-3000:]
    found = json.loads(report.read_text())
    assert found["argv_with_token"] == [], found["argv_with_token"]
    assert not found["token_in_env"]
    assert found["file_holds_token"] and found["file_mode"] == 0o600, found
    assert not os.path.exists(found["token_file"]), "the token file outlives the download"
    assert TOKEN not in proc.stdout and TOKEN not in proc.stderr
    assert stat.S_ISDIR(os.stat(tmp_path / "m.partial").st_mode)
