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
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -e '.[dev]'
  echo "$want" >"$stamp"
fi
.venv/bin/testbed setup "$@"
