// prefs: the macOS `defaults` command for every Prefs store, on Linux too (see PrefsTool).
import Foundation
import PrefsTool

exit(runToolReportingErrors(Array(CommandLine.arguments.dropFirst())))
