import Foundation
import Prefs

// What a program published about its keys (`Preferences.publish`), as the tool uses it: `describe`,
// `reset`, the default of a key never set, and the check `write` makes.

extension StoreChoice {
    /// The key descriptions published to a domain, by key (none for a domain that does not exist).
    func declarations(_ domain: String) throws -> [String: Preferences.KeyDescription] {
        // UserDefaults keeps descriptions in a companion domain, which exists before any value does.
        let store: (any PreferenceStore)?
        if case .userDefaults = self {
            store = try self.store(domain)
        } else {
            store = try existingStore(domain)
        }
        guard let store else { return [:] }
        return Preferences(store: store, diagnostics: PreferenceDiagnostics { _ in }).keyDescriptions()
    }
}

extension Preferences.KeyDescription {
    /// The type as `read-type` prints it (`float` for `-float`).
    var typeName: String? {
        switch type {
        case "-bool": "boolean"
        case "-int": "integer"
        case "-float": "float"
        case "-string": "string"
        case "-date": "date"
        case "-data": "data"
        case "-array": "array"
        case "-dict": "dictionary"
        default: nil
        }
    }

    /// `-float (Double)`, with the values it accepts.
    var declared: String {
        // Spelled as Swift writes it here too: an older release published `Optional<URL>`.
        "\(type.isEmpty ? "any type" : type) (\(swiftSpelling(swiftType)))"
            + (allowed.map { " accepting \($0)" } ?? "")
    }
}

/// Throws when an administrator locked `key` in `domain` (``SystemLayer``): the tool writes
/// nothing the program would not read.
func checkNotLocked(_ key: String, domain: String, in store: StoreChoice) throws {
    let layer = store.administratorLayer(domain)
    guard layer.lockedValue(forKey: key) != nil else { return }
    throw CLIError.locked(
        "\(key) in \(domain) is locked by an administrator (\(layer.path ?? "managed preferences")); nothing was written"
    )
}

/// Where the value the program reads comes from: locked, set by the user, a system default, or
/// the code's default.
private func source(of key: String, value: PropertyListValue?, layer: SystemLayer) -> String {
    if let locked = layer.lockedValue(forKey: key) {
        return "\(PlistText.described(locked)) (locked by \(layer.path ?? "managed preferences"))"
    }
    if let value { return "\(PlistText.described(value)) (set)" }
    if let fallback = layer.defaultValue(forKey: key) {
        return "\(PlistText.described(fallback)) (system default, \(layer.path ?? "managed preferences"))"
    }
    return "not set (the code's default)"
}

/// `describe DOMAIN [KEY]`: every declared key with its type, default, help, allowed values and
/// current value (and where it comes from); values set but not declared apart.
func describe(_ invocation: Invocation) throws {
    let domain = invocation.argument(0)
    let declarations = try invocation.store.declarations(domain)
    // Not the library's records: `migrations` and `sync-status` show those.
    let values = ReservedKeys.withoutRecords(try invocation.store.existingStore(domain)?.snapshot() ?? [:])
    let layer = invocation.store.administratorLayer(domain)
    // The program reports a system file it cannot use; the tool says so too, naming it.
    if let problem = layer.problem { Output.error(problem) }
    guard !declarations.isEmpty || !values.isEmpty || layer.path != nil else {
        throw CLIError.notFound("Domain \(domain) does not exist" + invocation.store.elsewhere(domain))
    }
    var names = declarations.keys.sorted()
    var undeclared = values.filter { declarations[$0.key.name] == nil }
    if invocation.arguments.count == 2 {
        let key = invocation.argument(1)
        guard declarations[key] != nil || values[StoreKey(key)] != nil else {
            throw CLIError.notFound("\(key) is neither declared nor set in \(domain)")
        }
        names = declarations[key] == nil ? [] : [key]
        undeclared = undeclared.filter { $0.key == StoreKey(key) }
    }
    if invocation.json {
        var declared: [String: PropertyListValue] = [:]
        for name in names {
            guard case .dictionary(var entries) = declarations[name]!.storedForm else { continue }
            entries["secretService"] = nil
            if declarations[name]!.isSecret {
                let lookup = SecretLookup(
                    declarations[name]!, domain: domain, store: try invocation.store.store(domain))
                // Whether it is set, when the secret store answers; never the value.
                do {
                    entries["set"] = .bool(try lookup.value() != nil)
                } catch {
                    entries["problem"] = .string("\(error)")
                }
                declared[name] = .dictionary(entries)
                continue
            }
            entries["value"] = values[StoreKey(name)]
            entries["set"] = .bool(values[StoreKey(name)] != nil)
            entries["locked"] = layer.lockedValue(forKey: name)
            entries["systemDefault"] = layer.defaultValue(forKey: name)
            declared[name] = .dictionary(entries)
        }
        let undeclaredValues = Dictionary(uniqueKeysWithValues: undeclared.map { ($0.key.name, $0.value) })
        Output.line(
            PlistText.json(
                .dictionary(["declared": .dictionary(declared), "undeclared": .dictionary(undeclaredValues)]))
        )
        return
    }
    for name in names {
        let description = declarations[name]!
        let value = values[StoreKey(name)]
        var shown = source(of: name, value: value, layer: layer)
        if description.isSecret {
            shown = SecretLookup(description, domain: domain, store: try invocation.store.store(domain)).state
        }
        let defaultText = description.defaultValue.map { PlistText.described($0) } ?? "none"
        Output.line(
            "\(PlistText.quoteIfNeeded(name)): \(description.declared), default \(defaultText), value \(shown)"
        )
        if let help = description.help { Output.line("    \(help)") }
        if let value, let problem = description.problem(with: value) {
            Output.line("    the program reads its default: \(problem)")
        }
    }
    if !undeclared.isEmpty {
        Output.line("set but not declared: \(PlistText.oldStyle(domain: undeclared))")
    }
    let lockedElsewhere = layer.lockedValues.filter { declarations[$0.key.name] == nil }
    if !lockedElsewhere.isEmpty, invocation.arguments.count == 1 {
        Output.line(
            "locked but not declared (\(layer.path ?? "")): \(PlistText.oldStyle(domain: lockedElsewhere))")
    }
}

/// `reset DOMAIN KEY…`: removes the values, so the program's defaults show.
func reset(_ invocation: Invocation) throws {
    let domain = invocation.argument(0)
    guard let store = try invocation.store.existingStore(domain) else {
        throw CLIError.notFound("Domain \(domain) does not exist" + invocation.store.elsewhere(domain))
    }
    let declarations = try invocation.store.declarations(domain)
    var keys = invocation.arguments.dropFirst()
    for key in keys {
        guard let declared = declarations[key], declared.isSecret else { continue }
        try writeSecret(nil, declared, domain: domain, in: invocation)
    }
    keys.removeAll { declarations[$0]?.isSecret == true }
    do {
        try store.transaction { t in for key in keys { t[key] = nil } }
    } catch {
        throw CLIError.store("cannot reset \(keys.joined(separator: ", ")) in \(domain): \(error)")
    }
}

/// The check every command that writes makes of a declared key's new value.
///
/// First the type of the value and of everything inside it, then the allowed values. Refused
/// (exit 64, nothing written) unless `--force`, which writes and says what the program will read
/// instead.
func checkDeclared(
    _ value: PropertyListValue, key: String, in declarations: [String: Preferences.KeyDescription],
    force: Bool
)
    throws
{
    guard let description = declarations[key], let problem = description.problem(with: value) else { return }
    let declared = "\(key) is declared \(description.declared)"
    guard force else {
        throw CLIError.badInput("\(declared); \(problem); nothing was written (--force writes it anyway)")
    }
    let fallback = description.defaultValue.map { PlistText.oldStyle($0) } ?? "nothing (no default)"
    Output.error(
        "\(declared); \(problem); written with --force: the program reads its default, \(fallback), instead")
}

/// A domain's new entries as the program reads them: each declared key's old-style text read as
/// its declared type (`untyped`), then checked as ``checkDeclared(_:key:in:force:)`` does, so
/// `write DOMAIN 'PLIST'` and `import` write nothing the program cannot read.
func conformDeclared(
    _ entries: [StoreKey: PropertyListValue], untyped: Bool,
    to declarations: [String: Preferences.KeyDescription], force: Bool
) throws -> [StoreKey: PropertyListValue] {
    var conformed = entries
    for (key, value) in entries.sorted(by: { $0.key.name < $1.key.name }) {
        guard let description = declarations[key.name] else { continue }
        var converted = value
        if untyped {
            do {
                converted = try DeclaredShape(description).conform(value, at: "", untyped: true)
            } catch CLIError.badInput(let problem) where !force {
                throw CLIError.badInput(
                    "\(key.name) is declared \(description.declared); \(problem); nothing was written (--force writes it anyway)"
                )
            } catch {
                converted = value  // with --force, as the text has it (and said so below)
            }
        }
        try checkDeclared(converted, key: key.name, in: declarations, force: force)
        conformed[key] = converted
    }
    return conformed
}
