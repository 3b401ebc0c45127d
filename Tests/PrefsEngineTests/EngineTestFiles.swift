import Foundation
import PrefsTestSupport

/// Files for the engine's tests, in a folder of this test process's own.
enum EngineTestFiles {
    /// The repository's root folder (the one holding `Package.swift`).
    static let repository: URL = {
        var folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while folder.path != "/"
            && !FileManager.default.fileExists(atPath: folder.appendingPathComponent("Package.swift").path)
        {
            folder.deleteLastPathComponent()
        }
        return folder
    }()

    /// The folder this process's files go in, made on first use.
    static let folder: URL = {
        ScratchFolder.make("engine-tests")
    }()

    /// A path no other test uses.
    static func uniquePath(_ name: String = "engine") -> String {
        folder.appendingPathComponent("\(name)-\(UUID().uuidString)").path
    }
}
