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
            try calls.withLock { _ in
                var bytes: UnsafeMutablePointer<UInt8>?
                var length = 0
                var contentType: UnsafeMutablePointer<CChar>?
                var found: Int32 = 0
                var message: UnsafeMutablePointer<CChar>?
                let failure = prefs_secret_lookup(
                    service, account, &bytes, &length, &contentType, &found, &message)
                defer {
                    free(bytes)
                    free(contentType)
                }
                try check(failure, message, reading: account)
                guard found != 0, let bytes else { return nil }
                return SecretItem(
                    bytes: Data(bytes: bytes, count: length),
                    contentType: contentType.map { String(cString: $0) } ?? SecretItem.textType)
            }
        }

        func setItem(_ item: SecretItem?, service: String, account: String, label: String) throws {
            try calls.withLock { _ in
                var message: UnsafeMutablePointer<CChar>?
                guard let item else {
                    let failure = prefs_secret_clear(service, account, &message)
                    return try check(failure, message, reading: nil)
                }
                let failure = item.bytes.withUnsafeBytes { bytes in
                    prefs_secret_store(
                        service, account, label, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self),
                        bytes.count, item.contentType, &message)
                }
                try check(failure, message, reading: nil)
            }
        }

        /// Throws the error a failure means, with libsecret's message (freed here).
        private func check(
            _ failure: prefs_secret_failure, _ message: UnsafeMutablePointer<CChar>?, reading: String?
        ) throws {
            let text = message.map { String(cString: $0) } ?? ""
            free(message)
            let kind: StoreError.Kind
            switch failure {
            case PREFS_SECRET_OK: return
            case PREFS_SECRET_UNAVAILABLE: kind = .secretStoreUnavailable
            case PREFS_SECRET_LOCKED: kind = .protectedDataUnavailable
            default: kind = .other
            }
            throw StoreError(kind: kind, store: name, message: text)
        }
    }
#endif
