// Calls of Prefs before 1.0 that are gone or renamed (CHANGELOG, "Migrating to 1.0"). Each line
// marked `// expect:` must fail to compile with an error on that line whose message holds the
// text after it: the message names the call to write instead. `.ci/check-doc-comments` compiles
// this file against the library after the doc comments' examples, and fails when a line compiles
// or its message says something else.
import Foundation
import Prefs

enum OldAccount: String, PreferenceKeyNamespace { case nick }

func oldCalls(_ prefs: Preferences, _ key: Preferences.Key<Double>) {
    _ = OldAccount.nick.string  // expect: read with value(as: String.self)
    _ = OldAccount.nick.bool  // expect: read with value(as: Bool.self)
    _ = OldAccount.nick.uniqueKey  // expect: renamed to 'storedName'
    _ = OldAccount.nick.storedBool  // expect: value(as: Bool.self) ?? false
    _ = OldAccount.nick.storedString  // expect: storedString is the article's, on enums declared UserDefaultSettable
    OldAccount.nick.store(nil, in: prefs)  // expect: call remove(in:)
    _ = Preferences.Key<Double>("v", default: 0.5, allowed: 0...1)  // expect: allowed: .range(lower...upper)
    _ = prefs.observe(key, options: .initial) { _ in }  // expect: initial: false starts with the next change
    prefs.reset()  // expect: remove every value with removeAll()
    _ = prefs.observeChanges { _ in }  // expect: observeAllChanges(handler:)
    _ = prefs.changes()  // expect: renamed to 'allChanges()'
    _ = prefs.observeChanges(to: key) { _ in }  // expect: observeAllChanges(handler:) every stored change
    _ = SQLiteStore.Options(busyTimeout: .seconds(1))  // expect: lockTimeout
    _ = try? SQLiteStore(path: "/tmp/x.sqlite").moveIn(fromUserDefaultsDomain: "d")  // expect: copyValues(fromUserDefaultsDomain:using:)
    _ = UserDefaultsStore(.standard, domainName: "d")  // expect: init(_:domain:synchronizesEachWrite:sizeLimit:)
    _ = UserDefaultsStore.standard.domainName  // expect: renamed to 'domain'
    _ = StoreError.Kind(rawValue: "busy")  // expect: a store of your own throws .other with its message
    _ = PreferenceIssue.Kind.writeFailed(CocoaError(.fileNoSuchFile))  // expect: renamed to 'writeLost'
    _ = StoreError(kind: .busy, store: "s", message: "m").store  // expect: renamed to 'storeDescription'
    _ = SQLiteStore.FileProtection(rawValue: "complete")  // expect: name the case
    _ = UserDefaultsStore.standard.defaults  // expect: 'defaults' is inaccessible
    OldData.name.store(value: "x", in: prefs)  // expect: in other preferences, store(_:in:) and value(as:in:)
    OldData.name.store(value: nil)  // expect: call remove(in:)
    _ = OldData.name.storedString(in: prefs)  // expect: value(as: String.self, in:)
}

enum OldData: String, UserDefaultSettable { case name }
