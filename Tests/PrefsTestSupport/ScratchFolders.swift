import Foundation

/// Scratch folders for tests, every one reached through a symbolic link.
///
/// On an Apple device every app container path goes through a link (`/var` is a link to
/// `/private/var`), and on macOS so do the temporary folders; on Linux a dotfile manager links
/// `~/.config`. A store that refuses a linked folder fails there and nowhere in a test that
/// writes to a plain folder, so every test file lives under `<temp>/prefs-tests-<pid>/linked`, a
/// link to the folder beside it. (`.ci/run` refuses a test that makes its own temporary folder.)
///
/// ```swift
/// let folder = ScratchFolder.make("sqlite-tests")        // …/prefs-tests-42/linked/sqlite-tests-<UUID>
/// let path = folder.appendingPathComponent("prefs.sqlite").path
/// ```
public enum ScratchFolder {
    /// This process's linked folder, made on first use.
    public static let root: URL = {
        let files = FileManager.default
        let base = files.temporaryDirectory
            .appendingPathComponent("prefs-tests-\(ProcessInfo.processInfo.processIdentifier)")
        let real = base.appendingPathComponent("real")
        let linked = base.appendingPathComponent("linked")
        do {
            try files.createDirectory(at: real, withIntermediateDirectories: true)
            if (try? files.destinationOfSymbolicLink(atPath: linked.path)) == nil {
                try files.createSymbolicLink(atPath: linked.path, withDestinationPath: "real")
            }
        } catch {
            fatalError("the tests' scratch folder \(linked.path) could not be made: \(error)")
        }
        return linked
    }()

    /// A new folder under ``root`` whose name starts with `name`, made now.
    public static func make(_ name: String) -> URL {
        let folder = root.appendingPathComponent("\(name)-\(UUID().uuidString)")
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        } catch {
            fatalError("the tests' scratch folder \(folder.path) could not be made: \(error)")
        }
        return folder
    }
}
