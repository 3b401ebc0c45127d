import Foundation
import PrefsSupport
import PrefsTestSupport
import Testing

@testable import Prefs
@testable import PrefsEngine

/// Issue "Settings that follow the user and the fleet", its proof against the iCloud stand-in.
///
/// Three devices of one user, each a `SQLiteStore` written by two threads at once, with clocks
/// that disagree, sync by themselves while the stand-in delivers late and in batches, keeps the
/// last arrival, takes devices offline for a while, and refuses a value over iCloud's limit.
/// Once the writes stop and the devices are back, the devices agree by themselves (no
/// `syncNow()`) on the write with the highest stamp for every key, and iCloud's server holds it.
@Suite(.timeLimit(.minutes(10))) struct ICloudFleetTests {
    @Test func threeDevicesAgreeOnTheHighestStampThroughDelaysOfflineAndQuota() async throws {
        let seed = UInt64(ProcessInfo.processInfo.environment["PREFS_FLEET_SEED"] ?? "") ?? 0x1C10D
        let writesPerThread = stressRounds(local: 200, ci: 600)
        print("ICloudFleetTests: seed \(seed), \(writesPerThread) writes per thread")
        let server = ICloudServerStandIn()
        let folder = ScratchFolder.make("icloud")
        defer { try? FileManager.default.removeItem(at: folder) }
        let devices = (0..<3).map { _ in server.device(account: "zhuo") }
        let issues = IssueRecorder()
        let stores = try (0..<3).map { index in
            // The second device's clock runs 400 ms behind, the third's 900 ms ahead.
            let skew: Int64 = [0, -400, 900][index]
            return try SyncedStore(
                local: try SQLiteStore(path: folder.appendingPathComponent("device\(index).sqlite").path),
                remote: ICloudRemote(storage: devices[index], diagnostics: issues.diagnostics), syncing: .all,
                diagnostics: issues.diagnostics, automatically: true,
                now: { UInt64(Int64(Date().timeIntervalSince1970 * 1000) + skew) })
        }
        // Over iCloud's limit for one value: stays pending on its device, and the rest syncs.
        try stores[1].setValue(.string(String(repeating: "x", count: 1_000_001)), forKey: "big")

        // The network: delivers every 0–60 ms, and now and then takes a device offline or back.
        let writing = AtomicWord()
        writing.store(1)
        let network = Thread { [random = SeededGenerator(state: seed)] in
            var random = random
            while writing.load() == 1 {
                usleep(UInt32(random.next() % 60_000))
                if random.next() % 8 == 0 {
                    devices[Int(random.next() % 3)].setOffline(random.next() % 2 == 0)
                } else {
                    server.deliver()
                }
            }
        }
        network.start()

        let keys = (0..<6).map { "key\($0)" }
        let writes = Locked(SyncedWrites())
        onThreads(6) { thread in
            let store = stores[thread % 3]
            var random = SeededGenerator(state: seed &+ UInt64(thread))
            for index in 0..<writesPerThread {
                let key = keys[Int(random.next() % UInt64(keys.count))]
                let value = "t\(thread).\(index)"
                do {
                    let stamp = try store.stampedTransaction { $0[key] = .string(value) }.stamps[key]!
                    writes.withLock { $0.acknowledged(key, value, stamp) }
                } catch {
                    Issue.record("a local write failed: \(error)")
                }
                usleep(UInt32(random.next() % 3_000))
            }
        }
        writing.store(0)
        while !network.isFinished { usleep(1_000) }
        for device in devices { device.setOffline(false) }

        // The devices sync by themselves, on the stand-in's change notifications. Their values
        // agreeing is not yet the end: iCloud may still hold an older write that arrived last,
        // which a device has marked to send again. The end is everything settled: the devices
        // agree, only "big" is pending, and the server holds each key's agreed write.
        let recorded = writes.withLock { $0 }
        var problems: [String] = []
        let settled = await eventually(within: 20) {
            server.deliver()
            problems = recorded.disagreements(among: stores, keys: keys)
            for (index, store) in stores.enumerated()
            where store.status.pendingKeys != (index == 1 ? ["big"] : []) {
                problems.append("device \(index) has pending: \(store.status.pendingKeys)")
            }
            let held = server.contents(of: "zhuo")
            for key in keys {
                let record = held[ICloudRemote.prefix + key].flatMap {
                    ICloudRemote.entry(named: key, from: $0.foundationObject)
                }
                if record?.stamp != stores[0].stamp(forKey: key) {
                    problems.append("\(key): the server holds \(record.map { "\($0.stamp)" } ?? "nothing")")
                }
            }
            return problems.isEmpty
        }
        #expect(settled, "\(problems)")
        #expect(recorded.acknowledgedCount == 6 * writesPerThread)
        #expect(recorded.contested(keys) == keys.count, "every key was written on every device")
        #expect(stores[1].status.pendingKeys == ["big"], "kept until a smaller value replaces it")
        #expect(issues.issues.contains { $0.key == "big" }, "reported, not dropped silently")
        #expect(stores[0].value(forKey: "big") == nil)
    }
}
