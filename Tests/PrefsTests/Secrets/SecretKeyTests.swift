import Foundation
import PrefsSupport
import PrefsTestSupport
import Testing

@testable import Prefs

/// Secret keys on every platform, with the secrets in memory.
///
/// With ``SecretStore/memory()``: where
/// the value goes and never goes, the stamp beside it, what is refused, and the migration out of
/// plain settings with its erasing of old bytes. The system's own secret stores are
/// `SecretServiceTests` (Linux) and the Apple workflow's Keychain tests.
@Suite struct SecretKeyTests {
    static let token = Preferences.Key<String?>("apiToken", storedAs: .secret)
    static let pin = Preferences.Key<Int>("pin", default: 0, storedAs: .secret)
    static let blob = Preferences.Key<Data?>("blob", storedAs: .secret)
    static let login = Preferences.Key<[String: String]>("login", default: [:], storedAs: .secret)
    static let plainToken = Preferences.Key<String?>("apiToken")

    @Test(arguments: StoreKind.allCases)
    func valuesGoToTheSecretStoreAndOnlyAStampToTheStore(store kind: StoreKind) throws {
        let issues = IssueRecorder()
        let store = kind.makeStore()
        let secrets = SecretStore.memory()
        let prefs = Preferences(store: store, diagnostics: issues.diagnostics, secrets: secrets)
        #expect(prefs[Self.token] == nil)
        #expect(!prefs.hasValue(for: Self.token))
        prefs[Self.token] = "never-in-a-file-tok-7f3a9c"
        try prefs.set(4321, for: Self.pin)
        try prefs.set(Data([0, 1, 2, 255]), for: Self.blob)
        try prefs.set(["user": "zhuo", "password": "never-in-a-file-pw-91b2"], for: Self.login)
        #expect(prefs[Self.token] == "never-in-a-file-tok-7f3a9c")
        #expect(prefs[Self.pin] == 4321)
        #expect(prefs[Self.blob] == Data([0, 1, 2, 255]))
        #expect(prefs[Self.login]["password"] == "never-in-a-file-pw-91b2")
        #expect(prefs.hasValue(for: Self.token))
        #expect(try prefs.value(for: Self.token) == "never-in-a-file-tok-7f3a9c")

        // The store holds stamps only, none of them a value, and none listed as the user's.
        let raw = store.snapshot()
        #expect(
            raw.keys.map(\.name).sorted() == [
                "prefs.secret:apiToken", "prefs.secret:blob", "prefs.secret:login", "prefs.secret:pin",
            ])
        #expect(
            !raw.values.contains {
                "\($0)".contains("never-in-a-file-tok-7f3a9c") || "\($0)".contains("never-in-a-file-pw-91b2")
            })
        #expect(prefs.storedKeys.isEmpty)
        #expect(prefs.dictionaryRepresentation().isEmpty)
        // A plain key of the same name reads the store, where nothing is.
        #expect(prefs[Self.plainToken] == nil)

        // Another handle with its own copy reads the same secrets; a reset deletes the secret
        // and its stamp.
        let other = Preferences(store: store, diagnostics: issues.diagnostics, secrets: secrets)
        #expect(other[Self.token] == "never-in-a-file-tok-7f3a9c")
        prefs.reset(Self.token, Self.pin)
        #expect(other[Self.token] == nil)
        #expect(other[Self.pin] == 0)
        #expect(try secrets.backend.item(service: prefs.secretService, account: "apiToken") == nil)
        #expect(store.value(forKey: "prefs.secret:apiToken") == nil)
        // removeAll removes plain values; secrets and their stamps stay.
        prefs.removeAll()
        #expect(other[Self.blob] == Data([0, 1, 2, 255]))
        #expect(issues.issues.isEmpty)
    }

    @Test func aChangedStampMakesEveryCopyAskAgain() throws {
        let store = MemoryStore()
        let backend = SecretStore.memory()
        let reader = Preferences(store: store, secrets: backend)
        let writer = Preferences(store: store, secrets: backend)
        try writer.set("one", for: Self.token)
        #expect(reader[Self.token] == "one")
        // Changed behind Prefs' back (another tool): this process's copy answers, its stamp
        // unchanged.
        try backend.backend.setItem(
            SecretItem(.string("changed")), service: reader.secretService, account: "apiToken", label: "")
        #expect(reader[Self.token] == "one")
        // Written through Prefs (here or in another process): the stamp changes, every copy asks.
        try writer.set("two", for: Self.token)
        #expect(reader[Self.token] == "two")
    }

    @Test func observedLikeAnyOtherKey() async throws {
        let prefs = Preferences(store: MemoryStore(), secrets: .memory())
        let seen = Locked<[String?]>([])
        let observation = prefs.observe(Self.token) { value in seen.withLock { $0.append(value) } }
        defer { observation.cancel() }
        prefs[Self.token] = "a"
        prefs[Self.token] = "b"
        prefs.reset(Self.token)
        let expected: [String?] = [nil, "a", "b", nil]
        #expect(await eventually { seen.withLock { $0 } == expected }, "\(seen.withLock { $0 })")

        var stream = prefs.changes(of: Self.token, Self.pin, initial: true).makeAsyncIterator()
        let first = await stream.next()
        #expect(first?.0 == nil && first?.1 == 0)
        try prefs.set(7, for: Self.pin)
        let second = await stream.next()
        #expect(second?.1 == 7)
    }

    @Test func notWrittenInsideAnUpdateAndNeverQuotedInAnError() throws {
        let issues = IssueRecorder()
        let prefs = Preferences(store: MemoryStore(), diagnostics: issues.diagnostics, secrets: .memory())
        try prefs.set("never-in-a-file-keep-3e1d", for: Self.token)
        let refused = #expect(throws: PreferenceError.self) {
            try prefs.update { p in
                #expect(p[Self.token] == "never-in-a-file-keep-3e1d")
                #expect(p.hasValue(for: Self.token))
                p[Self.token] = "never-in-a-file-lost-in-update"
            }
        }
        #expect(refused?.message.contains("set(_:for:)") == true)
        #expect(throws: PreferenceError.self) { try prefs.update { p in p.reset(Self.token) } }
        #expect(prefs[Self.token] == "never-in-a-file-keep-3e1d")

        // A value of another type: the read gives the default, and neither the report nor the
        // strict read's error shows what is stored.
        let wrongType = Preferences.Key<Int>("apiToken", default: -1, storedAs: .secret)
        #expect(prefs[wrongType] == -1)
        let mismatch = #expect(throws: PreferenceError.self) { try prefs.value(for: wrongType) }
        #expect(mismatch?.kind == .typeMismatch)
        let told = issues.issues.map(\.description) + [mismatch?.description ?? ""]
        #expect(told.count == 2)
        #expect(!told.contains { $0.contains("never-in-a-file-keep-3e1d") })

        // A value outside the allowed ones is refused without being quoted.
        let level = Preferences.Key<String>(
            "level", default: "low", allowed: ["low", "high"], storedAs: .secret)
        let notAllowed = #expect(throws: PreferenceError.self) {
            try prefs.set("never-in-a-file-sekrit-level", for: level)
        }
        #expect(notAllowed?.kind == .notAllowed)
        #expect(notAllowed?.description.contains("never-in-a-file-sekrit-level") == false)
    }

    /// A secret is held to a value's limit as a plain value is: refused before the secret store
    /// or the stamp changes.
    @Test func aSecretPastAValuesLimitIsRefusedAndNothingChanges() throws {
        let secrets = SecretStore.memory()
        let prefs = Preferences(store: MemoryStore(), secrets: secrets)
        try prefs.set(Data([1, 2, 3]), for: Self.blob)
        let refused = #expect(throws: StoreError.self) {
            try prefs.set(Data(repeating: 7, count: 9 << 20), for: Self.blob)
        }
        #expect(refused?.kind == .tooLarge)
        #expect(refused?.keys == ["blob"])
        #expect(prefs[Self.blob] == Data([1, 2, 3]))
        #expect(Preferences(store: prefs.store, secrets: secrets)[Self.blob] == Data([1, 2, 3]))
    }

    @Test func describedAsSecret() {
        #expect(Self.token.keyDescription.isSecret)
        #expect(!Self.plainToken.keyDescription.isSecret)
        let stored = Self.token.keyDescription.storedForm
        #expect(Preferences.KeyDescription(name: "apiToken", stored: stored)?.isSecret == true)
    }

    // MARK: - Moving a secret out of plain settings

    /// What an older release left at `path`: the token as a plain value (written twice, the first
    /// time as "older-" and the token) among 200 others, moved into SQLite.
    static func writeAsAnOlderRelease(_ token: String, at path: String) throws {
        let store = try SQLiteStore(path: path)
        let old = Preferences(store: store)
        old[plainToken] = "older-\(token)"
        old[plainToken] = token
        for index in 0..<200 { old[Preferences.Key<Int>("filler\(index)", default: 0)] = index }
        try store.flush()
    }

    /// The plain value an older release wrote, with some history (the journal's records, pages
    /// SQLite rewrote), then the migration: the secret store has it, and no file of the store
    /// holds its bytes.
    @Test func movingAPlainValueErasesEveryCopyFromTheStoresFiles() throws {
        let folder = ScratchFolder.make("secret-move")
        let path = folder.appendingPathComponent("app.sqlite").path
        let secret = "plain-token-0d9e8a7b"
        try Self.writeAsAnOlderRelease(secret, at: path)
        #expect(!SecretFiles.holding(secret, under: folder).isEmpty, "the plain value is in the files before")

        let secrets = SecretStore.memory()
        let store = try SQLiteStore(path: path)
        let prefs = Preferences(store: store, secrets: secrets)
        let reached = try prefs.migrate([.moveToSecret(version: 1, "apiToken", to: Self.token)])
        #expect(reached == 1)
        #expect(prefs[Self.token] == secret)
        #expect(store.value(forKey: "apiToken") == nil)
        #expect(prefs[Preferences.Key<Int>("filler199", default: 0)] == 199)
        #expect(SecretFiles.holding(secret, under: folder) == [])
        #expect(SecretFiles.holding("older-", under: folder) == [])

        // Once: a second run moves nothing and keeps the secret.
        try prefs.store.setValue(.string("written-after"), forKey: "apiToken")
        try prefs.migrate([.moveToSecret(version: 1, "apiToken", to: Self.token)])
        #expect(prefs[Self.token] == secret)
    }

    /// Without the erasing (a plain removal), the bytes stay in the files: what the test above
    /// checks is there to find.
    @Test func aPlainRemovalLeavesTheBytesBehind() throws {
        let folder = ScratchFolder.make("secret-plain-remove")
        let path = folder.appendingPathComponent("app.sqlite").path
        let secret = "plain-token-5c4b3a21"
        try Self.writeAsAnOlderRelease(secret, at: path)
        let store = try SQLiteStore(path: path)
        try Preferences(store: store).update { p in p[raw: "apiToken"] = nil }
        try store.flush()
        #expect(store.value(forKey: "apiToken") == nil)
        #expect(!SecretFiles.holding(secret, under: folder).isEmpty)
    }

    @Test func aPlainValueOfAnotherTypeIsNotMovedNorQuoted() throws {
        let prefs = Preferences(store: MemoryStore(), secrets: .memory())
        try prefs.store.setValue(.data(Data("raw-9f".utf8)), forKey: "apiToken")
        let failed = #expect(throws: PreferenceError.self) {
            try prefs.migrate([.moveToSecret(version: 1, "apiToken", to: Self.token)])
        }
        #expect(failed?.kind == .migrationFailed)
        #expect(failed?.description.contains("raw-9f") == false)
        #expect(
            failed?.description.contains("is a data") == true || failed?.description.contains("data") == true)
        #expect(prefs.store.value(forKey: "apiToken") == .data(Data("raw-9f".utf8)))
        #expect(prefs[Self.token] == nil)
    }
}
