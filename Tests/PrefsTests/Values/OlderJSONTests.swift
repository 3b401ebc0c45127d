import Foundation
import PrefsSupport
import PrefsTestSupport
import Testing

@testable import Prefs

private struct Server: Codable, PreferenceValue, Equatable {
    var host: String
    var port: Int
    static let none = Server(host: "", port: 0)
}

private enum Connection: String, PreferenceKeyNamespace { case server, servers }

private final class ConnectionSettings: PreferenceGroup {
    @Preference var server = Server.none
    @Preference var servers: [Server] = []
}

/// Issue 49, item 5: a `Codable` value older code stored as JSON reads back.
///
/// Data (`UserDefaults.set(try JSONEncoder().encode(v), forKey:)`, the common pattern before the
/// Defaults library) or text (Defaults before version 5, `@AppStorage`) reads through every way
/// to declare a key, on every store; the read is reported once, as a notice, not as a fallback.
/// What cannot be read says so in one line.
@Suite struct OlderJSONTests {
    enum Form: String, CaseIterable, Sendable { case data, text }

    /// How `value` was stored by code before Prefs, in `form`, under `key`.
    private func storeAsOlderCodeDid<Value: Encodable>(
        _ value: Value, _ form: Form, key: String, in store: any PreferenceStore
    ) throws {
        let json = try JSONEncoder().encode(value)
        if let defaults = (store as? UserDefaultsStore)?.defaults {
            if form == .data {
                defaults.set(json, forKey: key)
            } else {
                defaults.set(String(decoding: json, as: UTF8.self), forKey: key)
            }
        } else {
            try store.setValue(
                form == .data ? .data(json) : .string(String(decoding: json, as: UTF8.self)), forKey: key)
        }
    }

    static let cases: [(StoreKind, Form)] = StoreKind.allCases.flatMap { kind in
        Form.allCases.map { (kind, $0) }
    }

    @Test(arguments: cases)
    func aCodableValueStoredAsJSONReadsThroughEveryDeclaration(store kind: StoreKind, form: Form) throws {
        let store = kind.makeStore()
        let recorder = IssueRecorder()
        let prefs = recorder.preferences(store)
        let server = Server(host: "db.example.com", port: 5432)
        let servers = [server, Server(host: "b", port: 1)]
        try storeAsOlderCodeDid(server, form, key: "server", in: store)
        try storeAsOlderCodeDid(servers, form, key: "servers", in: store)
        try storeAsOlderCodeDid(server, form, key: "Connection.server", in: store)
        try storeAsOlderCodeDid(servers, form, key: "Connection.servers", in: store)

        #expect(prefs[Preferences.Key<Server>("server", default: .none)] == server)
        #expect(prefs[Preferences.Key<[Server]>("servers", default: [])] == servers)
        #expect(prefs[Preferences.Key<Server?>("server")] == server)
        #expect(Connection.server.value(as: Server.self, in: prefs) == server)
        #expect(Connection.servers.value(as: [Server].self, in: prefs) == servers)
        let group = ConnectionSettings(preferences: prefs)
        #expect(group.server == server)
        #expect(group.servers == servers)

        // Read, not silent: notices naming the form, no fallback to the default.
        let issues = recorder.issues
        #expect(
            !issues.contains { if case .readFellBackToDefault = $0.kind { true } else { false } }, "\(issues)"
        )
        let named = form == .data ? "from JSON data" : "from JSON text"
        for key in ["server", "servers", "Connection.server", "Connection.servers"] {
            let notices = issues.filter { $0.key == key && $0.description.contains(named) }
            #expect(!notices.isEmpty, "\(key): \(issues)")
        }
        // Once per key with the standard diagnostics (one line on stderr, not one per read).
        let printed = Locked<[String]>([])
        let once = Preferences(
            store: store, diagnostics: .oncePerKey { issue in printed.withLock { $0.append("\(issue)") } })
        for _ in 0..<3 { _ = once[Preferences.Key<Server>("server", default: .none)] }
        #expect(printed.withLock { $0 }.count == 1, "\(printed.withLock { $0 })")

        // The next write stores the key's own form, read with no notice.
        let key = Preferences.Key<Server>("server", default: .none)
        try prefs.set(server, for: key)
        let before = recorder.issues.count
        #expect(prefs[key] == server && recorder.issues.count == before)
        #expect(
            prefs.store.value(forKey: "server")
                == .dictionary(["host": .string("db.example.com"), "port": .integer(5432)]))
    }

    struct Unreadable: Sendable, CustomTestStringConvertible {
        let stored: PropertyListValue
        let says: String
        var testDescription: String { says }
    }

    static let unreadable: [Unreadable] = [
        Unreadable(
            stored: .data(Data([0xde, 0xad, 0xbe, 0xef])), says: "expected Server, found data <4 bytes>"),
        Unreadable(
            stored: .data(Data(#"{"host":"a"}"#.utf8)),
            says: "expected Server, found JSON data that does not decode as one"),
        Unreadable(
            stored: .string(#"{"host":1,"port":2}"#),
            says: "expected Server, found JSON text that does not decode as one"),
        Unreadable(stored: .integer(3), says: "expected Server, found integer"),
    ]

    @Test(arguments: StoreKind.allCases, unreadable)
    func whatCannotBeReadIsSaidOnceInOneLine(store kind: StoreKind, _ case: Unreadable) throws {
        let store = kind.makeStore()
        let recorder = IssueRecorder()
        let prefs = recorder.preferences(store)
        try store.setValue(`case`.stored, forKey: "server")
        #expect(prefs[Preferences.Key<Server>("server", default: .none)] == .none)
        let issues = recorder.issues
        #expect(issues.count == 1, "\(issues)")
        let line = issues.first.map { "\($0)" } ?? ""
        #expect(line.contains(`case`.says), "\(line)")
        #expect(line.components(separatedBy: "expected").count == 2, "one 'expected': \(line)")
        #expect(line.components(separatedBy: "found").count == 2, "one 'found': \(line)")
        #expect(!line.contains("\n"))
    }
}
