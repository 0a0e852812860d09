#!/usr/bin/env bash
# Sets everything up from nothing, idempotently: the Python environment, a Docker engine, the images.
# Both README commands start with it; a second run reuses what is there.
set -euo pipefail
cd "$(dirname "$0")"
python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
stamp=.venv/.testbed-installed
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  # uv installs what pip would, resolving and unpacking in parallel: 42 s with pip against a few seconds from a
  # warm cache on 2 cores, where CI's budget is minutes. Its output goes to a log shown only when it fails.
  log=.venv/install.log
  echo "installing the Python dependencies (log: $log)"
  if ! { .venv/bin/pip install --disable-pip-version-check --root-user-action=ignore --quiet uv &&
         .venv/bin/uv pip install --python .venv/bin/python --upgrade pip -e '.[dev]'; } >"$log" 2>&1; then
    tail -n 40 "$log" >&2
    echo "setup.sh: installing the Python dependencies failed; the whole log is $log" >&2
    exit 1
  fi
  echo "$want" >"$stamp"
fi
.venv/bin/testbed setup "$@"
