import Foundation

/// Where the bytes of a secret are found in files: every file under a folder (links not
/// followed), searched whole.
enum SecretFiles {
    /// The paths of the files under `folder` that hold `secret`'s UTF-8 bytes anywhere.
    static func holding(_ secret: String, under folder: URL) -> [String] {
        let needle = Data(secret.utf8)
        var found: [String] = []
        let files = FileManager.default.enumerator(
            at: folder, includingPropertiesForKeys: [.isRegularFileKey])
        while let url = files?.nextObject() as? URL {
            guard (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true,
                let contents = try? Data(contentsOf: url)
            else { continue }
            if contents.range(of: needle) != nil { found.append(url.lastPathComponent) }
        }
        return found.sorted()
    }
}
