#if os(Linux)
    import Foundation

    /// Disk images as a power loss could leave a store's files: for each file, the copy its last
    /// `fsync`/`fdatasync` made durable (recorded by `Tests/PowerLoss/sync_recorder.c`), plus a
    /// random subset of the 4 KiB pages written since, some of them torn at a 512-byte boundary.
    ///
    /// ```swift
    /// let images = PowerLossImages(live: folder, synced: syncedFolder, names: ["p.sqlite", "p.sqlite-prefs"])
    /// try images.make(into: imageFolder, using: &generator)
    /// ```
    struct PowerLossImages {
        /// The folder of the files as the crash left them (every write in the page cache).
        let live: String
        /// The folder of the recorder's synced copies.
        let synced: String
        /// The files' names (the same in both folders and in each image).
        let names: [String]

        static let page = 4096
        static let sector = 512

        /// Writes one image of every file into `folder`; returns how many pages differed from
        /// the synced copies and how many of them the image took.
        @discardableResult
        func make(into folder: String, using generator: inout some RandomNumberGenerator) throws -> (
            differing: Int, taken: Int
        ) {
            var differing = 0
            var taken = 0
            for name in names {
                guard let current = FileManager.default.contents(atPath: live + "/" + name) else { continue }
                let base = FileManager.default.contents(atPath: synced + "/" + name) ?? Data()
                var image = base
                for start in stride(from: 0, to: current.count, by: Self.page) {
                    let end = min(start + Self.page, current.count)
                    let page = current[start..<end]
                    if end <= base.count && base[start..<end] == page { continue }
                    differing += 1
                    guard Bool.random(using: &generator) else { continue }
                    taken += 1
                    // A torn page: only its first sectors reached the medium.
                    let length =
                        Int.random(in: 0..<4, using: &generator) == 0
                        ? min(page.count, Self.sector * Int.random(in: 1...7, using: &generator)) : page.count
                    if image.count < start + length {
                        image.append(Data(count: start + length - image.count))
                    }
                    image.replaceSubrange(start..<start + length, with: page.prefix(length))
                }
                // A file cut short since its last sync may be found either length.
                if current.count < image.count && Bool.random(using: &generator) {
                    image = image.prefix(current.count)
                }
                try image.write(to: URL(fileURLWithPath: folder + "/" + name))
            }
            return (differing, taken)
        }
    }
#endif
