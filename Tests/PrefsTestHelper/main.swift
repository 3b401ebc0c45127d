// A separate process for the tests: it writes or reads values, through Prefs or through plain
// Foundation, and exits. Tests start it with an isolated XDG_CONFIG_HOME.
//
//   store-write SUITE KEY TYPE VALUE     write through UserDefaultsStore
//   plain-write SUITE KEY TYPE VALUE     write with plain UserDefaults + synchronize
//   plain-read SUITE KEY TYPE            print what plain UserDefaults reads
//   store-read SUITE KEY TYPE            print what UserDefaultsStore reads
//   sqlite-write PATH PREFIX COUNT       write PREFIX.0 … PREFIX.(COUNT-1) = index, one commit each
//   sqlite-increment PATH KEY COUNT      COUNT atomic `update` increments of KEY
//   sqlite-ack-writer PATH               write k0, k1, … forever, printing each index once committed
//   sqlite-set PATH KEY VALUE            write one string
//   secret PATH SERVICE KEY [VALUE]      a secret key (Key<String?>, storedAs: .secret) on a SQLite store, its
//                                        secrets in the system's secret store under SERVICE: prints what it
//                                        reads ("nil" when none), or writes VALUE ("-" deletes it) and prints
//                                        "wrote"; a failure prints "error: KIND: MESSAGE" and exits with 3
//   typed-keys PATH [KEY]                publish the typed keys of the tool's type checks (count, enabled,
//                                        limits, tags, window); with KEY, print what the program reads of it
//                                        (and on stderr each issue the read reported)
//   publish-keys PATH                    publish the descriptions of volume (0...1), quality (an enum), nickname
//   sqlite-killed-move-in PATH SUITE STEP  move a suite in, killed at STEP (beforeCommit/afterCommit)
//   sqlite-hold-lock PATH                hold the journal's lock until killed (prints "holding")
//   sqlite-nested-update PATH            misuse: an update inside an update (stops with a message)
//   sqlite-indices PATH                  what sqlite-ack-writer left: each good index, "bad k<i>", "latest N"
//   (PREFS_TEST_DURABILITY=powerSafe makes the sqlite-… modes' stores .powerSafe)
//   standard-write KEY VALUE             write one string through Preferences.standard; print its path
//   seed-article                         the seed article's sample on Preferences.standard, printing what it read
//   namespace-shortcuts                  the enum-case style's typed shortcuts on Preferences.standard
//   pg-write URL NAMESPACE PREFIX COUNT  as sqlite-write, on a PostgresStore
//   pg-increment URL NAMESPACE KEY COUNT as sqlite-increment, on a PostgresStore
//   pg-set URL NAMESPACE KEY VALUE       write one string to a PostgresStore
//   pg-ack-writer URL NAMESPACE FILE     write k0, k1, … forever, appending each index to FILE once committed;
//                                        a failed write is retried (the store reconnects by itself)
//   synced-writer PATH URL NAMESPACE NAME  a SyncedStore (SQLite file, PostgreSQL remote) syncing by
//                                        itself: prints "ready", writes NAME.latest = 0, 1, … every 50 ms
//                                        forever, and prints "link" once this process talks to the server
//   fleet-writer PATH URL NAMESPACE NAME SEED KEYS  a SyncedStore as synced-writer, writing key0 … key(KEYS-1)
//                                        at random every 10–40 ms: prints "try KEY VALUE" before each write and
//                                        "ack KEY VALUE STAMP" once it returned (values NAME.0, NAME.1, …)
//   link-holder PATH LEASE_MS            a SyncedStore (SQLite file, a remote that keeps nothing) with a lease of
//                                        LEASE_MS: writes "mine" every 100 ms, prints "link" when this process
//                                        takes the link and "unlinked" when it loses it
//   standard-domain DOMAIN KEY [VALUE]   Preferences.standard(domain:): prints the Int KEY reads, then writes VALUE
//                                        and prints "wrote" or "refused: ERROR"
//   bootstrap-diagnostics PATH           PreferenceDiagnostics.bootstrap to stdout ("diag: ISSUE"), then opens a
//                                        damaged SQLite file at PATH and reads a wrong-typed value, with defaults
//
// TYPE is string, int, double, bool or date (seconds since 1970).
import Foundation
import Prefs
import PrefsEngine
import PrefsTestSupport

#if PREFS_POSTGRESQL
    import PrefsPostgres
#endif

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("PrefsTestHelper: \(message)\n".utf8))
    exit(2)
}

func parse(_ text: String, as type: String) -> PropertyListValue {
    let value: PropertyListValue?
    switch type {
    case "string": value = .string(text)
    case "int": value = Int64(text).map(PropertyListValue.integer)
    case "double": value = Double(text).map(PropertyListValue.double)
    case "bool": value = Bool(text).map(PropertyListValue.bool)
    case "date": value = Double(text).map { .date(Date(timeIntervalSince1970: $0)) }
    default: fail("unknown type \(type)")
    }
    guard let value else { fail("not a \(type): \(text)") }
    return value
}

func defaults(_ suite: String) -> UserDefaults {
    guard let defaults = UserDefaults(suiteName: suite) else { fail("no suite \(suite)") }
    return defaults
}

/// A store at `path`, `.powerSafe` when the environment has `PREFS_TEST_DURABILITY=powerSafe`.
func sqlite(_ path: String) -> Preferences {
    do {
        let powerSafe = ProcessInfo.processInfo.environment["PREFS_TEST_DURABILITY"] == "powerSafe"
        return Preferences(
            store: try SQLiteStore(
                path: path, options: .init(durability: powerSafe ? .powerSafe : .committed)))
    } catch {
        fail("\(error)")
    }
}

func plainRead(_ defaults: UserDefaults, _ key: String, _ type: String) -> String {
    guard let object = defaults.object(forKey: key) else { return "<nil>" }
    switch type {
    case "string": return defaults.string(forKey: key) ?? "<not a string>"
    case "int": return String(defaults.integer(forKey: key))
    case "double": return String(defaults.double(forKey: key))
    case "bool": return String(defaults.bool(forKey: key))
    case "date": return (object as? Date).map { String($0.timeIntervalSince1970) } ?? "<not a date>"
    default: fail("unknown type \(type)")
    }
}

func storeRead(_ value: PropertyListValue?, _ type: String) -> String {
    switch (type, value) {
    case (_, nil): "<nil>"
    case ("string", .string(let text)?): text
    case ("int", .integer(let number)?): String(number)
    case ("double", .double(let number)?): String(number)
    case ("bool", .bool(let flag)?): String(flag)
    case ("date", .date(let date)?): String(date.timeIntervalSince1970)
    default: "<mismatch: \(value.map(String.init(describing:)) ?? "nil")>"
    }
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard let mode = arguments.first else { fail("usage: MODE ARGUMENTS…") }
func argument(_ index: Int) -> String {
    guard index < arguments.count else { fail("\(mode): missing argument \(index)") }
    return arguments[index]
}

/// The `store-write` mode (see the list at the top).
func storeWrite() throws {
    let store = UserDefaultsStore(defaults(argument(1)), domain: argument(1))
    try store.setValue(parse(argument(4), as: argument(3)), forKey: argument(2))
}

/// The `plain-write` mode (see the list at the top).
func plainWrite() throws {
    let plain = defaults(argument(1))
    plain.set(parse(argument(4), as: argument(3)).foundationObject, forKey: argument(2))
    guard plain.synchronize() else { fail("synchronize failed") }
}

/// The `plain-read` mode (see the list at the top).
func plainRead() throws {
    print(plainRead(defaults(argument(1)), argument(2), argument(3)))
}

/// The `store-read` mode (see the list at the top).
func storeRead() throws {
    let store = UserDefaultsStore(defaults(argument(1)), domain: argument(1))
    print(storeRead(store.value(forKey: argument(2)), argument(3)))
}

/// The `sqlite-write` mode (see the list at the top).
func sqliteWrite() throws {
    let prefs = sqlite(argument(1))
    for index in 0..<(Int(argument(3)) ?? 0) {
        try prefs.set(index, for: Preferences.Key<Int>("\(argument(2)).\(index)", default: -1))
    }
}

/// The `sqlite-increment` mode (see the list at the top).
func sqliteIncrement() throws {
    try ChildWork.increments(of: argument(2), in: sqlite(argument(1)), count: Int(argument(3)) ?? 0)
}

/// PATH [FILL] [PAUSE-µs] [COUNT]: writes k<i> = i (a string of i and FILL x's when FILL > 0),
/// then `latest` = i, from one past the stored `latest`, and prints each i once both returned.
func sqliteAckWriter() throws {
    try ChildWork.acknowledgedWrites(
        to: sqlite(argument(1)), fill: arguments.count > 2 ? Int(argument(2)) ?? 0 : 0,
        pauseMicroseconds: arguments.count > 3 ? UInt32(argument(3)) ?? 0 : 0,
        count: arguments.count > 4 ? Int(argument(4)) ?? .max : .max
    ) { index in ChildWork.say("\(index)") }
}

/// PATH: sets a, b and c to one number in each update, printing each number once it returned.
func sqliteAckUpdater() throws {
    let prefs = sqlite(argument(1))
    let keys = ["a", "b", "c"].map { Preferences.Key<Int>($0, default: 0) }
    var number = prefs[keys[0]] + 1
    while true {
        try prefs.update { p in for key in keys { p[key] = number } }
        FileHandle.standardOutput.write(Data("\(number)\n".utf8))
        number += 1
    }
}

/// PATH STEP COUNT: writes k<i> = i (i from one past `latest`) and `latest`, then moves the
/// journal into SQLite and kills itself with SIGKILL at STEP of that move.
func sqliteKilledCheckpoint() throws {
    let path = argument(1)
    let step = StoreEngine.CheckpointStep(rawValue: argument(2)) ?? .afterCommit
    var options = SQLiteStore.Options()
    options.faults.atCheckpointStep = { reached in
        if reached == step { kill(getpid(), SIGKILL) }
    }
    let store = try SQLiteStore(path: path, options: options)
    var latest: Int64 = -1
    if case .integer(let stored)? = store.value(forKey: "latest") { latest = stored }
    let count: Int64 = Int64(argument(3)) ?? 100
    for index in (latest + 1)...(latest + count) {
        try store.setValue(.integer(index), forKey: "k\(index)")
        try store.setValue(.integer(index), forKey: "latest")
    }
    try store.flush()
    fail("the checkpoint did not reach \(step)")
}

/// PATH COUNT: writes k<i> = i for COUNT values, then moves the journal into SQLite; while
/// the move commits, writes m<j> = j for 50 more, which stay in the journal and are copied
/// to its top; kills itself with SIGKILL half-way through that copy.
func sqliteKilledMove() throws {
    let path = argument(1)
    // Another store of the same file writes during the checkpoint (the store checkpointing
    // holds its own writer lock only between writes).
    let other = try SQLiteStore(path: path)
    var options = SQLiteStore.Options()
    options.faults.atCheckpointStep = { reached in
        if reached == .afterCommit {
            for index in 0..<50 { try? other.setValue(.integer(Int64(index)), forKey: "m\(index)") }
        }
        if reached == .duringMove { kill(getpid(), SIGKILL) }
    }
    let store = try SQLiteStore(path: path, options: options)
    for index in 0..<(Int64(argument(2)) ?? 100) {
        try store.setValue(.integer(index), forKey: "k\(index)")
    }
    try store.flush()
    fail("the checkpoint did not reach the move")
}

/// PATH: every key and value, sorted, one per line.
func sqliteDump() throws {
    for (key, value) in try SQLiteStore(path: argument(1)).snapshot().sorted(by: {
        $0.key.name < $1.key.name
    }) {
        print("\(key.name)=\(value)")
    }
}

/// PATH: what sqlite-ack-writer left, compactly: each i whose k<i> holds what that writer
/// wrote, "bad k<i>" for a key holding anything else, and "latest N".
func sqliteIndices() throws {
    let store = try SQLiteStore(path: argument(1))
    for key in store.keys() where key.hasPrefix("k") {
        guard let index = Int(key.dropFirst()) else { continue }
        switch store.value(forKey: key) {
        case .integer(let number)? where number == index: print(index)
        case .string(let text)?
        where text.drop(while: \.isNumber).allSatisfy({ $0 == "x" })
            && Int(text.prefix(while: \.isNumber)) == index:
            print(index)
        default: print("bad \(key)")
        }
    }
    if case .integer(let latest)? = store.value(forKey: "latest") { print("latest \(latest)") }
}

/// PATH SUITE STEP: writes d0 … d99 into the UserDefaults suite SUITE (an absolute path),
/// then moves it into the store at PATH, killing itself with SIGKILL at STEP
/// (beforeCommit or afterCommit) of that move.
func sqliteKilledMoveIn() throws {
    let step = StoreEngine.CheckpointStep(rawValue: argument(3)) ?? .beforeCommit
    guard let suite = UserDefaults(suiteName: argument(2)) else { fail("no suite \(argument(2))") }
    for index in 0..<100 { suite.set(index, forKey: "d\(index)") }
    _ = suite.synchronize()
    var options = SQLiteStore.Options()
    options.faults.atCheckpointStep = { reached in
        if reached == step { kill(getpid(), SIGKILL) }
    }
    let store = try SQLiteStore(path: argument(1), options: options)
    try store.setValue(.integer(-1), forKey: "d0")  // a key the store has: kept
    try store.copyValues(fromUserDefaultsDomain: argument(2), using: suite)
    fail("the move-in did not reach \(step)")
}

/// PATH: writes `held` = 1, then holds the journal's lock (inside an update) until killed,
/// as a writer stopped in the middle of a write does; prints "holding" once it does.
func sqliteHoldLock() throws {
    let prefs = sqlite(argument(1))
    try prefs.store.setValue(.integer(1), forKey: "held")
    try prefs.update { _ in
        ChildWork.say("holding")
        while true { pause() }
    }
}

/// PATH: an update inside an update on the same store: a misuse, which stops the program
/// with a message (CI runs it from a release build: the message must survive -O).
func sqliteNestedUpdate() throws {
    let prefs = sqlite(argument(1))
    try prefs.update { _ in try prefs.update { _ in } }
}

/// The `sqlite-set` mode (see the list at the top).
func sqliteSet() throws {
    try sqlite(argument(1)).store.setValue(.string(argument(3)), forKey: argument(2))
}

/// The `secret` mode (see the list at the top).
func secret() throws {
    let prefs = Preferences(
        store: try SQLiteStore(path: argument(1)), secrets: .system(service: argument(2)))
    let key = Preferences.Key<String?>(argument(3), storedAs: .secret)
    do {
        if arguments.count > 4 {
            let value = argument(4)
            try prefs.set(value == "-" ? nil : value, for: key)
            print("wrote")
        } else {
            print(try prefs.value(for: key) ?? "nil")
        }
    } catch let error as StoreError {
        print("error: \(error.kind): \(error.message)")
        exit(3)
    }
}

/// The `standard-write` mode (see the list at the top).
func standardWrite() throws {
    // standard-ok: only Linux tests start this mode, with a throwaway XDG_CONFIG_HOME.
    try Preferences.standard.store.setValue(.string(argument(2)), forKey: argument(1))
    print(SQLiteStore.defaultPath())
}

#if PREFS_POSTGRESQL
    /// The `pg-write` mode (see the list at the top).
    func pgWrite() throws {
        let store = try PostgresStore(url: argument(1), namespace: argument(2))
        for index in 0..<(Int(argument(4)) ?? 0) {
            try store.setValue(.integer(Int64(index)), forKey: "\(argument(3)).\(index)")
        }
    }

    /// The `pg-increment` mode (see the list at the top).
    func pgIncrement() throws {
        let prefs = Preferences(store: try PostgresStore(url: argument(1), namespace: argument(2)))
        let key = Preferences.Key<Int>(argument(3), default: 0)
        for _ in 0..<(Int(argument(4)) ?? 0) { try prefs.update { p in p[key] += 1 } }
    }

    /// The `pg-set` mode (see the list at the top).
    func pgSet() throws {
        try PostgresStore(url: argument(1), namespace: argument(2)).setValue(
            .string(argument(4)), forKey: argument(3))
    }

    /// The `synced-writer` mode (see the list at the top).
    func syncedWriter() throws {
        let store = try SyncedStore(
            local: try SQLiteStore(path: argument(1)),
            remote: try PostgresRemote(url: argument(2), namespace: argument(3)))
        ChildWork.say("ready")
        var linked = false
        for index in 0... {
            try store.setValue(.integer(Int64(index)), forKey: "\(argument(4)).latest")
            if !linked, store.holdsLink {
                ChildWork.say("link")
                linked = true
            }
            usleep(50_000)
        }
    }

    /// The `fleet-writer` mode (see the list at the top).
    func fleetWriter() throws {
        let store = try SyncedStore(
            local: try SQLiteStore(path: argument(1)),
            remote: try PostgresRemote(url: argument(2), namespace: argument(3)))
        var random = SeededGenerator(state: UInt64(argument(5)) ?? 1)
        let keys = UInt64(argument(6)) ?? 1
        ChildWork.say("ready")
        var linked = false
        for index in 0... {
            let key = "key\(random.next() % keys)"
            let value = "\(argument(4)).\(index)"
            ChildWork.say("try \(key) \(value)")
            let stamps = try store.stampedTransaction { $0[key] = .string(value) }.stamps
            guard let stamp = stamps[key] else { fail("no stamp for \(key)") }
            ChildWork.say("ack \(key) \(value) \(stamp)")
            if !linked, store.holdsLink {
                ChildWork.say("link")
                linked = true
            }
            usleep(UInt32(10_000 + random.next() % 30_000))
        }
    }

    /// The `pg-ack-writer` mode (see the list at the top).
    func pgAckWriter() throws {
        let store = try PostgresStore(url: argument(1), namespace: argument(2))
        _ = FileManager.default.createFile(atPath: argument(3), contents: nil)
        guard let acknowledgements = FileHandle(forWritingAtPath: argument(3)) else {
            fail("cannot write \(argument(3))")
        }
        try ChildWork.acknowledgedWrites(to: Preferences(store: store), retrying: true) { index in
            acknowledgements.write(Data("\(index)\n".utf8))
        }
    }
#endif

/// The keys `publish-keys` declares: a program's declarations, which the tool then reads.
enum Quality: String, PreferenceValue, CaseIterable { case low, high }

/// The `publish-keys` mode (see the list at the top).
func publishKeys() throws {
    let prefs = sqlite(argument(1))
    try prefs.publish([
        Preferences.Key<Double>("volume", default: 0.5, help: "Playback volume", allowed: .range(0...1)),
        Preferences.Key<Quality>("quality", default: .high, help: "Video quality"),
        Preferences.Key<String?>("nickname"),
        Preferences.Key<Bool>("autoplay", default: true),
        Preferences.Key<[String]>("recent", default: []),
    ])
}

/// The keys `typed-keys` declares, one of each shape the tool checks.
struct Window: Codable, PreferenceValue, Equatable {
    var width: Int
    var title: String
}

/// The `typed-keys` mode (see the list at the top).
func typedKeys() throws {
    let prefs = Preferences(
        store: sqlite(argument(1)).store,
        diagnostics: PreferenceDiagnostics { issue in FileHandle.standardError.write(Data("\(issue)\n".utf8))
        })
    let count = Preferences.Key<Int>("count", default: 1, help: "How many", allowed: .range(0...100))
    let enabled = Preferences.Key<Bool>("enabled", default: false)
    let limits = Preferences.Key<[String: Int]>("limits", default: ["maxConnections": 10])
    let tags = Preferences.Key<[[Int]]>("tags", default: [])
    let window = Preferences.Key<Window>("window", default: Window(width: 640, title: "Main"))
    guard arguments.count > 2 else {
        try prefs.publish([count, enabled, limits, tags, window])
        return
    }
    let read: String
    switch argument(2) {
    case "count": read = "\(prefs[count])"
    case "enabled": read = "\(prefs[enabled])"
    case "limits": read = "\(prefs[limits].sorted { $0.key < $1.key })"
    case "tags": read = "\(prefs[tags])"
    default: read = "\(prefs[window])"
    }
    print(read)
}

/// A remote that takes every push and has nothing to give: enough for the link's tests.
final class RemoteKeepingNothing: SyncRemote {
    var description: String { "RemoteKeepingNothing" }
    func push(_ entries: [SyncEntry]) throws -> [SyncEntry] { entries }
    func pull(after cursor: PropertyListValue?) throws -> (entries: [SyncEntry], cursor: PropertyListValue?) {
        ([], cursor)
    }
    func observe(_ handler: @escaping @Sendable (SyncRemoteEvent) -> Void) -> StoreObservation {
        StoreObservation {}
    }
}

/// The `link-holder` mode (see the list at the top).
func linkHolder() throws {
    let store = try SyncedStore(
        local: try SQLiteStore(path: argument(1)), remote: RemoteKeepingNothing(), syncing: .all,
        diagnostics: .standardError, automatically: true,
        now: { UInt64(Date().timeIntervalSince1970 * 1000) },
        linkLease: .milliseconds(Int(argument(2)) ?? 1_000))
    // Said from a thread of its own: a write may wait for the journal's lock (a process stopped
    // while holding it), and what this process holds must still be said at once.
    let watcher = Thread {
        var linked = false
        while true {
            if store.holdsLink != linked {
                linked.toggle()
                ChildWork.say(linked ? "link" : "unlinked")
            }
            usleep(20_000)
        }
    }
    watcher.start()
    for index in 0... {
        do {
            try store.setValue(.integer(Int64(index)), forKey: "mine")
        } catch {
            FileHandle.standardError.write(Data("write \(index): \(error)\n".utf8))
        }
        usleep(100_000)
    }
}

/// The `standard-domain` mode (see the list at the top).
func standardDomain() throws {
    // standard-ok: run only by CLIStandardDomainTests, on Linux, with the test's own XDG_CONFIG_HOME.
    let prefs = Preferences.standard(domain: argument(1))
    let key = Preferences.Key<Int>(argument(2), default: 0)
    ChildWork.say("\(prefs[key])")
    guard arguments.count > 3, let value = Int(argument(3)) else { return }
    do {
        try prefs.set(value, for: key)
        ChildWork.say("wrote")
    } catch {
        ChildWork.say("refused: \(error)")
    }
}

/// The `bootstrap-diagnostics` mode (see the list at the top).
func bootstrapDiagnostics() throws {
    PreferenceDiagnostics.bootstrap(PreferenceDiagnostics { issue in ChildWork.say("diag: \(issue)") })
    try Data("not a database, not at all".utf8).write(to: URL(fileURLWithPath: argument(1)))
    // Every diagnostics left to its default, .shared.
    let prefs = Preferences(
        store: try SQLiteStore(path: argument(1), options: SQLiteStore.Options(recreateOnCorruption: true)))
    try prefs.store.setValue(.string("loud"), forKey: "volume")
    _ = prefs[Preferences.Key<Double>("volume", default: 0.5)]
}

/// Every mode, by the name the tests give it.
var modes: [String: () throws -> Void] = [
    "store-write": storeWrite,
    "plain-write": plainWrite,
    "plain-read": plainRead,
    "store-read": storeRead,
    "sqlite-write": sqliteWrite,
    "sqlite-increment": sqliteIncrement,
    "sqlite-ack-writer": sqliteAckWriter,
    "sqlite-ack-updater": sqliteAckUpdater,
    "sqlite-killed-checkpoint": sqliteKilledCheckpoint,
    "sqlite-killed-move": sqliteKilledMove,
    "sqlite-dump": sqliteDump,
    "sqlite-indices": sqliteIndices,
    "sqlite-killed-move-in": sqliteKilledMoveIn,
    "sqlite-hold-lock": sqliteHoldLock,
    "sqlite-nested-update": sqliteNestedUpdate,
    "sqlite-set": sqliteSet,
    "secret": secret,
    "standard-write": standardWrite,
    "seed-article": seedArticle,
    "namespace-shortcuts": namespaceShortcuts,
    "publish-keys": publishKeys,
    "typed-keys": typedKeys,
    "link-holder": linkHolder,
    "standard-domain": standardDomain,
    "bootstrap-diagnostics": bootstrapDiagnostics,
]
#if PREFS_POSTGRESQL
    modes["pg-write"] = pgWrite
    modes["pg-increment"] = pgIncrement
    modes["pg-set"] = pgSet
    modes["pg-ack-writer"] = pgAckWriter
    modes["synced-writer"] = syncedWriter
    modes["fleet-writer"] = fleetWriter
#endif

guard let run = modes[mode] else { fail("unknown mode \(mode)") }
do {
    try run()
} catch {
    fail("\(error)")
}
