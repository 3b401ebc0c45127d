#if os(macOS)
    import Foundation
    import Security
    import Testing

    @testable import Prefs

    /// Secret keys in the Keychain: the value is a generic password item of the service and the
    /// key, and is gone after a reset.
    ///
    /// Run where a keychain is ready for them (`PREFS_KEYCHAIN_TESTS=1`, which the Apple workflow
    /// sets after making and unlocking one): a hosted runner's login keychain may be locked, and a
    /// call to it may then wait for a prompt nobody answers.
    @Suite(
        .enabled(if: ProcessInfo.processInfo.environment["PREFS_KEYCHAIN_TESTS"] != nil),
        .timeLimit(.minutes(1)))
    struct KeychainTests {
        @Test func aSecretKeyIsAGenericPasswordItem() throws {
            let service = "com.example.prefs-tests.\(UUID().uuidString)"
            let prefs = Preferences(store: MemoryStore(), secrets: .system(service: service))
            let token = Preferences.Key<String?>("apiToken", storedAs: .secret)
            let limits = Preferences.Key<[String: Int]>("limits", default: [:], storedAs: .secret)
            defer { prefs.reset(token, limits) }
            try prefs.set("keychain-token", for: token)
            try prefs.set(["requests": 3], for: limits)
            let fresh = Preferences(store: prefs.store, secrets: .system(service: service))
            #expect(try fresh.value(for: token) == "keychain-token")
            #expect(try fresh.value(for: limits) == ["requests": 3])

            let query: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
                kSecAttrAccount as String: "apiToken", kSecReturnData as String: true,
            ]
            var result: CFTypeRef?
            #expect(SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess)
            #expect((result as? Data) == Data("keychain-token".utf8))

            prefs.reset(token)
            #expect(SecItemCopyMatching(query as CFDictionary, &result) == errSecItemNotFound)
            #expect(Preferences(store: prefs.store, secrets: .system(service: service))[token] == nil)
        }

        /// Shared with an access group needs the entitlement: a test binary has none, and is told
        /// so rather than given an item nobody shares.
        @Test func anAccessGroupWithoutTheEntitlementIsAClearError() {
            let prefs = Preferences(
                store: MemoryStore(),
                secrets: .system(service: "com.example.prefs-tests", accessGroup: "TEAM.shared"))
            let token = Preferences.Key<String?>("apiToken", storedAs: .secret)
            let refused = #expect(throws: StoreError.self) { try prefs.set("x", for: token) }
            #expect(refused?.kind == .secretStoreUnavailable)
        }
    }
#endif
