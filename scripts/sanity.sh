#!/usr/bin/env bash
# Run `ansible-test sanity` on this checkout.
#
# ansible-test wants the collection at .../ansible_collections/kunpeng/vllm
# inside a git checkout, so the working tree is copied there, into a git
# repository of its own.
# Its per-test virtualenvs are bootstrapped by a get-pip script it downloads
# from a host that is not reachable from air-gapped CI; a stand-in that uses
# the interpreter's own ensurepip and then installs the requested packages
# from the configured package index is seeded into its cache instead.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
venv=${VENV:-$root/.venv}
dest=${SANITY_DEST:-$root/.build/sanity}/ansible_collections/kunpeng/vllm
python_version=${SANITY_PYTHON:-$("$venv/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')}

seed_get_pip() {
  local reqs version cache
  reqs=$("$venv/bin/python" -c 'import ansible_test, os; print(os.path.dirname(ansible_test.__file__))')/_internal/python_requirements.py
  version=$(grep -oE "pip='[0-9.]+'" "$reqs" | head -n1 | grep -oE '[0-9.]+')
  cache=$HOME/.ansible/test/cache/get_pip_${version//./_}.py
  mkdir -p "$(dirname "$cache")"
  cat >"$cache" <<'PY'
"""Offline stand-in for get-pip.py, seeded by kunpeng.vllm's scripts/sanity.sh.

ensurepip installs the bundled pip; the requested packages then come from the
package index pip is configured for.  The environment is captured before
ensurepip runs, because ensurepip points PIP_CONFIG_FILE at /dev/null, which
would drop the site's pip configuration (index, CA bundle).
"""
import ensurepip
import os
import subprocess
import sys

env = dict(os.environ)
ensurepip.bootstrap(upgrade=True)
args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
sys.exit(subprocess.call([sys.executable, "-m", "pip", "install"] + args, env=env))
PY
}

seed_get_pip
# ansible-test keeps its per-test virtualenvs under ~/.ansible/test/venv and
# reuses one for any interpreter of the same version: a venv made from an
# interpreter that is gone since (the .build/python-trixie of a removed
# checkout) is dropped, or every test fails with "Required program ... not found".
for py in "$HOME"/.ansible/test/venv/*/*/*/bin/python; do
  if [ -L "$py" ] && [ ! -e "$py" ]; then rm -rf "${py%/bin/python}"; fi
done
rm -rf "$dest"
mkdir -p "$dest"
# Copy the tree as git sees it (tracked + untracked-not-ignored) into a new
# repository: a copy of .git would be, in a git worktree, a link back to the
# checkout's own index, which `git add` there would rewrite.
(cd "$root" && git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t "$dest" 2>/dev/null) || true
cd "$dest"
git init -q . && git add -A >/dev/null 2>&1 || true
PATH=$venv/bin:$PATH "$venv/bin/ansible-test" sanity --local --python "$python_version" --color no "$@"
