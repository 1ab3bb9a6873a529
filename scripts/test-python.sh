#!/usr/bin/env bash
# Python tests against the package AS INSTALLED (called by `make test-python` after
# the dev build). Steps:
#   1. a venv over Debian's site-packages (numpy, pandas, matplotlib, pytest, nbclient):
#        /usr/bin/python3 -m venv --system-site-packages $BUILD/venv
#   2. `pip install ./python --no-build-isolation` into it, offline. By default setup.py
#      packages the module the dev build just compiled (GPUPLAN_PREBUILT_CORE), so the
#      extension is not compiled twice; GPUPLAN_PY_FROM_SOURCE=1 makes pip build it
#      from source through CMake instead (Release, in $BUILD/python-wheel, incremental).
#   3. pytest tests/python from a directory outside the source tree, so `import gpuplan`
#      can only find the installed copy (test_install.py checks it), including the
#      notebook run (test_notebook.py executes examples/notebooks/will_it_fit.ipynb).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
py=/usr/bin/python3
build=${GPUPLAN_BUILD_DIR:-$root/build/dev}
venv=$build/venv

if [ ! -x "$venv/bin/python" ]; then
  "$py" -m venv --system-site-packages "$venv"
fi

pip_env=()
if [ "${GPUPLAN_PY_FROM_SOURCE:-0}" = "1" ]; then
  pip_env+=(GPUPLAN_CMAKE_BUILD_DIR="$build/python-wheel")
else
  core=$(ls "$build"/python/gpuplan/_core*.so 2>/dev/null | head -n 1 || true)
  if [ -z "$core" ]; then
    echo "test-python: no _core module in $build/python/gpuplan (build the gpuplan_python target first," \
         "or set GPUPLAN_PY_FROM_SOURCE=1)" >&2
    exit 1
  fi
  pip_env+=(GPUPLAN_PREBUILT_CORE="$core")
fi

# Build artefacts of a previous install must not leak stale files into this one.
rm -rf "$root/python/build" "$root/python/gpuplan.egg-info"
env "${pip_env[@]}" "$venv/bin/python" -m pip install --quiet --no-build-isolation --no-deps --no-index \
  --force-reinstall "$root/python"
rm -rf "$root/python/build" "$root/python/gpuplan.egg-info"

site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
GPUPLAN_EXPECT_INSTALLED="$site" MPLBACKEND=Agg \
  "$venv/bin/python" -m pytest -q -p no:cacheprovider --rootdir "$root/tests/python" "$root/tests/python" "$@"
