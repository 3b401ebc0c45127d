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
            let reachable = Shared(true)
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

        /// A remote that keeps what it is sent, and can be cut.
        private final class KeepingRemote: SyncRemote {
            let reachable = Shared(true)
            let pushed = Shared<[String]>([])
            var description: String { "KeepingRemote" }
            func push(_ entries: [SyncEntry]) throws -> [SyncEntry] {
                guard reachable.value else { throw CocoaError(.fileReadUnknown) }
                pushed.modify { $0 += entries.map(\.key) }
                return []
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

        /// A value shared with a remote's callers.
        final class Shared<Value>: @unchecked Sendable {
            private let lock = NSLock()
            private var stored: Value
            init(_ value: Value) { stored = value }
            var value: Value {
                get { lock.withLock { stored } }
                set { lock.withLock { stored = newValue } }
            }
            func modify(_ change: (inout Value) -> Void) { lock.withLock { change(&stored) } }
        }

        /// A remote whose pushes wait until let go: a sync stuck on a silent network.
        private final class WaitingRemote: SyncRemote {
            let letGo = DispatchSemaphore(value: 0)
            var description: String { "WaitingRemote" }
            func push(_ entries: [SyncEntry]) throws -> [SyncEntry] {
                letGo.wait()
                letGo.signal()  // once let go, every push goes
                return []
            }
            func pull(after cursor: PropertyListValue?) throws -> (
                entries: [SyncEntry], cursor: PropertyListValue?
            ) { ([], cursor) }
            func observe(_ handler: @escaping @Sendable (SyncRemoteEvent) -> Void) -> StoreObservation {
                StoreObservation {}
            }
        }

        /// The file of domain `com.example.app` in the tool's default store.
        private func domainFile(in cli: CLI) throws -> String {
            let folder = cli.home.appendingPathComponent("config/prefs")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            return folder.appendingPathComponent("com.example.app.sqlite").path
        }

        @Test func syncStatusShowsPendingWritesTheLastErrorAndWhatLost() throws {
            let cli = try CLI()
            defer { cli.remove() }
            let path = try domainFile(in: cli)
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
            // The store syncs only when told: no process syncs it now.
            #expect(shown.stdout.contains("syncing: no process syncs it now"), "\(shown.stdout)")
            let plain = try cli.run("sync-status", "com.example.plain")
            #expect(plain.status != 0 && plain.stderr.contains("not synced"), "\(plain.stderr)")
        }

        /// `prefs sync-status` shows which process syncs the domain, and a sync in progress with
        /// since when (issue 51: a sync stuck on a silent network was invisible).
        @Test func syncStatusShowsWhoSyncsAndASyncInProgress() async throws {
            let cli = try CLI()
            defer { cli.remove() }
            let path = try domainFile(in: cli)
            let remote = WaitingRemote()
            let store = try SyncedStore(
                local: try SQLiteStore(path: path), remote: remote,
                diagnostics: PreferenceDiagnostics { _ in })
            try store.setValue(.string("dark"), forKey: "theme")
            var shown = ""
            // Within two seconds and a little: the holder writes it into the lease as it renews.
            #expect(
                await eventually {
                    shown = (try? cli.run("sync-status", "com.example.app").stdout) ?? ""
                    return shown.contains("syncing: process \(getpid()), a sync in progress since")
                }, "\(shown)")
            let json = try cli.run("--json", "sync-status", "com.example.app").stdout
            #expect(json.contains("\"syncingProcess\": \(getpid())"), "\(json)")
            #expect(json.contains("\"syncingSince\""), "\(json)")

            remote.letGo.signal()
            #expect(
                await eventually {
                    shown = (try? cli.run("sync-status", "com.example.app").stdout) ?? ""
                    return shown.contains("syncing: process \(getpid()), between syncs")
                }, "\(shown)")
            #expect(shown.contains("last sync started: 20"), "\(shown)")
            withExtendedLifetime(store) {}
        }

        /// `prefs sync-now` asks the process that syncs the domain to sync at once (here, a retry
        /// a minute away), and shows what came of it.
        @Test func syncNowAsksTheProcessThatSyncsTheDomain() async throws {
            let cli = try CLI()
            defer { cli.remove() }
            let path = try domainFile(in: cli)
            let remote = KeepingRemote()
            do {
                let store = try SyncedStore(
                    local: try SQLiteStore(path: path), remote: remote,
                    diagnostics: PreferenceDiagnostics { _ in }, automatically: false)
                try store.setValue(.string("dark"), forKey: "theme")
            }
            let alone = try cli.run("sync-now", "com.example.app")
            #expect(alone.status == 1 && alone.stderr.contains("No process syncs"), "\(alone.stderr)")

            remote.reachable.value = false
            let store = try SyncedStore(
                local: try SQLiteStore(path: path), remote: remote, syncing: .all,
                diagnostics: PreferenceDiagnostics { _ in }, automatically: true,
                now: { UInt64(Date().timeIntervalSince1970 * 1000) }, firstRetry: .seconds(60))
            #expect(await eventually { store.status.lastError != nil }, "failed; the retry is a minute away")
            remote.reachable.value = true
            let asked = try cli.run("sync-now", "com.example.app")
            #expect(asked.status == 0, "\(asked.stderr)")
            #expect(asked.stdout.contains("pending: none"), "\(asked.stdout)")
            #expect(remote.pushed.value == ["theme"])

            remote.reachable.value = false
            let failed = try cli.run("sync-now", "com.example.app")
            #expect(failed.status == 74 && failed.stderr.contains("the sync failed"), "\(failed.stderr)")
        }
    }
#endif
