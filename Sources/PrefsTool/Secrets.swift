import Foundation
import Prefs

/// A secret key a program declared, as the tool reads it.
///
/// Declared ``Preferences/StoredForm/secret``: its value is in the system's secret store, under the service the program published (else the domain), never in
/// the store the tool reads. The tool says whether it is set, and prints it only when asked.
struct SecretLookup {
    let description: Preferences.KeyDescription
    let preferences: Preferences

    init(_ description: Preferences.KeyDescription, domain: String, store: any PreferenceStore) {
        self.description = description
        preferences = Preferences(
            store: store, diagnostics: PreferenceDiagnostics { _ in },
            secrets: .system(service: description.secretService ?? domain))
    }

    /// The secret's stored form, or `nil` when none is set; throws what the secret store said.
    func value() throws -> PropertyListValue? {
        try preferences.storedSecret(description.name)
    }

    /// How `describe` shows it: whether it is set, never the value.
    var state: String {
        do {
            return try value() == nil ? "not set (secret)" : "set (secret, not shown)"
        } catch {
            return "unknown (secret): \(error)"
        }
    }
}

/// `write DOMAIN KEY VALUE` of a secret key (`value`), or `reset` (`nil`): into the system's
/// secret store, with its stamp in the store, as the program writes it.
func writeSecret(
    _ value: PropertyListValue?, _ declared: Preferences.KeyDescription, domain: String,
    in invocation: Invocation
) throws {
    let lookup = SecretLookup(declared, domain: domain, store: try invocation.store.store(domain))
    do {
        try lookup.preferences.writeSecret(value, named: declared.name)
    } catch {
        let what = value == nil ? "remove" : "write"
        throw CLIError.store("cannot \(what) the secret \(declared.name) of \(domain): \(error)")
    }
}

/// `read DOMAIN KEY` of a secret key: the value with `--show-secret`; otherwise whether it is
/// set, on stderr, and nothing on stdout.
func readSecret(_ declared: Preferences.KeyDescription, domain: String, in invocation: Invocation) throws {
    let store = try invocation.store.store(domain)
    let lookup = SecretLookup(declared, domain: domain, store: store)
    let value: PropertyListValue?
    do {
        value = try lookup.value()
    } catch {
        throw CLIError.store("cannot read the secret \(declared.name) of \(domain): \(error)")
    }
    guard invocation.showSecrets else {
        let state = value == nil ? "is not set" : "is set"
        Output.error(
            "\(declared.name) is a secret kept in the system's secret store, not in \(domain); it \(state) (--show-secret prints it)"
        )
        return
    }
    guard let value else {
        throw CLIError.notFound("The secret \(declared.name) of \(domain) is not set")
    }
    invocation.printValue(value)
}
