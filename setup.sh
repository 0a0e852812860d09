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
  # pip warns about things that are fine here (the editable install's .pth file, running as
  # root); their output goes to a log that is shown only when the install fails.
  log=.venv/pip-install.log
  echo "installing the Python dependencies (log: $log)"
  if ! { .venv/bin/pip install --disable-pip-version-check --root-user-action=ignore --upgrade pip &&
         .venv/bin/pip install --disable-pip-version-check --root-user-action=ignore -e '.[dev]'; } >"$log" 2>&1; then
    tail -n 40 "$log" >&2
    echo "setup.sh: pip install failed; the whole log is $log" >&2
    exit 1
  fi
  echo "$want" >"$stamp"
fi
.venv/bin/testbed setup "$@"
