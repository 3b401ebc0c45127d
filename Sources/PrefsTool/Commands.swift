import Foundation
import Prefs

/// Everything a command needs: the chosen store, the output options and its own arguments.
struct Invocation: Sendable {
    let store: StoreChoice
    let json: Bool
    var format: PlistText.FileFormat
    /// `--force`: `write` stores a value its key's declaration refuses.
    var force = false
    /// `--show-secret`: `read` prints a secret key's value (otherwise only whether it is set).
    var showSecrets = false
    /// `--stdin`: the value `write DOMAIN KEY` takes, read from standard input.
    var input: String?
    let arguments: [String]

    func argument(_ index: Int) -> String { arguments[index] }

    /// Prints a value: bare or old-style plist text, or JSON with `--json`.
    func printValue(_ value: PropertyListValue) {
        Output.line(json ? PlistText.json(value) : PlistText.bare(value))
    }

    /// Prints a domain's keys and values, every key exact.
    func printDomain(_ entries: [StoreKey: PropertyListValue]) {
        Output.line(json ? PlistText.json(domain: entries) : PlistText.oldStyle(domain: entries))
    }
}

/// One verb of the tool: its usage, what it does, an example, how many arguments it takes.
struct Command: Sendable {
    let name: String
    let usage: String
    let summary: String
    let example: String
    let arguments: ClosedRange<Int>
    let run: @Sendable (Invocation) throws -> Void
}

/// The verbs, in the order `--help` lists them.
let commands: [Command] = [
    Command(
        name: "read", usage: "read [DOMAIN [KEY]]",
        summary: "print every domain, one domain, or one value (a value bare, a collection as plist text)",
        example: "prefs read com.example.app volume", arguments: 0...2, run: read),
    Command(
        name: "read-type", usage: "read-type DOMAIN KEY",
        summary: "print the type of a value: string, integer, float, boolean, date, data, array, dictionary",
        example: "prefs read-type com.example.app volume", arguments: 2...2, run: readType),
    Command(
        name: "write", usage: "write DOMAIN KEY VALUE | write DOMAIN 'PLIST'",
        summary: """
            store a value: plist text (old-style or XML), or a typed flag: -string S, -int N,
                  -integer N, -float F, -bool[ean] true|false|yes|no, -date D, -data HEX, -array V…,
                  -array-add V…, -dict K V…, -dict-add K V…; with a plist dictionary alone, replace
                  the whole domain. A key the program declares takes its declared type, and a value
                  it would not read is refused (--force writes it anyway)
            """,
        example: "prefs write com.example.app volume -float 0.5", arguments: 2...Int.max, run: write),
    Command(
        name: "describe", usage: "describe DOMAIN [KEY]",
        summary: """
            every key the program declares (type, default, help, allowed values) with its value,
                  and values set but not declared (--json for scripts)
            """,
        example: "prefs describe com.example.app", arguments: 1...2, run: describe),
    Command(
        name: "reset", usage: "reset DOMAIN KEY…", summary: "remove values, so the program's defaults show",
        example: "prefs reset com.example.app volume theme", arguments: 2...Int.max, run: reset),
    Command(
        name: "delete", usage: "delete DOMAIN [KEY]", summary: "remove one key, or the whole domain",
        example: "prefs delete com.example.app volume", arguments: 1...2, run: delete),
    Command(
        name: "rename", usage: "rename DOMAIN OLD NEW", summary: "move a value to another key",
        example: "prefs rename com.example.app volume loudness", arguments: 3...3, run: rename),
    Command(
        name: "domains", usage: "domains", summary: "list every domain in the store",
        example: "prefs domains", arguments: 0...0, run: domains),
    Command(
        name: "find", usage: "find WORD", summary: "print keys and values containing WORD, in every domain",
        example: "prefs find volume", arguments: 1...1, run: find),
    Command(
        name: "export", usage: "export DOMAIN PATH|- [--format xml|json|binary]",
        summary: "write a domain to a plist file (XML unless --format says otherwise), or to stdout with -",
        example: "prefs export com.example.app backup.plist", arguments: 2...2, run: export),
    Command(
        name: "import", usage: "import DOMAIN PATH|-",
        summary: "merge an XML, binary or JSON plist dictionary into a domain (stdin with -)",
        example: "prefs import com.example.app backup.plist", arguments: 2...2, run: importFile),
    Command(
        name: "watch", usage: "watch DOMAIN [KEY]",
        summary: "print each change as it happens, from any process, until interrupted",
        example: "prefs watch com.example.app volume", arguments: 1...2, run: watch),
    Command(
        name: "sync-status", usage: "sync-status DOMAIN",
        summary: """
            what a synced store (SyncedStore) keeps in the domain: its replica, the keys synced, the
                  writes not sent yet, when the remote last answered or why not, writes that lost,
                  and which process syncs it, with a sync in progress and since when
            """,
        example: "prefs sync-status com.example.app", arguments: 1...1, run: syncStatus),
    Command(
        name: "sync-now", usage: "sync-now DOMAIN",
        summary: """
            ask the process that syncs the domain (its SyncedStore's link holder) to pull and push
                  now, wait up to 10 s for it, and show the outcome as sync-status does
            """,
        example: "prefs sync-now com.example.app", arguments: 1...1, run: syncNow),
    Command(
        name: "migrations", usage: "migrations DOMAIN",
        summary: """
            the migrations that ran on the domain and when: each group mapping entry and numbered
                  step the program's migrations recorded (kept out of read, export and the rest)
            """,
        example: "prefs migrations com.example.app", arguments: 1...1, run: migrations),
    Command(
        name: "help", usage: "help [COMMAND]", summary: "describe every command, or one",
        example: "prefs help write", arguments: 0...1, run: help),
]

// MARK: - The verbs

private func read(_ invocation: Invocation) throws {
    switch invocation.arguments.count {
    case 0:
        let domains = try invocation.store.domains().map { domain in
            (domain, try invocation.store.existingStore(domain).map(userValues) ?? [:])
        }
        Output.line(PlistText.domains(domains, json: invocation.json))
    case 1:
        invocation.printDomain(userValues(of: try existing(invocation.argument(0), in: invocation)))
    default:
        let (domain, key) = (invocation.argument(0), invocation.argument(1))
        // The value the program reads, as it reads it: locked by an administrator, else set,
        // else the system default, else the code's declared default; where it comes from goes
        // to stderr when it is not simply the stored value.
        let layer = invocation.store.administratorLayer(domain)
        let administrator = layer.path ?? "managed preferences"
        if let problem = layer.problem { Output.error(problem) }
        let declared = try invocation.store.declarations(domain)[key]
        if let declared, declared.isSecret {
            return try readSecret(declared, domain: domain, in: invocation)
        }
        // A value the declaration says the program cannot read: it reads its default instead.
        func unreadable(_ found: PropertyListValue) -> String? {
            guard let declared, let problem = declared.problem(with: found) else { return nil }
            let fallback = declared.defaultValue.map { ", \(PlistText.oldStyle($0))" } ?? ""
            return "the program cannot read it and reads its default\(fallback) instead: \(problem)"
        }
        if let locked = layer.lockedValue(forKey: key) {
            Output.error(
                "\(key) is locked by an administrator (\(administrator)); "
                    + (unreadable(locked) ?? "the program reads this value"))
            invocation.printValue(locked)
        } else if let stored = try? value(key, domain: domain, in: invocation) {
            if let problem = unreadable(stored) { Output.error("\(key) is set, but \(problem)") }
            invocation.printValue(stored)
        } else if let fallback = layer.defaultValue(forKey: key) {
            Output.error("\(key) is not set; the program reads the system default from \(administrator)")
            invocation.printValue(fallback)
        } else if let declared, let fallback = declared.defaultValue {
            // Never set: what the program reads is its default.
            Output.error("\(key) is not set; the program reads its default")
            invocation.printValue(fallback)
        } else {
            invocation.printValue(try value(key, domain: domain, in: invocation))
        }
    }
}

private func readType(_ invocation: Invocation) throws {
    let (domain, key) = (invocation.argument(0), invocation.argument(1))
    // The declaration says what the program reads; for an undeclared key, the value in effect
    // (locked, set, or the system default) says the rest.
    let layer = invocation.store.administratorLayer(domain)
    let name =
        try invocation.store.declarations(domain)[key]?.typeName
        ?? layer.lockedValue(forKey: key)?.typeName
        ?? (try? value(key, domain: domain, in: invocation))?.typeName
        ?? layer.defaultValue(forKey: key)?.typeName
        ?? value(key, domain: domain, in: invocation).typeName
    Output.line(invocation.json ? PlistText.jsonString(name) : "Type is \(name)")
}

private func write(_ invocation: Invocation) throws {
    let domain = invocation.argument(0)
    if invocation.arguments.count == 2, invocation.input == nil {
        // `write DOMAIN 'PLIST'`: the whole domain, replaced in one transaction; old-style text
        // (every scalar a string) read as the declared types, and every declared key checked.
        let text = invocation.argument(1)
        let entries = try conformDeclared(
            try PlistText.parseDomain(text),
            untyped: !text.trimmingCharacters(in: .whitespacesAndNewlines).hasPrefix("<"),
            to: try invocation.store.declarations(domain), force: invocation.force)
        try transaction(in: try invocation.store.store(domain)) { t in
            for key in t.keys where entries[StoreKey(key)] == nil && !ReservedKeys.contains(key) {
                t[key] = nil
            }
            for (key, value) in entries { t[key.name] = value }
        }
        return
    }
    let key = invocation.argument(1)
    try checkNotLocked(key, domain: domain, in: invocation.store)
    let declarations = try invocation.store.declarations(domain)
    let given = Array(invocation.arguments.dropFirst(2))
    let action: WriteAction
    if let text = invocation.input {
        // From standard input: the text is the value itself, as the declared type or a string,
        // never a type flag or plist text (a token may start with "-" or hold "=").
        action = .set(try inputValue(text, for: key, declared: declarations[key], force: invocation.force))
    } else if let declared = declarations[key] {
        // Text without a type flag (alone, or inside -array and -dict) is read as the declared
        // type; with --force, text that is not one is written as plist text, and said so below.
        let shape = DeclaredShape(declared)
        do {
            if given.count == 1, !given[0].hasPrefix("-") || Double(given[0]) != nil {
                action = .set(try shape.parse(untyped: given[0], at: ""))
            } else {
                action = try WriteAction.parse(given, shape: shape)
            }
        } catch CLIError.badInput(let problem) {
            guard invocation.force else {
                throw CLIError.badInput(
                    "\(key) is declared \(declared.declared); \(problem); nothing was written (--force writes it anyway)"
                )
            }
            action = try WriteAction.parse(given)
        }
    } else {
        action = try WriteAction.parse(given)
    }
    if let declared = declarations[key], declared.isSecret {
        guard case .set(let value) = action else {
            throw CLIError.badInput("\(key) is a secret: write its whole value, not -array-add or -dict-add")
        }
        try checkDeclared(value, key: key, in: declarations, force: invocation.force)
        return try writeSecret(value, declared, domain: domain, in: invocation)
    }
    try transaction(in: try invocation.store.store(domain)) { t in
        let value = try action.apply(to: t[key], key: key)
        try checkDeclared(value, key: key, in: declarations, force: invocation.force)
        t[key] = value
    }
}

/// The value `--stdin write DOMAIN KEY` writes: `text` read as the key's declared type (with
/// `--force`, as a string when it is not one), or a string for an undeclared key.
private func inputValue(
    _ text: String, for key: String, declared: Preferences.KeyDescription?, force: Bool
) throws -> PropertyListValue {
    guard let declared else { return .string(text) }
    do {
        return try DeclaredShape(declared).parse(untyped: text, at: "")
    } catch CLIError.badInput(let problem) {
        guard force else {
            throw CLIError.badInput(
                "\(key) is declared \(declared.declared); \(problem); nothing was written (--force writes it anyway)"
            )
        }
        return .string(text)
    }
}

private func delete(_ invocation: Invocation) throws {
    let domain = invocation.argument(0)
    guard invocation.arguments.count == 2 else {
        guard try invocation.store.deleteDomain(domain) else {
            throw CLIError.notFound("Domain (\(domain)) not found.\nDefaults have not been changed.")
        }
        return
    }
    let key = invocation.argument(1)
    let store = try existing(domain, in: invocation)
    try transaction(in: store) { t in
        guard t[key] != nil else { throw CLIError.notFound(missingPair(domain, key)) }
        t[key] = nil
    }
}

private func rename(_ invocation: Invocation) throws {
    let (domain, old, new) = (invocation.argument(0), invocation.argument(1), invocation.argument(2))
    try checkNotLocked(new, domain: domain, in: invocation.store)
    let declarations = try invocation.store.declarations(domain)
    try transaction(in: try existing(domain, in: invocation)) { t in
        guard let value = t[old] else { throw CLIError.notFound(missingPair(domain, old)) }
        // The value under its new name must be one that name's declaration reads.
        try checkDeclared(value, key: new, in: declarations, force: invocation.force)
        t[old] = nil
        t[new] = value
    }
}

private func domains(_ invocation: Invocation) throws {
    let names = try invocation.store.domains()
    if invocation.json {
        Output.line(PlistText.json(.array(names.map(PropertyListValue.string))))
    } else {
        Output.line(names.joined(separator: ", "))
    }
}

private func find(_ invocation: Invocation) throws {
    let word = invocation.argument(0).lowercased()
    var found: [(domain: String, matches: [StoreKey: PropertyListValue])] = []
    for domain in try invocation.store.domains() {
        let values = try invocation.store.existingStore(domain).map(userValues) ?? [:]
        let matches = values.filter { key, value in
            key.name.lowercased().contains(word) || PlistText.oldStyle(value).lowercased().contains(word)
        }
        if domain.lowercased().contains(word) {
            found.append((domain, values))
        } else if !matches.isEmpty {
            found.append((domain, matches))
        }
    }
    if invocation.json {
        Output.line(PlistText.domains(found.map { ($0.domain, $0.matches) }, json: true))
    } else if found.isEmpty {
        Output.line("No domain, key, nor value containing '\(invocation.argument(0))'")
    } else {
        for (domain, matches) in found {
            Output.line(
                "Found \(matches.count) keys in domain '\(domain)': \(PlistText.oldStyle(domain: matches))")
        }
    }
}

private func export(_ invocation: Invocation) throws {
    let entries = userValues(of: try existing(invocation.argument(0), in: invocation))
    let data: Data
    do {
        data = try PlistText.file(entries, format: invocation.format)
    } catch let error as CLIError {
        throw error
    } catch {
        throw CLIError.badInput("cannot write the domain as \(invocation.format.rawValue): \(error)")
    }
    let path = invocation.argument(1)
    if path == "-" {
        FileHandle.standardOutput.write(data)
        return
    }
    do {
        try data.write(to: URL(fileURLWithPath: path), options: .atomic)
    } catch {
        throw CLIError.cannotWrite("cannot write \(path): \(error.localizedDescription)")
    }
}

private func importFile(_ invocation: Invocation) throws {
    let path = invocation.argument(1)
    let data: Data
    if path == "-" {
        data = FileHandle.standardInput.readDataToEndOfFile()
    } else {
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw CLIError.cannotRead("cannot read \(path): \(error.localizedDescription)")
        }
    }
    let entries: [StoreKey: PropertyListValue]
    do {
        entries = try PlistText.readFile(data)
    } catch let error as CLIError {
        throw error
    } catch {
        throw CLIError.badInput("\(path) is not a readable property list")
    }
    // XML, binary and JSON carry their types: each declared key's value is checked, not converted
    // (an old-style dictionary, which has strings alone, is read as the declared types).
    let domain = invocation.argument(0)
    let oldStyle =
        (try? PlistFiles.readJSON(data)) == nil && data.first(where: { $0 > 0x20 }) == UInt8(ascii: "{")
    let checked = try conformDeclared(
        entries, untyped: oldStyle, to: try invocation.store.declarations(domain), force: invocation.force)
    try transaction(in: try invocation.store.store(domain)) { t in
        for (key, value) in checked { t[key.name] = value }
    }
}

private func watch(_ invocation: Invocation) throws {
    let domain = invocation.argument(0)
    let key = invocation.arguments.count == 2 ? invocation.argument(1) : nil
    #if !canImport(Darwin)
        if case .userDefaults = invocation.store {
            throw CLIError.usage(
                "watch cannot see other processes' writes to UserDefaults on Linux: Foundation there "
                    + "announces none (a SQLite domain, the default store, is watched across processes)")
        }
    #endif
    let store = try invocation.store.store(domain)
    let json = invocation.json
    // Without a key, the keys stored now: all a store that watches key by key can be told of.
    let observation = store.observe(watching: key.map { [$0] } ?? store.allKeys()) { change in
        // Without a key, the values' changes, not the library's records (`migrations` shows those).
        for changedKey in change.values.keys.sorted()
        where key.map({ changedKey == StoreKey($0) }) ?? !ReservedKeys.contains(changedKey.name) {
            let value = change.values[changedKey]!.newValue
            let changedKey = changedKey.name
            if json {
                let object: PropertyListValue = .dictionary(
                    ["domain": .string(domain), "key": .string(changedKey)].merging(
                        value.map { ["value": $0] } ?? [:]
                    ) { a, _ in a })
                Output.line(PlistText.jsonLine(object))
            } else if let value {
                Output.line("\(PlistText.quoteIfNeeded(changedKey)) = \(PlistText.oldStyle(value))")
            } else {
                Output.line("\(PlistText.quoteIfNeeded(changedKey)) deleted")
            }
        }
    }
    Output.error("watching \(domain)\(key.map { " \($0)" } ?? "") (Ctrl-C to stop)")
    Output.waitForInterrupt()
    observation.cancel()
}

private func help(_ invocation: Invocation) throws {
    guard let name = invocation.arguments.first else {
        Output.line(Usage.full)
        return
    }
    guard let command = commands.first(where: { $0.name == name }) else {
        throw CLIError.usage(
            "no command '\(name)'; commands: \(commands.map(\.name).joined(separator: ", "))")
    }
    Output.line(Usage.describe(command))
}

private func migrations(_ invocation: Invocation) throws {
    let domain = invocation.argument(0)
    let prefix = ReservedKeys.migrationPrefix
    var records: [StoreKey: PropertyListValue] = [:]
    for (key, value) in try existing(domain, in: invocation).snapshot()
    where key.name.utf8.starts(with: prefix.utf8) {
        records[StoreKey(String(key.name.dropFirst(prefix.count)))] = value
    }
    if invocation.json { return invocation.printDomain(records) }
    guard !records.isEmpty else { return Output.line("No migration has run on domain \(domain)") }
    for key in records.keys.sorted() {
        let value = records[key]!
        let ran =
            if case .date(let date) = value { CalendarDate.iso8601(date) } else { PlistText.oldStyle(value) }
        Output.line("\(key.name): \(ran)")
    }
}

// MARK: - Shared steps

/// A domain's values as a user sees them: without the library's records (which migrations ran,
/// a synced store's, key descriptions), which `migrations` and `sync-status` show.
private func userValues(of store: any PreferenceStore) -> [StoreKey: PropertyListValue] {
    ReservedKeys.withoutRecords(store.snapshot())
}

private func syncStatus(_ invocation: Invocation) throws {
    let domain = invocation.argument(0)
    guard let kept = SyncedStore.kept(in: try existing(domain, in: invocation)) else {
        throw CLIError.notFound("Domain \(domain) is not synced: no SyncedStore has used it")
    }
    show(kept, json: invocation.json)
}

private func syncNow(_ invocation: Invocation) throws {
    let domain = invocation.argument(0)
    let store = try existing(domain, in: invocation)
    guard SyncedStore.kept(in: store) != nil else {
        throw CLIError.notFound("Domain \(domain) is not synced: no SyncedStore has used it")
    }
    guard let file = store as? SQLiteStore else {
        throw CLIError.usage("sync-now asks through a SQLite file; domain \(domain) is kept in \(store)")
    }
    let outcome: SyncedStore.SyncRequestOutcome
    do {
        outcome = try SyncedStore.requestSync(of: file, timeout: .seconds(10))
    } catch {
        throw CLIError.store("Domain \(domain): the request to sync could not be written: \(error)")
    }
    switch outcome {
    case .noProcessSyncs:
        throw CLIError.notFound(
            "No process syncs domain \(domain) now: the program whose SyncedStore syncs it is not running (it syncs when it starts)"
        )
    case .noAnswer:
        throw CLIError.store("Domain \(domain): the process that syncs it did not finish a sync within 10 s")
    case .ended(let report):
        if let kept = SyncedStore.kept(in: store) { show(kept, json: invocation.json) }
        if let error = report.lastError {
            throw CLIError.store("Domain \(domain): the sync failed: \(error)")
        }
    }
}

/// Prints what a synced store keeps: as lines, or as JSON.
private func show(
    _ kept: (replica: String, syncedKeys: Int, status: SyncStatus), json: Bool
) {
    let status = kept.status
    let conflicts: [PropertyListValue] = status.conflicts.map { conflict in
        var entries: [String: PropertyListValue] = [
            "key": .string(conflict.key), "lost": .string(conflict.lostStamp.description),
            "won": .string(conflict.winningStamp.description),
        ]
        entries["lostValue"] = conflict.lostValue
        return .dictionary(entries)
    }
    var report: [String: PropertyListValue] = [
        "replica": .string(kept.replica), "syncedKeys": .integer(Int64(kept.syncedKeys)),
        "pending": .array(status.pendingKeys.map(PropertyListValue.string)), "conflicts": .array(conflicts),
    ]
    report["lastContact"] = status.lastContact.map(PropertyListValue.date)
    report["lastAttempt"] = status.lastAttempt.map(PropertyListValue.date)
    report["lastError"] = status.lastError.map(PropertyListValue.string)
    report["syncingProcess"] = status.syncingProcess.map { .integer(Int64($0)) }
    report["syncingSince"] = status.syncingSince.map(PropertyListValue.date)
    if json {
        Output.line(PlistText.json(.dictionary(report)))
        return
    }
    Output.line("replica \(kept.replica), \(kept.syncedKeys) keys synced")
    Output.line(
        "pending: " + (status.pendingKeys.isEmpty ? "none" : status.pendingKeys.joined(separator: ", ")))
    Output.line("last contact: " + (status.lastContact.map(CalendarDate.iso8601) ?? "never"))
    if let attempt = status.lastAttempt { Output.line("last sync started: " + CalendarDate.iso8601(attempt)) }
    if let error = status.lastError { Output.line("last error: \(error)") }
    switch (status.syncingProcess, status.syncingSince) {
    case (let process?, let since?):
        // Whole seconds as text: a clock gone far off must not trap a conversion to Int.
        let seconds = String(format: "%.0f", max(0, Date().timeIntervalSince(since)))
        Output.line(
            "syncing: process \(process), a sync in progress since \(CalendarDate.iso8601(since)) (\(seconds) s)"
        )
    case (let process?, nil): Output.line("syncing: process \(process), between syncs")
    case (nil, _):
        Output.line("syncing: no process syncs it now (the program that does syncs when it starts)")
    }
    for conflict in status.conflicts {
        let lost = conflict.lostValue.map { PlistText.oldStyle($0) } ?? "a removal"
        Output.line("lost: \(conflict.key) = \(lost) (\(conflict.lostStamp)), to \(conflict.winningStamp)")
    }
}

private func existing(_ domain: String, in invocation: Invocation) throws -> any PreferenceStore {
    guard let store = try invocation.store.existingStore(domain) else {
        throw CLIError.notFound("Domain \(domain) does not exist" + invocation.store.elsewhere(domain))
    }
    return store
}

private func value(_ key: String, domain: String, in invocation: Invocation) throws -> PropertyListValue {
    guard let store = try invocation.store.existingStore(domain) else {
        throw CLIError.notFound(missingPair(domain, key) + invocation.store.elsewhere(domain))
    }
    guard let value = store.value(forKey: key) else { throw CLIError.notFound(missingPair(domain, key)) }
    return value
}

private func missingPair(_ domain: String, _ key: String) -> String {
    "The domain/default pair of (\(domain), \(key)) does not exist"
}

/// Runs a store transaction, passing the tool's own errors through and naming store failures.
private func transaction(in store: any PreferenceStore, _ body: (inout StoreTransaction) throws -> Void)
    throws
{
    do {
        try store.transaction(body)
    } catch let error as CLIError {
        throw error
    } catch {
        throw CLIError.store("\(error)")
    }
}
