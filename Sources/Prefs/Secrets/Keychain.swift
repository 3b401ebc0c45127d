#if canImport(Security)
    import Foundation
    import Security

    /// The Keychain: one generic password item per key (service: the domain; account: the
    /// key's name), with its form (text, or Prefs' encoding of any other value) in the item's
    /// generic attribute.
    ///
    /// On macOS, items go to the keychain `SecItem` chooses for the process (the login keychain
    /// for an app outside the sandbox), where the accessibility class does not apply.
    struct Keychain: SecretBackend {
        let accessGroup: String?
        let readableWhileLocked: Bool
        let synchronizable: Bool
        var name: String { "the Keychain" }

        /// What finds the item.
        private func query(service: String, account: String) -> [String: Any] {
            var query: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword,
                kSecAttrService as String: service,
                kSecAttrAccount as String: account,
                kSecAttrSynchronizable as String: synchronizable,
            ]
            if let accessGroup {
                query[kSecAttrAccessGroup as String] = accessGroup
                // macOS's file keychain drops the access group (and the lock class) without a
                // word: a shared item goes to the data protection keychain, where a program
                // without the entitlement fails clearly (.secretStoreUnavailable). Ignored on iOS.
                query[kSecUseDataProtectionKeychain as String] = true
            }
            return query
        }

        /// The accessibility class the options choose (…ThisDeviceOnly unless synced: a synced
        /// item cannot be tied to one device).
        private var accessibility: CFString {
            switch (readableWhileLocked, synchronizable) {
            case (true, false): kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
            case (true, true): kSecAttrAccessibleAfterFirstUnlock
            case (false, false): kSecAttrAccessibleWhenUnlockedThisDeviceOnly
            case (false, true): kSecAttrAccessibleWhenUnlocked
            }
        }

        func item(service: String, account: String) throws -> SecretItem? {
            var query = query(service: service, account: account)
            query[kSecReturnData as String] = true
            query[kSecReturnAttributes as String] = true
            query[kSecMatchLimit as String] = kSecMatchLimitOne
            var result: CFTypeRef?
            let status = SecItemCopyMatching(query as CFDictionary, &result)
            if status == errSecItemNotFound { return nil }
            try check(status)
            guard let attributes = result as? [String: Any],
                let bytes = attributes[kSecValueData as String] as? Data
            else {
                throw StoreError(kind: .other, store: name, message: "the item came back without its data")
            }
            let form = (attributes[kSecAttrGeneric as String] as? Data).flatMap {
                String(data: $0, encoding: .utf8)
            }
            return SecretItem(bytes: bytes, form: form ?? "")
        }

        func setItem(_ item: SecretItem?, service: String, account: String, label: String) throws {
            let query = query(service: service, account: account)
            guard let item else {
                // The synced copy and the device's are two items: a reset deletes both.
                var every = query
                every[kSecAttrSynchronizable as String] = kSecAttrSynchronizableAny
                let status = SecItemDelete(every as CFDictionary)
                if status != errSecItemNotFound { try check(status) }
                return
            }
            let attributes: [String: Any] = [
                kSecValueData as String: item.bytes,
                kSecAttrGeneric as String: Data(item.form.utf8),
                kSecAttrLabel as String: label,
                kSecAttrAccessible as String: accessibility,
            ]
            var status = SecItemUpdate(query as CFDictionary, attributes as CFDictionary)
            if status == errSecItemNotFound {
                status = SecItemAdd(query.merging(attributes) { _, new in new } as CFDictionary, nil)
                // Another process added it in between: update that one.
                if status == errSecDuplicateItem {
                    status = SecItemUpdate(query as CFDictionary, attributes as CFDictionary)
                }
            }
            try check(status)
        }

        /// Throws the error a status means.
        private func check(_ status: OSStatus) throws {
            guard status != errSecSuccess else { return }
            let text = SecCopyErrorMessageString(status, nil) as String? ?? "OSStatus \(status)"
            switch status {
            case errSecInteractionNotAllowed:
                throw StoreError(
                    kind: .protectedDataUnavailable, store: name,
                    message: "the item is not readable while the device is locked, or needs a prompt: \(text)"
                )
            case errSecMissingEntitlement, errSecNotAvailable, errSecNoSuchKeychain, errSecNoDefaultKeychain:
                throw StoreError(kind: .secretStoreUnavailable, store: name, message: text)
            default:
                throw StoreError(kind: .other, store: name, message: "\(text) (OSStatus \(status))")
            }
        }
    }
#endif
