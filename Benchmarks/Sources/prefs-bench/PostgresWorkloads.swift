#if PREFS_POSTGRESQL
    import BenchLibPQ
    import Foundation
    import Prefs
    import PrefsPostgres

    /// PostgreSQL figures, against a server given with `--postgres URL` (the benchmark starts none).
    enum PostgresWorkloads {
        /// Milliseconds from a write in a child process until an observer here sees it.
        static func propagationLatencies(url: String, samples: Int) throws -> [Double] {
            let namespace = "bench-\(getpid())"
            let store = try PostgresStore(url: url, namespace: namespace)
            let latencies = LatencyLog()
            let observation = store.observe { change in
                guard case .set(.double(let written))? = change.values["stamp"] else { return }
                latencies.append((Date().timeIntervalSince1970 - written) * 1_000)
            }
            let writer = try Processes.start(["pg-stamp-writer", url, namespace, String(samples)])
            writer.waitUntilExit()
            usleep(300_000)
            observation.cancel()
            return latencies.values
        }

        /// Nanoseconds per `PostgresStore` write against a raw libpq upsert of the same row shape.
        static func writeAgainstRaw(url: String, writes: Int, repetitions: Int) throws -> (
            raw: Double, prefs: Double
        ) {
            let store = try PostgresStore(url: url, namespace: "bench-write-\(getpid())")
            let connection = PQconnectdb(url)
            defer { PQfinish(connection) }
            guard PQstatus(connection) == CONNECTION_OK else {
                throw BenchError("raw libpq could not connect")
            }
            let raw = Measure.nanosecondsPerOperation(operations: writes, repetitions: repetitions) {
                for index in 0..<writes {
                    let key = "k\(index % 100)"
                    // A type byte and the integer's eight: about the bytes the store writes.
                    let value = [UInt8(1)] + withUnsafeBytes(of: Int64(index).bigEndian) { Array($0) }
                    let namespace = "bench-raw-\(getpid())"
                    key.withCString { keyPointer in
                        namespace.withCString { namespacePointer in
                            value.withUnsafeBytes { bytes in
                                let values: [UnsafePointer<CChar>?] = [
                                    namespacePointer, keyPointer,
                                    bytes.baseAddress?.assumingMemoryBound(to: CChar.self),
                                ]
                                let lengths: [Int32] = [0, 0, Int32(bytes.count)]
                                let formats: [Int32] = [0, 0, 1]
                                PQclear(
                                    PQexecParams(
                                        connection,
                                        """
                                        INSERT INTO prefs_entries(namespace, key, value) VALUES ($1, $2, $3)
                                        ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value
                                        """, 3, nil, values, lengths, formats, 0))
                            }
                        }
                    }
                }
            }
            let prefs = try Measure.nanosecondsPerOperation(operations: writes, repetitions: repetitions) {
                for index in 0..<writes {
                    try store.setValue(.integer(Int64(index)), forKey: "k\(index % 100)")
                }
            }
            return (raw, prefs)
        }
    }
#endif
