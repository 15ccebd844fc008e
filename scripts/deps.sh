# Sourced by scripts/test.sh, scripts/bench.sh and scripts/microbench.sh:
# installs the Debian packages leasewheel needs, if any is missing.
# apt-get update runs once, and only when something has to be installed.
# sudo when not root.

# What building and installing the library needs: the README's install
# line names each (tests/configure_checks.sh checks it).
LW_LIBRARY_PACKAGES="gcc meson ninja-build pkg-config libev-dev libhiredis-dev uthash-dev \
libssl-dev cmake"
# And the tests, the tools' checks, the benchmarks, the fuzzers (faketime:
# its libfaketime moves a contender's wall clock in test_time_faults).
LW_PACKAGES="$LW_LIBRARY_PACKAGES g++ python3 libcriterion-dev libbenchmark-dev \
redis-server gnuplot-nox clang libclang-rt-14-dev clang-format openssl \
python3-prometheus-client mandoc faketime"

lw_install_deps() {
    local missing="" pkg sudo=""

    for pkg in $LW_PACKAGES; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" ||
            missing="$missing $pkg"
    done
    [ -z "$missing" ] && return 0
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null || { echo "need root or sudo to install:$missing" >&2; return 1; }
        sudo="sudo"
    fi
    echo "installing:$missing" >&2
    $sudo apt-get update -qq &&
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing >&2
}

# lw_configure DIR [meson options...]: set up DIR once, reconfigure if it exists.
lw_configure() {
    local dir=$1
    shift
    if [ -f "$dir/build.ninja" ]; then
        meson configure "$dir" "$@" >/dev/null
    else
        meson setup "$dir" "$@" >/dev/null
    fi
}

# lw_build_release: what is missing installed, build/release configured
# (optimised, no tests) and built.
lw_build_release() {
    lw_install_deps
    lw_configure build/release --buildtype=release -Dtests=false
    ninja -C build/release >/dev/null
}
