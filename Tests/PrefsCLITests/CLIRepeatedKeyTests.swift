#if os(macOS) || os(Linux)
    import Foundation
    import PrefsTestSupport
    import Testing

    /// Issue "`prefs` reads and writes plist text exactly as macOS does", item 6: a binary plist
    /// whose dictionary names a key twice keeps the last value, as Apple's CoreFoundation and
    /// Python's `plistlib` do (swift-corelibs-foundation on Linux keeps the first).
    @Suite struct CLIRepeatedKeyTests {
        /// `{ k = 1; k = 2; inner = { j = 3; j = 4; }; }` as a binary plist, written by hand since
        /// no writer repeats a key: one-byte offsets and object references.
        static let repeatedKeys: Data = {
            let objects: [[UInt8]] = [
                [0xD3, 1, 1, 4, 2, 3, 5],  // the top dictionary: keys k, k, inner; values 1, 2, object 5
                [0x51, UInt8(ascii: "k")],
                [0x10, 1],
                [0x10, 2],
                [0x55] + Array("inner".utf8),
                [0xD2, 6, 6, 7, 8],  // the inner dictionary: keys j, j; values 3, 4
                [0x51, UInt8(ascii: "j")],
                [0x10, 3],
                [0x10, 4],
            ]
            var bytes = Array("bplist00".utf8)
            var offsets: [UInt8] = []
            for object in objects {
                offsets.append(UInt8(bytes.count))
                bytes += object
            }
            let tableOffset = UInt64(bytes.count)
            bytes += offsets
            func bigEndian(_ value: UInt64) -> [UInt8] {
                (0..<8).reversed().map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) }
            }
            bytes +=
                [0, 0, 0, 0, 0, 0, 1, 1] + bigEndian(UInt64(objects.count)) + bigEndian(0)
                + bigEndian(tableOffset)
            return Data(bytes)
        }()

        @Test func theLastOfARepeatedKeyIsKept() throws {
            let cli = try CLI()
            defer { cli.remove() }
            let file = cli.home.appendingPathComponent("repeated.plist")
            try Self.repeatedKeys.write(to: file)
            let imported = try cli.run("import", "d", file.path)
            #expect(imported.status == 0, "\(imported.stderr)")
            #expect(try cli.run("read", "d", "k").stdout == "2")
            #expect(try cli.run("--json", "read", "d", "inner").stdout == "{\n  \"j\": 4\n}")
        }
    }
#endif
