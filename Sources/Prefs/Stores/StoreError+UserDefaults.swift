import Foundation

extension StoreError {
    /// A ``UserDefaultsStore``'s error about the suite `suite` (`nil`: a `UserDefaults` without a
    /// name), with a message made for its kind.
    static func userDefaults(_ kind: Kind, suite: String?, keys: [String] = []) -> StoreError {
        let message: String
        switch kind {
        case .suiteRefused:
            message =
                "Foundation cannot open this suite (a suite name may not be the app's own bundle "
                + "identifier or NSGlobalDomain; use UserDefaultsStore.standard for the app's own domain)"
        case .keyConflict where keys.count == 2:
            func scalars(_ text: String) -> String {
                text.unicodeScalars.map { "U+" + String($0.value, radix: 16, uppercase: true) }
                    .joined(separator: " ")
            }
            let (key, storedKey) = (keys[0], keys[1])
            message =
                "the key \(String(reflecting: key)) (\(scalars(key))) and the stored key "
                + "\(String(reflecting: storedKey)) (\(scalars(storedKey))) are one key to Foundation, which "
                + "would merge them; nothing was written (SQLiteStore keeps both)"
        case .invalidKey:
            message =
                "\(keys.map { String(reflecting: $0) }.joined(separator: ", ")) is reserved: keys starting "
                + "with \"\(UserDefaultsStore.descriptionPrefix)\" hold key descriptions; nothing was written"
        case .writeFailed:
            message =
                "Foundation could not write the domain to disk (synchronize() failed); "
                + "\(keys.joined(separator: ", ")) kept their previous values"
        default:
            message = "\(kind) \(keys.joined(separator: ", "))"
        }
        return StoreError(
            kind: kind, store: "UserDefaults(suite: \(suite ?? "custom"))", message: message, keys: keys)
    }
}
