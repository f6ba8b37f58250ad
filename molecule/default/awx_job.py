"""Run playbooks/site.yml against the converged container the way an AWX job
template runs it: through the ansible_runner library, with its
private_data_dir layout, the collection installed from its built tarball, and
the extra variables AWX makes of answers to docs/awx-surveys/site.json.

    python molecule/default/awx_job.py    (side_effect.yml runs it; Molecule's env)

private_data_dir (under $MOLECULE_EPHEMERAL_DIRECTORY/awx-job):
  project/       the project checkout (the collection's source tree)
  inventory/     hosts.yml (the container, docker connection) and the demo
                 inventory's group_vars (what stays in the inventory in AWX)
  env/extravars  the survey answers, as AWX hands them over
  env/envvars    ANSIBLE_COLLECTIONS_PATH of the installed collection
  collections/   kunpeng.vllm installed from the tarball, as in an EE
The result (status, rc, stats) goes to $MOLECULE_EPHEMERAL_DIRECTORY/awx-job.json
and the job's output to awx-job.out, for tests/test_awx_job.py.
"""

import json
import os
import shutil
import subprocess
import sys

import ansible_runner
import yaml

PROJECT = os.environ["MOLECULE_PROJECT_DIRECTORY"]
EPHEMERAL = os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]
HOST = "kv-default-amd64"
SOURCE_IGNORE = shutil.ignore_patterns(".git", ".build", ".cache", ".venv", ".ansible", "molecule", "tests", "reports")

sys.path.insert(0, os.path.join(PROJECT, "scripts"))
import awx_survey  # noqa: E402

# The operator's answers to the site survey for the demo deployment, under the
# survey's names (survey_<variable>, which site.yml maps onto the role
# variables); the other questions are left unanswered, so AWX sends nothing
# for them and the inventory's group_vars (else the role defaults) apply.
# Values the survey cannot carry (engine arguments, wheelhouse, CA
# certificates) stay in the inventory's group_vars.
ANSWERS = {awx_survey.survey_variable(variable): answer for variable, answer in {
    "vllm_model_name": "smollm2",
    "vllm_backend": "cpu",
    "vllm_model_source": "controller",
    "vllm_model_src": os.path.join(PROJECT, ".cache", "models", "SmolLM2-135M-Instruct"),
    "vllm_api_key": "demo-key-change-me",
    "vllm_port": "8000",
    "vllm_cpu_kvcache_space_gib": "1",
    "vllm_ready_expect": "Paris",
}.items()}


def _bin(name):
    return os.path.join(os.path.dirname(sys.executable), name)


def _write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(data)


def prepare(pdd):
    """Lay out private_data_dir; returns the installed collection's version."""
    shutil.rmtree(pdd, ignore_errors=True)
    shutil.copytree(PROJECT, os.path.join(pdd, "project"), ignore=SOURCE_IGNORE)
    dist = os.path.join(pdd, "dist")
    subprocess.run([_bin("ansible-galaxy"), "collection", "build", "--output-path", dist, PROJECT],
                   check=True, stdout=subprocess.DEVNULL)
    (tarball,) = [os.path.join(dist, n) for n in os.listdir(dist)]
    # --no-deps: community.docker / community.general come with the EE's
    # ansible package, as they do with this venv's.
    # --force: the checkout is already on the controller's collection path.
    subprocess.run([_bin("ansible-galaxy"), "collection", "install", "--no-deps", "--force", "-p",
                    os.path.join(pdd, "collections"), tarball], check=True, stdout=subprocess.DEVNULL)
    shutil.copytree(os.path.join(PROJECT, "inventories", "demo", "group_vars"), os.path.join(pdd, "inventory", "group_vars"))
    hosts = {"all": {"children": {"vllm_cpu": {"hosts": {HOST: {
        "ansible_connection": "community.docker.docker",
        "ansible_python_interpreter": "/usr/bin/python3",
    }}}}}}
    _write(os.path.join(pdd, "inventory", "hosts.yml"), yaml.safe_dump(hosts))
    with open(os.path.join(PROJECT, "docs", "awx-surveys", "site.json")) as f:
        survey = json.load(f)
    _write(os.path.join(pdd, "env", "extravars"), json.dumps(awx_survey.answers(survey, ANSWERS), indent=2))
    _write(os.path.join(pdd, "env", "envvars"), yaml.safe_dump({
        "ANSIBLE_COLLECTIONS_PATH": os.path.join(pdd, "collections"),
        "ANSIBLE_NOCOLOR": "1",
        "KV_PROJECT_DIR": PROJECT,
    }))
    manifest = os.path.join(pdd, "collections", "ansible_collections", "kunpeng", "vllm", "MANIFEST.json")
    with open(manifest) as f:
        return json.load(f)["collection_info"]["version"]


def main():
    pdd = os.path.join(EPHEMERAL, "awx-job")
    version = prepare(pdd)
    # A job sees AWX's settings, not Molecule's ansible.cfg or collection path.
    for key in [k for k in os.environ if k.startswith(("ANSIBLE_", "MOLECULE_"))]:
        del os.environ[key]
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    runner = ansible_runner.run(private_data_dir=pdd, playbook="playbooks/site.yml", quiet=True)
    with open(runner.stdout.name) as f:
        _write(os.path.join(EPHEMERAL, "awx-job.out"), f.read())
    result = {"status": runner.status, "rc": runner.rc, "stats": runner.stats, "collection_version": version,
              "collections_path": runner.config.env.get("ANSIBLE_COLLECTIONS_PATH"), "private_data_dir": pdd,
              "extravars": sorted(json.load(open(os.path.join(pdd, "env", "extravars"))))}
    _write(os.path.join(EPHEMERAL, "awx-job.json"), json.dumps(result, indent=2))
    print(f"ansible-runner: status {runner.status}, rc {runner.rc}, stats {runner.stats}")
    return 0 if runner.status == "successful" else 1


if __name__ == "__main__":
    sys.exit(main())
