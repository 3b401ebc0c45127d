import Foundation

/// LMDB, the benchmark's baseline for writes and reads: the system library (`liblmdb0`, from
/// Debian's `liblmdb-dev`), loaded when the benchmark runs.
///
/// Loaded with `dlopen` rather than linked, so LMDB is the benchmark's dependency alone: building
/// or testing Prefs never needs it, and a run without it reports its LMDB figures as missing.
/// The few calls used are declared here from `lmdb.h` (0.9).
///
/// ```swift
/// let lmdb = try LMDB.load()
/// let environment = try lmdb.open(path: "/tmp/bench.mdb", syncEachCommit: false)
/// try environment.put(Array("k1".utf8), 1)
/// ```
final class LMDB: @unchecked Sendable {
    // The C declarations, as lmdb.h gives them.
    typealias Status = Int32
    struct Value {
        var size: Int
        var data: UnsafeMutableRawPointer?
    }
    private typealias EnvCreate = @convention(c) (UnsafeMutablePointer<OpaquePointer?>) -> Status
    private typealias EnvSetMapSize = @convention(c) (OpaquePointer, Int) -> Status
    private typealias EnvSetMaxReaders = @convention(c) (OpaquePointer, UInt32) -> Status
    private typealias EnvOpen = @convention(c) (OpaquePointer, UnsafePointer<CChar>, UInt32, mode_t) -> Status
    private typealias EnvClose = @convention(c) (OpaquePointer) -> Void
    private typealias TxnBegin =
        @convention(c) (OpaquePointer, OpaquePointer?, UInt32, UnsafeMutablePointer<OpaquePointer?>) -> Status
    private typealias TxnCommit = @convention(c) (OpaquePointer) -> Status
    private typealias TxnAbort = @convention(c) (OpaquePointer) -> Void
    private typealias TxnReset = @convention(c) (OpaquePointer) -> Void
    private typealias TxnRenew = @convention(c) (OpaquePointer) -> Status
    private typealias DbiOpen =
        @convention(c) (OpaquePointer, UnsafePointer<CChar>?, UInt32, UnsafeMutablePointer<UInt32>) -> Status
    // `MDB_val *` arguments, passed as raw pointers to a ``Value`` (a size and a pointer: the
    // layout of the C struct).
    private typealias Put =
        @convention(c) (OpaquePointer, UInt32, UnsafeMutableRawPointer, UnsafeMutableRawPointer, UInt32) ->
        Status
    private typealias Get =
        @convention(c) (OpaquePointer, UInt32, UnsafeMutableRawPointer, UnsafeMutableRawPointer) -> Status
    private typealias StrError = @convention(c) (Int32) -> UnsafeMutablePointer<CChar>?

    // Flags, from lmdb.h.
    static let noSubdirectory: UInt32 = 0x4000
    static let noSync: UInt32 = 0x10000
    static let readOnly: UInt32 = 0x20000
    static let noMetaSync: UInt32 = 0x40000
    static let writeMap: UInt32 = 0x80000
    static let create: UInt32 = 0x40000
    static let notFound: Status = -30798

    private let envCreate: EnvCreate
    private let envSetMapSize: EnvSetMapSize
    private let envSetMaxReaders: EnvSetMaxReaders
    private let envOpen: EnvOpen
    private let envClose: EnvClose
    private let txnBegin: TxnBegin
    private let txnCommit: TxnCommit
    private let txnAbort: TxnAbort
    private let txnReset: TxnReset
    private let txnRenew: TxnRenew
    private let dbiOpen: DbiOpen
    private let put: Put
    private let get: Get
    private let strError: StrError

    /// The library, loaded once; the error says why it is missing.
    static let shared: Result<LMDB, BenchError> = {
        guard let library = dlopen("liblmdb.so.0", RTLD_NOW) ?? dlopen("liblmdb.dylib", RTLD_NOW) else {
            return .failure(
                BenchError("LMDB is not installed (apt-get install liblmdb-dev): no LMDB figures"))
        }
        func symbol<T>(_ name: String, as type: T.Type) throws -> T {
            guard let address = dlsym(library, name) else { throw BenchError("liblmdb has no \(name)") }
            return unsafeBitCast(address, to: type)
        }
        do {
            return .success(
                LMDB(
                    envCreate: try symbol("mdb_env_create", as: EnvCreate.self),
                    envSetMapSize: try symbol("mdb_env_set_mapsize", as: EnvSetMapSize.self),
                    envSetMaxReaders: try symbol("mdb_env_set_maxreaders", as: EnvSetMaxReaders.self),
                    envOpen: try symbol("mdb_env_open", as: EnvOpen.self),
                    envClose: try symbol("mdb_env_close", as: EnvClose.self),
                    txnBegin: try symbol("mdb_txn_begin", as: TxnBegin.self),
                    txnCommit: try symbol("mdb_txn_commit", as: TxnCommit.self),
                    txnAbort: try symbol("mdb_txn_abort", as: TxnAbort.self),
                    txnReset: try symbol("mdb_txn_reset", as: TxnReset.self),
                    txnRenew: try symbol("mdb_txn_renew", as: TxnRenew.self),
                    dbiOpen: try symbol("mdb_dbi_open", as: DbiOpen.self),
                    put: try symbol("mdb_put", as: Put.self),
                    get: try symbol("mdb_get", as: Get.self),
                    strError: try symbol("mdb_strerror", as: StrError.self)))
        } catch let error as BenchError {
            return .failure(error)
        } catch {
            return .failure(BenchError("\(error)"))
        }
    }()

    private init(
        envCreate: EnvCreate, envSetMapSize: EnvSetMapSize, envSetMaxReaders: EnvSetMaxReaders,
        envOpen: EnvOpen,
        envClose: EnvClose, txnBegin: TxnBegin, txnCommit: TxnCommit, txnAbort: TxnAbort, txnReset: TxnReset,
        txnRenew: TxnRenew, dbiOpen: DbiOpen, put: Put, get: Get, strError: StrError
    ) {
        (self.envCreate, self.envSetMapSize, self.envSetMaxReaders, self.envOpen, self.envClose) =
            (envCreate, envSetMapSize, envSetMaxReaders, envOpen, envClose)
        (self.txnBegin, self.txnCommit, self.txnAbort, self.txnReset, self.txnRenew) =
            (txnBegin, txnCommit, txnAbort, txnReset, txnRenew)
        (self.dbiOpen, self.put, self.get, self.strError) = (dbiOpen, put, get, strError)
    }

    private func check(_ status: Status, _ doing: String) throws {
        guard status != 0 else { return }
        let message = strError(status).map { String(cString: $0) } ?? "error \(status)"
        throw BenchError("LMDB \(doing): \(message)")
    }

    /// An environment in one file at `path` (`MDB_NOSUBDIR`), written through a writable map
    /// (`MDB_WRITEMAP`); with `syncEachCommit` false, commits are not synced (`MDB_NOSYNC |
    /// MDB_NOMETASYNC`: a commit survives `kill -9` but not power loss, as `.committed` writes),
    /// otherwise each commit is synced (as `.powerSafe` writes).
    func open(path: String, syncEachCommit: Bool) throws -> Environment {
        var made: OpaquePointer?
        try check(envCreate(&made), "mdb_env_create")
        guard let environment = made else { throw BenchError("LMDB: mdb_env_create gave nothing") }
        try check(envSetMapSize(environment, 1 << 30), "mdb_env_set_mapsize")
        try check(envSetMaxReaders(environment, 256), "mdb_env_set_maxreaders")
        let flags = Self.noSubdirectory | Self.writeMap | (syncEachCommit ? 0 : Self.noSync | Self.noMetaSync)
        try check(envOpen(environment, path, flags, 0o600), "mdb_env_open \(path)")
        var transaction: OpaquePointer?
        try check(txnBegin(environment, nil, 0, &transaction), "mdb_txn_begin")
        var database: UInt32 = 0
        try check(dbiOpen(transaction!, nil, Self.create, &database), "mdb_dbi_open")
        try check(txnCommit(transaction!), "mdb_txn_commit")
        return Environment(lmdb: self, environment: environment, database: database)
    }

    /// An open environment and its one unnamed database.
    final class Environment {
        private let lmdb: LMDB
        private let environment: OpaquePointer
        private let database: UInt32
        /// The read transaction reads reuse (reset after each read, renewed before the next:
        /// LMDB's own advice for a thread that reads often).
        private var reader: OpaquePointer?

        fileprivate init(lmdb: LMDB, environment: OpaquePointer, database: UInt32) {
            (self.lmdb, self.environment, self.database) = (lmdb, environment, database)
        }

        deinit {
            if let reader { lmdb.txnAbort(reader) }
            lmdb.envClose(environment)
        }

        /// Puts `value` (its 8 bytes) under `key` in a write transaction of its own, committed.
        func put(_ key: [UInt8], _ value: Int) throws {
            var transaction: OpaquePointer?
            try lmdb.check(lmdb.txnBegin(environment, nil, 0, &transaction), "mdb_txn_begin")
            var number = value
            let status = key.withUnsafeBytes { keyBytes in
                withUnsafeMutableBytes(of: &number) { valueBytes in
                    var keyValue = Value(
                        size: keyBytes.count, data: UnsafeMutableRawPointer(mutating: keyBytes.baseAddress))
                    var dataValue = Value(size: valueBytes.count, data: valueBytes.baseAddress)
                    return withUnsafeMutableBytes(of: &keyValue) { keyPointer in
                        withUnsafeMutableBytes(of: &dataValue) { dataPointer in
                            lmdb.put(
                                transaction!, database, keyPointer.baseAddress!, dataPointer.baseAddress!, 0)
                        }
                    }
                }
            }
            guard status == 0 else {
                lmdb.txnAbort(transaction!)
                return try lmdb.check(status, "mdb_put")
            }
            try lmdb.check(lmdb.txnCommit(transaction!), "mdb_txn_commit")
        }

        /// The integer under `key`, read in a read transaction; `nil` when there is none.
        func integer(_ key: [UInt8]) throws -> Int? {
            if let reader {
                try lmdb.check(lmdb.txnRenew(reader), "mdb_txn_renew")
            } else {
                try lmdb.check(lmdb.txnBegin(environment, nil, LMDB.readOnly, &reader), "mdb_txn_begin")
            }
            defer { lmdb.txnReset(reader!) }
            var found = Value(size: 0, data: nil)
            let status = key.withUnsafeBytes { keyBytes in
                var keyValue = Value(
                    size: keyBytes.count, data: UnsafeMutableRawPointer(mutating: keyBytes.baseAddress))
                return withUnsafeMutableBytes(of: &keyValue) { keyPointer in
                    withUnsafeMutableBytes(of: &found) { foundPointer in
                        lmdb.get(reader!, database, keyPointer.baseAddress!, foundPointer.baseAddress!)
                    }
                }
            }
            if status == LMDB.notFound { return nil }
            try lmdb.check(status, "mdb_get")
            guard found.size == MemoryLayout<Int>.size, let data = found.data else { return nil }
            return data.loadUnaligned(as: Int.self)
        }
    }
}
