#if os(macOS) || os(Linux)
    import Foundation
    import Prefs
    import PrefsTestSupport
    import Testing

    /// Issue "Settings that follow the user and the fleet", item 6: the tool shows what a synced
    /// store keeps in a domain — pending writes, last contact or why not, writes that lost.
    @Suite struct CLISyncStatusTests {
        /// A remote that answers every push with a newer write of `theme`, then goes away.
        private final class NewerElsewhere: SyncRemote {
            let reachable = Atomic(true)
            var description: String { "NewerElsewhere" }
            func push(_ entries: [SyncEntry]) throws -> [SyncEntry] {
                guard reachable.value else { throw CocoaError(.fileReadUnknown) }
                return entries.filter { $0.key == "theme" }.map { _ in
                    SyncEntry(
                        key: "theme", value: .string("light"),
                        stamp: SyncStamp(wallMilliseconds: .max >> 2, counter: 0, replica: "elsewhere"))
                }
            }
            func pull(after cursor: PropertyListValue?) throws -> (
                entries: [SyncEntry], cursor: PropertyListValue?
            ) {
                guard reachable.value else { throw CocoaError(.fileReadUnknown) }
                return ([], cursor)
            }
            func observe(_ handler: @escaping @Sendable (SyncRemoteEvent) -> Void) -> StoreObservation {
                StoreObservation {}
            }
        }

        /// A flag shared with the remote.
        final class Atomic: @unchecked Sendable {
            private let lock = NSLock()
            private var stored: Bool
            init(_ value: Bool) { stored = value }
            var value: Bool {
                get { lock.withLock { stored } }
                set { lock.withLock { stored = newValue } }
            }
        }

        @Test func syncStatusShowsPendingWritesTheLastErrorAndWhatLost() throws {
            let cli = try CLI()
            defer { cli.remove() }
            let folder = cli.home.appendingPathComponent("config/prefs")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let path = folder.appendingPathComponent("com.example.app.sqlite").path
            let remote = NewerElsewhere()
            do {
                let store = try SyncedStore(
                    local: try SQLiteStore(path: path), remote: remote,
                    diagnostics: PreferenceDiagnostics { _ in }, automatically: false)
                try store.setValue(.string("dark"), forKey: "theme")
                try store.syncNow()  // theme lost to the newer write
                remote.reachable.value = false
                try store.setValue(.integer(3), forKey: "count")
                #expect(throws: CocoaError.self) { try store.syncNow() }
            }
            let shown = try cli.run("sync-status", "com.example.app")
            #expect(shown.status == 0, "\(shown.stderr)")
            #expect(shown.stdout.contains("2 keys synced"), "\(shown.stdout)")
            #expect(shown.stdout.contains("pending: count"))
            #expect(shown.stdout.contains("last contact: 20"), "the first sync answered")
            #expect(shown.stdout.contains("last error:"))
            #expect(shown.stdout.contains("lost: theme = dark"), "\(shown.stdout)")

            let json = try cli.run("--json", "sync-status", "com.example.app")
            #expect(json.status == 0 && json.stdout.contains("\"pending\""), "\(json.stdout)")

            // A domain no synced store has used says so.
            #expect(try cli.run("write", "com.example.plain", "a", "-int", "1").status == 0)
            let plain = try cli.run("sync-status", "com.example.plain")
            #expect(plain.status != 0 && plain.stderr.contains("not synced"), "\(plain.stderr)")
        }
    }
#endif
