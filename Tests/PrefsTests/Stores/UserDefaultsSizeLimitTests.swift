import Foundation
import Testing

@testable import Prefs

/// A `UserDefaultsStore` refuses writes past its domain's size limit (issue 48, item 4).
///
/// Apple's `UserDefaults` drops writes once a domain reaches its platform's limit (4 MiB; 1 MB
/// on tvOS, which also ends the app), while the store reported success. The store now refuses
/// them with `.tooLarge`, changing nothing.
@Suite struct UserDefaultsSizeLimitTests {
    /// A store over a fresh suite with a small limit, and a second handle on the same suite.
    private func makeStore(limit: Int) throws -> (UserDefaultsStore, String) {
        let suite = TestDefaults.uniqueSuiteName()
        let defaults = try #require(UserDefaults(suiteName: suite))
        return (UserDefaultsStore(defaults, domain: suite, sizeLimit: limit), suite)
    }

    private func bytes(_ count: Int) -> PropertyListValue { .data(Data(repeating: 7, count: count)) }

    @Test func aWritePastTheLimitIsRefusedAndChangesNothing() throws {
        let (store, suite) = try makeStore(limit: 4_000)
        try store.setValue(.string("Zhuo"), forKey: "name")
        try store.setValue(bytes(1_000), forKey: "avatar")
        let before = store.snapshot()

        let error = try #require(throws: StoreError.self) {
            try store.setValue(self.bytes(5_000), forKey: "photo")
        }
        #expect(error.kind == .tooLarge)
        #expect(error.keys == ["photo"])
        #expect(error.message.contains("\"photo\""))
        #expect(error.message.contains("limit of 4000 bytes"))
        #expect(error.message.contains("5"))  // the entry's size, over 5,000 bytes
        // Replacing a stored value with a larger one past the limit keeps the stored one.
        #expect(throws: StoreError.self) { try store.setValue(self.bytes(5_000), forKey: "avatar") }

        #expect(store.snapshot() == before)
        #expect(store.value(forKey: "photo") == nil)
        // What is on disk too: a second handle reads the suite's file as it was.
        let reread = try #require(UserDefaults(suiteName: suite)).persistentDomain(forName: suite) ?? [:]
        #expect(Set(reread.keys) == ["name", "avatar"])
        #expect((reread["avatar"] as? Data)?.count == 1_000)
    }

    @Test func removalsAndSmallerReplacementsWorkAtTheLimit() throws {
        let (store, _) = try makeStore(limit: 4_000)
        // Fill the domain until a write is refused.
        var written = 0
        while written < 100, (try? store.setValue(bytes(500), forKey: "k\(written)")) != nil { written += 1 }
        #expect((5..<100).contains(written))
        #expect(throws: StoreError.self) { try store.setValue(self.bytes(500), forKey: "more") }

        try store.setValue(bytes(10), forKey: "k0")  // a smaller replacement
        #expect(store.value(forKey: "k0") == bytes(10))
        try store.setValue(nil, forKey: "k1")  // a removal
        #expect(store.value(forKey: "k1") == nil)
        // The room they freed is usable again.
        try store.setValue(bytes(400), forKey: "more")
        #expect(store.value(forKey: "more") == bytes(400))
    }

    @Test func aDomainAlreadyPastTheLimitTakesOnlyWritesThatShrinkIt() throws {
        let suite = TestDefaults.uniqueSuiteName()
        let plain = try #require(UserDefaults(suiteName: suite))
        plain.set(Data(repeating: 1, count: 3_000), forKey: "big")
        plain.set("kept", forKey: "name")
        let store = UserDefaultsStore(plain, domain: suite, sizeLimit: 2_000)
        #expect(throws: StoreError.self) { try store.setValue(.string("grows"), forKey: "new") }
        try store.setValue(.data(Data(repeating: 1, count: 2_500)), forKey: "big")
        #expect(store.value(forKey: "big") == .data(Data(repeating: 1, count: 2_500)))
        #expect(store.value(forKey: "name") == .string("kept"))
    }

    @Test func aTransactionThatWouldPassTheLimitIsRefusedWhole() throws {
        let (store, _) = try makeStore(limit: 4_000)
        try store.setValue(.integer(1), forKey: "count")
        try store.setValue(bytes(1_000), forKey: "a")
        let before = store.snapshot()
        let error = try #require(throws: StoreError.self) {
            try store.transaction { transaction in
                transaction["count"] = .integer(2)
                transaction["a"] = nil
                transaction["b"] = self.bytes(2_000)
                transaction["c"] = self.bytes(2_000)
            }
        }
        #expect(error.kind == .tooLarge)
        #expect(Set(error.keys) == ["count", "a", "b", "c"])
        #expect(store.snapshot() == before)
        // The same writes in a limit they fit in are taken whole.
        try store.transaction { transaction in
            transaction["count"] = .integer(2)
            transaction["b"] = self.bytes(1_000)
        }
        #expect(store.value(forKey: "count") == .integer(2))
    }

    @Test func aWriteIsNotRefusedOnAStaleCount() throws {
        let suite = TestDefaults.uniqueSuiteName()
        let defaults = try #require(UserDefaults(suiteName: suite))
        let store = UserDefaultsStore(defaults, domain: suite, sizeLimit: 4_000)
        try store.setValue(bytes(3_000), forKey: "big")  // counted now
        // Another writer frees the room; the store's count still holds "big".
        defaults.removeObject(forKey: "big")
        try store.setValue(bytes(3_000), forKey: "other")
        #expect(store.value(forKey: "other") == bytes(3_000))
    }

    /// An estimate that counts each reference to one large value (an array of them) may pass
    /// every `Int` and saturate; deciding when to count again takes it without overflowing (it
    /// doubled it, which traps past 2³⁰ on a 32-bit `Int`: every Apple Watch).
    @Test func aSaturatedEstimateIsTakenWithoutOverflow() {
        let limit = 4 << 20
        #expect(UserDefaultsStore.recountInterval(total: .max, limit: limit) == 1_000_000_000)
        #expect(UserDefaultsStore.recountInterval(total: limit / 2, limit: limit) == 1_000_000_000)
        #expect(UserDefaultsStore.recountInterval(total: limit / 2 - 1, limit: limit) == 10_000_000_000)
        #expect(UserDefaultsStore.recountInterval(total: 500_000, limit: 1_000_001) == 10_000_000_000)
        #expect(UserDefaultsStore.recountInterval(total: 500_001, limit: 1_000_001) == 1_000_000_000)
    }

    @Test func theDefaultLimitIsThePlatforms() throws {
        let store = try UserDefaultsStore(suiteName: TestDefaults.uniqueSuiteName())
        #expect(store.sizeLimit == 4 << 20)
        #expect(throws: StoreError.self) { try store.setValue(self.bytes(4 << 20), forKey: "huge") }
        #expect(store.snapshot().isEmpty)
    }

    /// The estimate is an upper bound of the domain's binary plist (the encoding Apple's limit
    /// counts), so a write is refused at or before the limit, never after; and it stays close.
    static let domains: [[String: PropertyListValue]] = [
        ["n": .integer(1)],
        ["volume": .double(0.5), "name": .string("Zhuo"), "when": .date(Date(timeIntervalSince1970: 5))],
        ["négatif": .integer(-3), "ünïcødé ключ": .string("значение ✓"), "big": .unsignedInteger(.max)],
        ["list": .array((0..<40).map { .integer(Int64($0) * 1_000) }), "flag": .bool(true)],
        [
            "nested": .dictionary([
                "a": .array([.data(Data(count: 300)), .string(String(repeating: "x", count: 70_000))])
            ])
        ],
        Dictionary(
            uniqueKeysWithValues: (0..<2_000).map { ("key\($0)", PropertyListValue.integer(Int64($0))) }),
    ]

    @Test(arguments: domains.indices)
    func theEstimateIsAnUpperBoundOfTheEncodedDomain(_ index: Int) throws {
        let objects = Self.domains[index].mapValues(\.foundationObject)
        let encoded = try PropertyListSerialization.data(
            fromPropertyList: objects, format: .binary, options: 0)
        let estimate = UserDefaultsStore.estimatedSize(ofDomain: objects)
        #expect(estimate >= encoded.count)
        #expect(estimate <= encoded.count * 2 + 100)
    }
}
