#if !canImport(Darwin)
    import CPrefsSecretService
    import Foundation
    import PrefsSupport

    /// The Secret Service over D-Bus (GNOME Keyring, KWallet), through libsecret loaded on
    /// first use (`CPrefsSecretService`): one item per key in the default keyring.
    ///
    /// One call at a time: libsecret's calls are safe from any thread, but a failure forgets
    /// the shared connection, which another thread's call may be using.
    final class SecretService: SecretBackend {
        private let calls = Locked(())
        var name: String { "the Secret Service" }

        func item(service: String, account: String) throws -> SecretItem? {
            try againIfGone {
                var bytes: UnsafeMutablePointer<UInt8>?
                var length = 0
                var form: UnsafeMutablePointer<CChar>?
                var found: Int32 = 0
                var message: UnsafeMutablePointer<CChar>?
                let failure = prefs_secret_lookup(service, account, &bytes, &length, &form, &found, &message)
                defer {
                    free(bytes)
                    free(form)
                }
                try check(failure, message)
                guard found != 0, let bytes else { return nil }
                return SecretItem(
                    bytes: Data(bytes: bytes, count: length), form: form.map { String(cString: $0) } ?? "")
            }
        }

        func setItem(_ item: SecretItem?, service: String, account: String, label: String) throws {
            try againIfGone {
                var message: UnsafeMutablePointer<CChar>?
                guard let item else {
                    let failure = prefs_secret_clear(service, account, &message)
                    return try check(failure, message)
                }
                let failure = item.bytes.withUnsafeBytes { bytes in
                    prefs_secret_store(
                        service, account, item.form, label,
                        bytes.baseAddress?.assumingMemoryBound(to: UInt8.self),
                        bytes.count, &message)
                }
                try check(failure, message)
            }
        }

        /// Runs `call` (one at a time), and once more when the service it reached went away: a
        /// daemon that was replaced is found again, one that is gone is `.secretStoreUnavailable`.
        private func againIfGone<Result>(_ call: () throws -> Result) throws -> Result {
            try calls.withLock { _ in
                do {
                    return try call()
                } catch let gone as Gone {
                    do {
                        return try call()
                    } catch is Gone {
                        throw StoreError(kind: .secretStoreUnavailable, store: name, message: gone.message)
                    }
                }
            }
        }

        /// The service went away during a call (see `againIfGone`).
        private struct Gone: Error {
            let message: String
        }

        /// Throws the error a failure means, with libsecret's message (freed here).
        private func check(
            _ failure: prefs_secret_failure, _ message: UnsafeMutablePointer<CChar>?
        ) throws {
            let text = message.map { String(cString: $0) } ?? ""
            free(message)
            let kind: StoreError.Kind
            switch failure {
            case PREFS_SECRET_OK: return
            case PREFS_SECRET_UNAVAILABLE: kind = .secretStoreUnavailable
            case PREFS_SECRET_LOCKED: kind = .protectedDataUnavailable
            case PREFS_SECRET_GONE: throw Gone(message: text)
            default: kind = .other
            }
            throw StoreError(kind: kind, store: name, message: text)
        }
    }
#endif
