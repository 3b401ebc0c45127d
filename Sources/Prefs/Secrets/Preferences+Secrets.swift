import Foundation

/// Secret keys (``Preferences/StoredForm/secret``): their values live in the handle's
/// ``SecretStore``; the store holds only a stamp beside each, changed by every write, which tells
/// every process (and every observer) that the secret changed.
///
/// No message, diagnostic or error of these paths holds a secret's value: a value the key's type
/// cannot read is reported by its type alone.
extension Preferences {
    /// The name of the stamp kept in the store beside a secret key.
    static func secretStampName(_ name: String) -> String { ReservedKeys.secretPrefix + name }

    /// The service the handle's secrets are kept under: the one given, else the store's domain,
    /// else the program's.
    static func secretService(_ secrets: SecretStore, for store: any PreferenceStore) -> String {
        if let service = secrets.service { return service }
        if let domain = filesStore(of: store)?.domainForSecrets { return domain }
        return Bundle.main.bundleIdentifier ?? ProcessInfo.processInfo.processName
    }

    /// The secret's value, or the key's default when none is stored or it cannot be read (told
    /// to the diagnostics, without the value).
    @usableFromInline
    func secretValue<Value>(of key: Key<Value>) -> Value {
        do {
            guard let stored = try storedSecret(key.name, stampName: key.watchedName) else {
                return key.defaultValue
            }
            return try decodeSecret(stored, for: key)
        } catch {
            diagnostics.report(
                PreferenceIssue(
                    key: key.name, store: secrets.backend.name,
                    kind: .readFellBackToDefault(Self.readFailure(error))))
            return key.defaultValue
        }
    }

    /// A secret store's failure as a read's: its message alone (the issue names the store).
    private static func readFailure(_ error: any Error) -> PreferenceError {
        if let error = error as? PreferenceError { return error }
        let message = (error as? StoreError)?.message ?? "\(error)"
        return PreferenceError(.unreadable, message, underlying: error)
    }

    /// The value an observer is given for a change of the secret's stamp: the default when it
    /// was removed, the value written with the stamp when this process wrote it, else the
    /// current one.
    func secretValue<Value>(of key: Key<Value>, atStamp stamp: PropertyListValue?) -> Value {
        guard let stamp else { return key.defaultValue }
        guard let written = secrets.cache.written(secretService, key.name, stamp: stamp),
            let value = written.value
        else { return secretValue(of: key) }
        return (try? decodeSecret(value, for: key)) ?? secretValue(of: key)
    }

    /// The secret's value, throwing what ``secretValue(of:)`` reports.
    func strictSecretValue<Value>(of key: Key<Value>) throws -> Value {
        guard let stored = try storedSecret(key.name, stampName: key.watchedName) else {
            return key.defaultValue
        }
        return try decodeSecret(stored, for: key)
    }

    /// Whether a secret is stored for the key (a secret store that cannot be reached is told to
    /// the diagnostics, and answers no).
    func hasSecret(_ name: String) -> Bool {
        do {
            return try storedSecret(name) != nil
        } catch {
            diagnostics.report(
                PreferenceIssue(
                    key: name, store: secrets.backend.name,
                    kind: .readFellBackToDefault(Self.readFailure(error))))
            return false
        }
    }

    /// Stores the secret (`nil` deletes it), then changes its stamp in the store, so every
    /// process's next read asks the secret store again.
    func setSecret<Value>(_ value: Value, for key: Key<Value>) throws {
        let encoded: PropertyListValue?
        do {
            encoded = try encode(value, for: key)
        } catch let error as PreferenceError where error.kind == .notAllowed {
            // The refusal quotes the value: not for a secret.
            throw PreferenceError(
                .notAllowed, "the value is not one the key allows (\(key.keyDescription.allowed ?? ""))"
            )
            .naming(key: key.name, store: secrets.backend.name)
        }
        try writeSecret(encoded, named: key.name)
    }

    /// Stores or deletes the stored form of a secret, then changes its stamp.
    package func writeSecret(_ value: PropertyListValue?, named name: String) throws {
        let stamp = try putSecret(value, named: name)
        do {
            try store.setValue(stamp, forKey: Self.secretStampName(name))
        } catch {
            throw StoreError(
                kind: (error as? StoreError)?.kind ?? .other, store: store.description,
                message:
                    "the secret was written to \(secrets.backend.name), but its stamp in the store was not, so other processes may read the old one until they restart: \(error)",
                keys: [name])
        }
    }

    /// Stores or deletes the stored form of a secret in the secret store, returning the stamp
    /// the caller writes beside it in the store (`nil`: removed), which this process's copy
    /// is now current at.
    func putSecret(_ value: PropertyListValue?, named name: String) throws -> PropertyListValue? {
        // Within a value's limit, as every store's write is: encoding many copies of one large
        // value would otherwise count past a 32-bit `Int` (every Apple Watch) and trap.
        try value?.checkStorable(key: name, store: secrets.backend.name)
        do {
            try secrets.backend.setItem(
                value.map(SecretItem.init), service: secretService, account: name,
                label: "\(name) (\(secretService))")
        } catch {
            throw failure(error, writing: [name])
        }
        let stamp = value.map { _ in PropertyListValue.integer(Int64.random(in: .min ... .max)) }
        secrets.cache.remember(.init(stamp: stamp, value: value), secretService, name, wrote: true)
        return stamp
    }

    /// The secret's stored form: this process's copy while the store's stamp is the one it was
    /// read or written at, else the secret store's.
    package func storedSecret(_ name: String, stampName: String? = nil) throws -> PropertyListValue? {
        let stamp = store.value(forKey: stampName ?? Self.secretStampName(name))
        if let entry = secrets.cache.entry(secretService, name), entry.stamp == stamp { return entry.value }
        let item = try secrets.backend.item(service: secretService, account: name)
        let value: PropertyListValue?
        do {
            value = try item?.value()
        } catch {
            throw PreferenceError(
                .unreadable, "the item in \(secrets.backend.name) is not one Prefs wrote, or is damaged",
                underlying: error)
        }
        secrets.cache.remember(.init(stamp: stamp, value: value), secretService, name)
        return value
    }

    /// The stored secret as the key's type; a mismatch names the type found, never the value.
    private func decodeSecret<Value>(_ stored: PropertyListValue, for key: Key<Value>) throws -> Value {
        do {
            return try key.decode(stored)
        } catch {
            throw PreferenceError(
                .typeMismatch,
                "the secret stored in \(secrets.backend.name) is a \(stored.typeName), not a \(swiftSpelling(of: Value.self)) (its value is not shown)"
            )
            .naming(readOf: key.name, store: secrets.backend.name)
        }
    }

    /// The error of a secret key written inside ``update(_:)``: the secret store is not part of
    /// the store's transaction, so the write could not be applied together with the others.
    static func secretInUpdate(_ name: String) -> PreferenceError {
        PreferenceError(
            .notRepresentable,
            "a secret key is not written inside update(_:): its value goes to the secret store, outside the store's transaction; write it with set(_:for:) or the subscript"
        )
        .naming(key: name, store: "update")
    }

    /// Deletes the secrets of these keys and their stamps; a failure is told to the diagnostics.
    func resetSecrets(_ names: [String]) {
        for name in names {
            do {
                try writeSecret(nil, named: name)
            } catch {
                report(error, key: name)
            }
        }
    }
}
