import Foundation

extension Preferences {
    /// Publishes the keys' descriptions (``Preferences/KeyDescription``: type, default, help,
    /// allowed values) to the store, beside the values, so tools see what the program declares:
    /// `prefs describe`, a `prefs write` that checks the value, `prefs read` of a key never set.
    ///
    /// ```swift
    /// try prefs.publish([.volume, .theme])
    /// ```
    ///
    /// Cheap enough for every launch: a store writes only descriptions that changed, and a newer
    /// program's description of a key replaces an older one's.
    public func publish(_ keys: [Keys]) throws {
        try publish(descriptions: keys.map(\.keyDescription))
    }

    /// The same for keys listed one by one.
    ///
    /// ```swift
    /// try prefs.publish(.volume, .theme)
    /// ```
    public func publish(_ first: Keys, _ more: Keys...) throws {
        try publish([first] + more)
    }

    /// Publishes the descriptions of a key namespace's cases: their stored names (they carry no
    /// type, so any value is accepted).
    ///
    /// ```swift
    /// enum Account: String, PreferenceKeyNamespace, CaseIterable { case name, age }
    /// try prefs.publish(casesOf: Account.self)
    /// ```
    public func publish<Namespace: PreferenceKeyNamespace & CaseIterable>(casesOf namespace: Namespace.Type)
        throws
    {
        try publish(
            descriptions: Namespace.allCases.map {
                KeyDescription(
                    name: $0.storedName, type: "", swiftType: "\(Namespace.self)", defaultValue: nil)
            })
    }

    /// Publishes descriptions as they are (for a group's properties, or a tool).
    func publish(descriptions: [KeyDescription]) throws {
        var stored: [String: PropertyListValue] = [:]
        for var description in descriptions {
            // Where the handle keeps a secret, for tools that show whether it is set.
            if description.isSecret { description.secretService = secretService }
            stored[description.name] = description.storedForm
        }
        do {
            try store.keep(keyDescriptions: stored)
        } catch {
            throw failure(error, writing: stored.keys.sorted())
        }
    }

    /// The key descriptions programs published to the store, by key name (a description this
    /// release cannot read is left out: that key reads as undeclared).
    ///
    /// ```swift
    /// prefs.keyDescriptions()["volume"]?.help  // "Playback volume"
    /// ```
    public func keyDescriptions() -> [String: KeyDescription] {
        var descriptions: [String: KeyDescription] = [:]
        for (name, stored) in store.publishedKeyDescriptions() {
            descriptions[name] = KeyDescription(name: name, stored: stored)
        }
        return descriptions
    }
}

extension PreferenceGroup {
    /// Publishes the descriptions of the group's `@Preference` properties (see
    /// ``Preferences/publish(_:)``).
    ///
    /// ```swift
    /// try settings.publish()
    /// ```
    public func publish() throws {
        let descriptions = propertyKeys.compactMap { slot(forKey: $0.key)?.key?.keyDescription }
        try preferences.publish(descriptions: descriptions)
        // `@Pref` properties, each in the preferences it lives in.
        for (preferences, description) in prefMemberDescriptions {
            try preferences.publish(descriptions: [description])
        }
    }
}
