import Foundation
import PrefsSupport
import PrefsTestSupport
import Testing

@testable import Prefs
@testable import PrefsEngine

/// Other connections' commits are found because they signal, not because anyone polls: with the
/// safety-net interval set to an hour, changes still arrive at once.
@Suite struct SQLiteSignalTests {
    private static let noSafetyNet = SQLiteStore.Options(refreshInterval: .seconds(3_600))

    @Test func anotherStoreOnTheFileIsWokenByEachCommit() async throws {
        let path = TestFiles.uniquePath()
        let reader = try SQLiteStore(path: path, options: Self.noSafetyNet)
        let writer = try SQLiteStore(path: path, options: Self.noSafetyNet)
        let seen = Locked<[PropertyListValue?]>([])
        let observation = reader.observe { change in
            if let value = change.values["count"] { seen.withLock { $0.append(value.newValue) } }
        }
        for count in 1...20 { try writer.setValue(.integer(Int64(count)), forKey: "count") }
        #expect(await eventually(within: 2) { reader.value(forKey: "count") == .integer(20) })
        reader.observers.waitForDelivery()
        #expect(seen.withLock { $0.last } == .integer(20))
        observation.cancel()
    }

    #if os(macOS) || os(Linux)
        @Test func anotherProcessesCommitWakesTheStore() async throws {
            let path = TestFiles.uniquePath()
            let reader = try SQLiteStore(path: path, options: Self.noSafetyNet)
            let writer = try Helper.run(["sqlite-set", path, "greeting", "from another process"])
            #expect(writer.status == 0, "\(writer.stderr)")
            #expect(
                await eventually(within: 2) {
                    reader.value(forKey: "greeting") == .string("from another process")
                })
        }
    #endif

    /// The journal sits beside the database, owner-only.
    @Test func theJournalIsOwnerOnly() throws {
        let path = TestFiles.uniquePath()
        let store = try SQLiteStore(path: path)
        try store.setValue(.integer(1), forKey: "k")
        let attributes = try FileManager.default.attributesOfItem(atPath: path + "-prefs")
        #expect(attributes[.posixPermissions] as? Int == 0o600)
    }

    /// A file of another program where the journal goes is refused with a typed error naming it,
    /// and left byte for byte as it was.
    @Test func aForeignJournalIsRefusedAndLeftAlone() throws {
        let path = TestFiles.uniquePath()
        let foreign = Data(repeating: 0x41, count: 100)
        _ = try SQLiteStore(path: path)
        try foreign.write(to: URL(fileURLWithPath: path + "-prefs"))
        #expect {
            try SQLiteStore(path: path)
        } throws: { error in
            guard let error = error as? StoreError else { return false }
            return error.kind == .foreignDatabase && error.message.contains("-prefs")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path + "-prefs")) == foreign)
    }
}
