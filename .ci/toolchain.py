"""Which program a check starts, found by where it belongs rather than by PATH order (GNUstep's
`plutil` shadows the toolchain's when /usr/bin comes first).

The Swift toolchain is the folder of the `swift` on PATH, its links followed (on macOS, the one
`xcrun` names); its tools are called by full path from there, and each check says which it used.
"""
import os
import platform
import shutil
import subprocess
import sys


def folder():
    swift = shutil.which("swift")
    if swift is None:
        sys.exit("swift is not on PATH: CI needs the Swift 6 toolchain (for example in /opt/swift/usr/bin)")
    if platform.system() == "Darwin":
        found = subprocess.run(["/usr/bin/xcrun", "--find", "swift"], check=True, capture_output=True, text=True)
        return os.path.dirname(found.stdout.strip())
    return os.path.dirname(os.path.realpath(swift))


def tool(name, say=True):
    """The full path of the toolchain's `name`; printed once when `say`, so a log shows which."""
    path = os.path.join(folder(), name)
    if not os.access(path, os.X_OK):
        sys.exit(f"{name} is not in the Swift toolchain at {folder()}")
    if say and path not in _said:
        _said.add(path)
        print(f"using {path}", file=sys.stderr)
    return path


_said = set()
