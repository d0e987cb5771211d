#!/usr/bin/env bash
# Build the optional scientific Python runtime (`make science`): the pinned packages of
# codeloop/sandbox/languages/python/science.txt, for the system Python the sandbox runs
# (/usr/bin/python3), in $CODELOOP_SCIENCE (default /opt/codeloop-science)/pythonX.Y.
# Every sandbox binds that folder read-only and the box's Python puts it on sys.path
# after the standard library (docs/SERVICE.md, "Libraries in the box").
#
# usage: [CODELOOP_SCIENCE=/folder] scripts/setup_science.sh
#
# Idempotent: nothing is done while the folder's stamp holds science.txt's hash. A new
# set is built beside the old one and moved into place whole, so a sandbox never sees a
# half-installed runtime.
set -euo pipefail
cd "$(dirname "$0")/.."

requirements=codeloop/sandbox/languages/python/science.txt
root=${CODELOOP_SCIENCE:-/opt/codeloop-science}
python=/usr/bin/python3
[[ -x $python ]] || { echo "science: $python is missing (apt-get install python3)" >&2; exit 1; }
version=$("$python" -S -E -c 'import sys; print("%d.%d" % sys.version_info[:2])')
target=$root/python$version
stamp=$target/.codeloop-science
want=$(sha256sum "$requirements" | cut -d' ' -f1)
if [[ -f $stamp && $(cat "$stamp") == "$want" ]]; then
    echo "science: the runtime for Python $version is up to date in $target"
    exit 0
fi

# pip: the project's virtual environment's, else the system's. Wheels only, for the box's
# Python version and ABI whatever Python runs pip, and no dependency resolution:
# science.txt pins the whole set.
if [[ -x .venv/bin/python ]]; then
    pip=(.venv/bin/python -m pip)
elif "$python" -m pip --version >/dev/null 2>&1; then
    pip=("$python" -m pip)
else
    echo "science: no pip found; run 'make setup-test' first (or apt-get install python3-pip)" >&2
    exit 1
fi

mkdir -p "$root"
chmod 755 "$root"
# The sandbox's unprivileged uids must reach the folder: every parent must let them pass.
folder=$(realpath "$root")
while [[ $folder != / ]]; do
    if [[ $(stat -c %A "$folder") != ?????????[xt]* ]]; then  # others may search it
        echo "science: $folder is not searchable by other users; the sandbox could not" \
            "read $root (choose another CODELOOP_SCIENCE)" >&2
        exit 1
    fi
    folder=$(dirname "$folder")
done

abi=cp${version/./}
build=$(mktemp -d "$root/.build-XXXXXX")
trap 'rm -rf "$build"' EXIT
echo "science: installing $(grep -c '==' "$requirements") pinned packages for Python $version into $target"
"${pip[@]}" install -q --disable-pip-version-check --no-deps --only-binary=:all: \
    --target "$build/python$version" --python-version "$version" --implementation cp \
    --abi "$abi" --abi abi3 --abi none -r "$requirements"
echo "$want" >"$build/python$version/.codeloop-science"
chmod -R a+rX,go-w "$build"
if [[ -d $target ]]; then
    mv "$target" "$build/old"
fi
mv "$build/python$version" "$target"
echo "science: done ($(du -sh "$target" | cut -f1) in $target)"
