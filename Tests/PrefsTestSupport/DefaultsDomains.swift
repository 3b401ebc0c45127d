import Foundation

/// `UserDefaults` domains a test writes in another process, named for that test alone and
/// removed afterwards: on a Mac, cfprefsd keeps them in the developer's own preferences whatever
/// `HOME` says, so `swift test` must leave none behind.
///
/// ```swift
/// let domain = ScratchDefaultsDomain("com.example.legacy")
/// defer { domain.remove() }
/// ```
public struct ScratchDefaultsDomain: Sendable {
    /// The unique name: the given prefix, a dot, and a UUID's hex digits.
    public let name: String

    /// A fresh name under `prefix`.
    public init(_ prefix: String) {
        name = prefix + "." + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
    }

    /// Removes the domain from the user's defaults (a Mac's cfprefsd; elsewhere the tests'
    /// processes keep their defaults in a throwaway `XDG_CONFIG_HOME`, removed with it).
    public func remove() {
        // standard-ok: removes only this scratch domain, named for one test, from the user's defaults.
        UserDefaults.standard.removePersistentDomain(forName: name)
        #if canImport(Darwin)
            CFPreferencesSynchronize(name as CFString, kCFPreferencesCurrentUser, kCFPreferencesAnyHost)
        #endif
    }
}
