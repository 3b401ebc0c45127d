import Foundation
import PrefsSupport
import PrefsTestSupport
import Testing

@testable import Prefs
@testable import PrefsEngine

/// Syncing through iCloud's key-value storage (issue "Settings that follow the user and the
/// fleet", item 5), against a stand-in that behaves as Apple documents.
@Suite(.timeLimit(.minutes(10))) struct ICloudRemoteTests {
    private func replica(
        _ device: ICloudDeviceStandIn, local: any PreferenceStore = MemoryStore(),
        issues: IssueRecorder = IssueRecorder(), clock: @escaping @Sendable () -> UInt64 = { 1_000 }
    ) throws -> SyncedStore {
        try SyncedStore(
            local: local, remote: ICloudRemote(storage: device, diagnostics: issues.diagnostics),
            syncing: .all,
            diagnostics: issues.diagnostics, automatically: false, now: clock)
    }

    @Test func aWriteReachesTheUsersOtherDevice() throws {
        let server = ICloudServerStandIn()
        let phone = server.device(account: "zhuo")
        let laptop = server.device(account: "zhuo")
        let a = try replica(phone)
        let b = try replica(laptop)
        try a.setValue(.string("dark"), forKey: "theme")
        try a.setValue(nil, forKey: "gone")
        #expect(phone.synchronizations.withLock { $0 } == 1, "asked once, when it started listening")
        try a.syncNow()
        server.deliver()
        try b.syncNow()
        #expect(b.value(forKey: "theme") == .string("dark"))
        #expect(b.stamp(forKey: "gone") == a.stamp(forKey: "gone"))
        #expect(server.contents(of: "zhuo")["prefs:theme"] != nil)
    }

    /// iCloud keeps the last arrival; the replicas end on the highest stamp anyway.
    @Test func theHighestStampWinsThoughICloudKeepsTheLastArrival() throws {
        let server = ICloudServerStandIn()
        let laptop = server.device(account: "zhuo")
        let phone = server.device(account: "zhuo")
        let a = try replica(laptop, clock: { 2_000 })
        let b = try replica(phone, clock: { 1_000 })
        try a.setValue(.string("dark"), forKey: "theme")  // newer
        try b.setValue(.string("light"), forKey: "theme")  // older, delivered last
        try a.syncNow()
        try b.syncNow()
        server.deliver()  // the laptop's copy first, then the phone's: the older one stays
        #expect(
            ICloudRemote.entry(
                named: "theme", from: server.contents(of: "zhuo")["prefs:theme"]!.foundationObject)?
                .value == .string("light"))
        try a.syncNow()  // finds an older write than its own, and sends its own again
        server.deliver()
        try b.syncNow()
        #expect(a.value(forKey: "theme") == .string("dark"))
        #expect(b.value(forKey: "theme") == .string("dark"))
        #expect(b.status.conflicts.map(\.key) == [], "b's write had been taken: a newer one replaced it")
    }

    /// iCloud discards writes made before a device's first download from the server (Apple
    /// documents it); the next sync after the download finds them missing and sends them again.
    @Test func writesICloudDiscardedBeforeItsFirstDownloadAreSentAgain() throws {
        let server = ICloudServerStandIn()
        let other = try replica(server.device(account: "zhuo"))
        let fresh = server.device(account: "zhuo", downloaded: false)
        let a = try replica(fresh)
        try a.setValue(.string("dark"), forKey: "theme")
        try a.syncNow()
        #expect(fresh.dictionaryRepresentation["prefs:theme"] == nil, "discarded")
        #expect(a.status.pendingKeys.isEmpty, "as far as the store could tell, sent")
        fresh.completeInitialDownload()
        try a.syncNow()
        #expect(fresh.dictionaryRepresentation["prefs:theme"] != nil, "sent again")
        server.deliver()
        try other.syncNow()
        #expect(other.value(forKey: "theme") == .string("dark"))
    }

    /// A device that joins later takes the account's values with its first sync, and pushes
    /// nothing it did not write.
    @Test func aNewDeviceTakesTheAccountsValues() throws {
        let server = ICloudServerStandIn()
        let a = try replica(server.device(account: "zhuo"))
        try a.setValue(.integer(14), forKey: "fontSize")
        try a.syncNow()
        server.deliver()
        let tablet = server.device(account: "zhuo")
        let c = try replica(tablet, local: MemoryStore(["fontSize": .integer(12)]))
        try c.syncNow()
        #expect(c.value(forKey: "fontSize") == .integer(14))
        #expect(c.status.pendingKeys.isEmpty)
    }

    /// Apple's limits are checked before writing: a write over them stays pending, reported
    /// once; the others go; a smaller write of the key replaces it and goes.
    @Test func writesOverICloudsLimitsAreKeptAndReportedNeverDropped() throws {
        let server = ICloudServerStandIn()
        let device = server.device(account: "zhuo")
        let issues = IssueRecorder()
        let a = try replica(device, issues: issues)
        let huge = PropertyListValue.data(Data(count: 1_100_000))
        let longName = String(repeating: "k", count: 70)
        try a.setValue(huge, forKey: "huge")
        try a.setValue(.bool(true), forKey: longName)
        try a.setValue(.string("dark"), forKey: "theme")
        #expect {
            try a.syncNow()
        } throws: { error in
            guard let error = error as? StoreError, error.kind == .tooLarge else { return false }
            return Set(error.keys) == ["huge", longName] && error.message.contains("64 bytes")
        }
        #expect(a.status.pendingKeys == [longName, "huge"].sorted())
        #expect(device.dictionaryRepresentation["prefs:theme"] != nil, "the others went")
        #expect(a.status.lastError?.contains("1 MB") == true)
        #expect(throws: StoreError.self) { try a.syncNow() }
        #expect(issues.issues.filter { $0.key == "huge" }.count == 1, "reported once")

        try a.setValue(.data(Data(count: 10)), forKey: "huge")
        try a.setValue(nil, forKey: longName)
        #expect(throws: StoreError.self) { try a.syncNow() }  // the removal of the long name too
        #expect(a.status.pendingKeys == [longName])
        #expect(device.dictionaryRepresentation["prefs:huge"] != nil)
    }

    /// Item 5: the values of the account a device leaves are forgotten.
    ///
    /// Its synced values and its writes not sent go (each reported), then the new account's are
    /// pulled, and nothing of the account before reaches the new one; keys that do not sync stay.
    /// A value iCloud cannot take stays pending without holding back the writes after it: the
    /// store does not wait to retry as it would for a remote out of reach.
    @Test func aWriteOverTheLimitHoldsNoOtherWriteBack() async throws {
        let server = ICloudServerStandIn()
        let device = server.device(account: "zhuo")
        let issues = IssueRecorder()
        let store = try SyncedStore(
            local: MemoryStore(), remote: ICloudRemote(storage: device, diagnostics: issues.diagnostics),
            syncing: .all, diagnostics: issues.diagnostics, automatically: true, now: { 1_000 },
            firstRetry: .seconds(60))
        try store.setValue(.string(String(repeating: "x", count: 1_000_001)), forKey: "big")
        #expect(
            await eventually { store.status.lastError != nil && !store.isSyncPlanned },
            "refused, reported, and no retry planned (the remote answered)")
        try store.setValue(.string("dark"), forKey: "theme")
        #expect(
            await eventually(within: 5) {
                device.dictionaryRepresentation["prefs:theme"] != nil && store.status.pendingKeys == ["big"]
            })
    }

    @Test func theValuesOfTheAccountADeviceLeavesAreForgotten() async throws {
        let server = ICloudServerStandIn()
        let other = try replica(server.device(account: "li"))
        try other.setValue(.string("blue"), forKey: "accent")
        try other.syncNow()
        server.deliver()

        let device = server.device(account: "zhuo")
        let issues = IssueRecorder()
        let local = MemoryStore()
        let a = try SyncedStore(
            local: local, remote: ICloudRemote(storage: device, diagnostics: issues.diagnostics),
            syncing: .prefixes("Settings.", "theme", "unsent"), diagnostics: issues.diagnostics,
            automatically: false, now: { 1_000 })
        try a.setValue(.string("dark"), forKey: "theme")
        try a.setValue(.integer(3), forKey: "windowCount")  // per device
        try a.syncNow()
        server.deliver()
        try a.setValue(.string("zhuo's"), forKey: "unsent")

        device.switchAccount(to: "li")
        // Forgotten on the store's queue, not on the thread that told of the change.
        #expect(await eventually { a.value(forKey: "theme") == nil }, "zhuo's synced value is gone")
        #expect(a.value(forKey: "unsent") == nil)
        #expect(a.value(forKey: "windowCount") == .integer(3), "a key that does not sync stays")
        #expect(issues.issues.contains { $0.key == "unsent" })
        try a.syncNow()
        server.deliver()
        #expect(server.contents(of: "li")["prefs:theme"] == nil, "nothing of zhuo's reached li's account")
        #expect(server.contents(of: "li")["prefs:unsent"] == nil)
        #expect(a.value(forKey: "accent") == nil, "not selected here")
    }

    /// Several devices write, sync and deliver at random (a fixed seed), iCloud delivering in
    /// batches and keeping the last arrival; at the end every device holds the highest stamp.
    @Test(arguments: 0..<6)
    func devicesConvergeWhateverICloudDelivers(seed: UInt64) throws {
        let server = ICloudServerStandIn()
        var random = SeededGenerator(state: seed)
        let times = Locked<[UInt64]>([5_000, 5_000, 5_000])
        let replicas = try (0..<3).map { index in
            try replica(server.device(account: "zhuo"), clock: { times.withLock { $0[index] } })
        }
        var writes: [String: [(stamp: SyncStamp, value: PropertyListValue?)]] = [:]
        for step in 0..<300 {
            let index = Int(random.next() % 3)
            times.withLock { $0[index] = UInt64(5_000 + step * 2 + index * 40) - random.next() % 60 }
            switch random.next() % 10 {
            case 0..<5:
                let key = "k\(random.next() % 4)"
                let value: PropertyListValue? = random.next() % 7 == 0 ? nil : .integer(Int64(step))
                try replicas[index].setValue(value, forKey: key)
                writes[key, default: []].append((try #require(replicas[index].stamp(forKey: key)), value))
            case 5..<8: try replicas[index].syncNow()
            default: server.deliver()
            }
        }
        for _ in 0..<3 {
            for store in replicas { try store.syncNow() }
            server.deliver()
        }
        for (key, made) in writes {
            let winner = try #require(made.max { $0.stamp < $1.stamp })
            for store in replicas {
                #expect(store.value(forKey: key) == winner.value, "\(key)")
                #expect(store.stamp(forKey: key) == winner.stamp)
            }
        }
    }
}
