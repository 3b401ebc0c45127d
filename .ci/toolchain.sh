# Sourced by .ci's shell scripts and Fuzz/run: which program each step starts, found by where it
# belongs rather than by PATH order (Debian's `plutil` from GNUstep, LLVM 14's `llvm-symbolizer`,
# a pyenv `python3` without PyYAML all shadow the ones meant when they come first).
#
# The Swift toolchain is the folder of the `swift` on PATH, its links followed (on macOS, the one
# `xcrun` names); its own tools are called by full path from there. Debian's programs are called
# by the path their package installs them at. `toolchain_tool NAME` prints the path of one of the
# toolchain's tools, failing when it is not there.

if ! swift_on_path=$(command -v swift); then
    echo "swift is not on PATH: CI needs the Swift 6 toolchain (for example in /opt/swift/usr/bin)" >&2
    exit 1
fi
if [[ "$(uname)" == Darwin ]]; then
    toolchain=$(dirname "$(xcrun --find swift)")
else
    toolchain=$(dirname "$(readlink -f "$swift_on_path")")
fi
swift="$toolchain/swift"
# Debian's python3, for which .ci/run installs python3-yaml (on macOS, the system's).
python=/usr/bin/python3

toolchain_tool() {
    if [[ ! -x "$toolchain/$1" ]]; then
        echo "$1 is not in the Swift toolchain at $toolchain (found from $swift_on_path)" >&2
        return 1
    fi
    echo "$toolchain/$1"
}
