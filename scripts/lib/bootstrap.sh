# Shared set-up for scripts/serve and scripts/test: install what is missing, idempotently.
# Sourced, not executed. Usage: ensure_system_packages [test]; ensure_venv EXTRAS

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="${MYSQL_ROLLBACK_VENV:-$ROOT/.venv}"
PYTHON_BIN="${PYTHON:-python3}"

_sudo() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

_apt_updated=0
_apt_install() {
    if [ "$_apt_updated" -eq 0 ]; then
        echo "mysql-rollback: apt-get update" >&2
        _sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
        _apt_updated=1
    fi
    echo "mysql-rollback: installing $*" >&2
    # policy-rc.d style: never start the system MariaDB service as a side effect.
    _sudo env DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 apt-get install -y -qq --no-install-recommends "$@" >&2
}

ensure_java() {
    command -v java >/dev/null 2>&1 || _apt_install default-jre-headless
}

# The compiled core (rollback/_speedups.pyx) is built by pip: a C compiler and the headers of the
# Python that builds it.
ensure_build_tools() {
    local packages=()
    command -v gcc >/dev/null 2>&1 || packages+=(gcc libc6-dev)
    if ! "$PYTHON_BIN" -c 'import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))'; then
        packages+=(python3-dev)
    fi
    if [ "${#packages[@]}" -gt 0 ]; then
        _apt_install "${packages[@]}"
    fi
}

ensure_test_packages() {
    ensure_java
    if ! command -v mariadbd >/dev/null 2>&1 && [ ! -x /usr/sbin/mariadbd ]; then
        _apt_install mariadb-server mariadb-client
    fi
    # The doc-tests run the documents' commands, which use curl and jq (tests/server/test_docs_commands.py).
    local tools=()
    command -v curl >/dev/null 2>&1 || tools+=(curl)
    command -v jq >/dev/null 2>&1 || tools+=(jq)
    if [ "${#tools[@]}" -gt 0 ]; then
        _apt_install "${tools[@]}"
    fi
    if [ -d "$ROOT/tests/browser" ]; then
        # Debian's Chromium for Playwright (never a downloaded browser), and a font: without
        # recommends, nothing else brings one, and pages would render without text.
        local browser_packages=()
        [ -x /usr/bin/chromium ] || browser_packages+=(chromium)
        dpkg -s fonts-dejavu-core >/dev/null 2>&1 || browser_packages+=(fonts-dejavu-core)
        if [ "${#browser_packages[@]}" -gt 0 ]; then
            _apt_install "${browser_packages[@]}"
        fi
    fi
}

# Whether an install stamp (.installed-EXTRAS) names every extra asked for: the test install
# (test,bench) serves `scripts/serve` too, without a second build of the compiled core.
_stamp_covers() {
    local have="${1##*/.installed-}" extra
    [ "$have" = base ] && have=""
    for extra in ${2//,/ }; do
        [[ ",$have," == *",$extra,"* ]] || return 1
    done
}

# Whether the install a stamp records is newer than every build input of the package.
_stamp_fresh() {
    local input
    for input in "$ROOT/pyproject.toml" "$ROOT/setup.py" "$ROOT"/rollback/*.pyx; do
        [ "$input" -nt "$1" ] && return 1
    done
    return 0
}

ensure_venv() {
    local extras="$1"
    local stamp="$VENV/.installed-${extras:-base}"
    if [ ! -x "$VENV/bin/python" ]; then
        echo "mysql-rollback: creating virtualenv $VENV" >&2
        "$PYTHON_BIN" -m venv "$VENV"
    fi
    # Reinstall only when no install with these extras (or more) is newer than the package's build
    # inputs, or the compiled core is missing (pip install -e builds it into rollback/).
    local stale=1 found
    for found in "$VENV"/.installed-*; do
        if [ -f "$found" ] && _stamp_covers "$found" "$extras" && _stamp_fresh "$found"; then
            stale=0
            break
        fi
    done
    compgen -G "$ROOT/rollback/_speedups.*.so" >/dev/null || stale=1
    if [ "$stale" -eq 1 ]; then
        ensure_build_tools
        echo "mysql-rollback: installing the package [$extras] into $VENV" >&2
        local target="$ROOT"
        [ -n "$extras" ] && target="$ROOT[$extras]"
        "$VENV/bin/python" -m pip install -q --disable-pip-version-check -e "$target" >&2
        touch "$stamp"
    fi
}
