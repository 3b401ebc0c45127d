import Foundation
import Prefs
import Testing

/// A `UserDefaultsStore` lists only the app's own defaults (issue 48, item 8).
///
/// The privacy manifest's reason CA92.1 covers defaults only the app itself can reach; a store
/// without a domain name listed `dictionaryRepresentation()`, which takes in the global domain,
/// the command-line arguments and every registered default.
@Suite struct UserDefaultsOwnDomainTests {
    @Test func aStoreWithoutADomainListsOnlyTheAppsOwnDomain() throws {
        let suite = TestDefaults.uniqueSuiteName()
        let defaults = try #require(UserDefaults(suiteName: suite))
        let registered = "registered.\(UUID().uuidString)"
        defaults.register(defaults: [registered: 1])
        let store = UserDefaultsStore(defaults)
        #expect(defaults.dictionaryRepresentation()[registered] != nil)  // what it listed before

        // standard-ok: only reads the app's own domain, to compare; nothing is written to it.
        let own = UserDefaults.standard.persistentDomain(forName: UserDefaultsStore.appDomainName) ?? [:]
        #expect(Set(store.snapshot().keys.map(\.name)) == Set(own.keys))
        #expect(store.snapshot()[StoreKey(registered)] == nil)
        #expect(!Preferences(store: store).storedKeys.contains(registered))
    }
}
