#!/bin/sh
# Called by `make bench` with the path of the release marquee binary: makes bench/.venv with
# matplotlib from PyPI (once), then runs the benchmark. Extra arguments go to bench.py.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
venv="$here/.venv"
if ! "$venv/bin/python" -c 'import matplotlib' 2>/dev/null; then
	echo "bench: making $venv with matplotlib"
	python3 -m venv "$venv"
	"$venv/bin/pip" install --quiet --disable-pip-version-check matplotlib
fi
exec "$venv/bin/python" "$here/bench.py" --marquee "$@"
