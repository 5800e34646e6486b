#!/bin/sh
# The mem0 adapter (docs/adapters.md): its virtualenv's Python on adapter.py.
# `make mem0` creates the virtualenv. Telemetry off before mem0 is imported.
here=$(cd "$(dirname "$0")" && pwd)
py="$here/.venv/bin/python"
if [ ! -x "$py" ]; then
  echo "mem0 adapter: $py is missing: run \`make mem0\`" >&2
  exit 2
fi
export MEM0_TELEMETRY=False
exec "$py" "$here/adapter.py"
