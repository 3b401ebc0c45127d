import Foundation
import PrefsModel

extension StoreError {
    /// The store's error for a journal's failure: the same kind (by name), path and message.
    init(_ failure: JournalError) {
        self.init(path: failure.path, kind: Kind(name: failure.kind.rawValue), detail: failure.message)
    }

    /// Runs `body`, a use of the journal, throwing its failures as the store's errors; every
    /// other error passes unchanged.
    static func fromJournal<Result>(_ body: () throws -> Result) throws -> Result {
        do { return try body() } catch let failure as JournalError { throw StoreError(failure) }
    }
}

extension RecordWriter {
    /// Adds `key` set to `value` (as its stored encoding), or removed when `value` is `nil`.
    mutating func add(_ key: StoreKey, _ value: PropertyListValue?) {
        guard let value else { return addRemoval(key: key.name) }
        add(key: key.name, valueCount: value.storedEncodingCount) { value.writeStoredEncoding(to: $0) }
    }
}
