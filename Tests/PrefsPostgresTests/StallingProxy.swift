#if PREFS_POSTGRESQL && (os(macOS) || os(Linux))
    import Foundation
    import PrefsSupport

    /// A TCP proxy in front of a test's server, standing for one host's network.
    ///
    /// The server listens on a Unix socket only; the proxy listens on 127.0.0.1. It forwards bytes both ways until told to stall, and then holds
    /// them — reads nothing, sends nothing, closes nothing — as a network that silently drops
    /// or holds a host's packets does. The kernel still acknowledges what fits in its buffers, so
    /// TCP (keepalives included) sees a live peer.
    final class StallingProxy: @unchecked Sendable {
        // @unchecked: the descriptors are set once; what changes is under `state`'s lock.
        private struct State {
            var stalledAll = false
            /// Stall a connection once its client sent these bytes (after forwarding them).
            var marker: [UInt8]?
            var stalledPairs: Set<Int32> = []
            /// Once the marker is seen, every connection stalls, not only the one that sent it.
            var markerStallsAll = false
            var markerSeen = false
            /// Connections accepted before the last ``reset()`` are closed.
            var generation = 0
            var closed = false
        }

        private let listener: Int32
        let port: UInt16
        private let target: String
        private let state = Locked(State())
        private let threads = DispatchGroup()

        /// A proxy on 127.0.0.1 (a port of its own) to the server's Unix socket.
        init(to server: PostgresServer) throws {
            target = server.socketFolder.appendingPathComponent(".s.PGSQL.5432").path
            #if os(Linux)
                self.listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            #else
                self.listener = socket(AF_INET, SOCK_STREAM, 0)
            #endif
            let listener = listener
            guard listener >= 0 else { throw ServerError("socket() failed: \(errno)") }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = 0
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard bound == 0, listen(listener, 16) == 0 else {
                Foundation.close(listener)
                throw ServerError("bind() or listen() failed: \(errno)")
            }
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
            }
            port = UInt16(bigEndian: address.sin_port)
            threads.enter()
            Thread.detachNewThread { [self] in
                acceptConnections()
                threads.leave()
            }
        }

        /// The server's URL through the proxy.
        var url: String {
            "postgresql://postgres:\(PostgresServer.password)@127.0.0.1:\(port)/postgres"
        }

        /// Holds every connection's bytes, both ways, from now on (new connections too).
        func stallAll() { state.withLock { $0.stalledAll = true } }

        /// Holds a connection's bytes, both ways, once its client has sent `marker` (which is
        /// forwarded); with `everyConnection`, from then on every connection's (the host is cut
        /// off at that step).
        func stall(afterClientSends marker: String, everyConnection: Bool = false) {
            state.withLock {
                $0.marker = Array(marker.utf8)
                $0.markerStallsAll = everyConnection
                $0.markerSeen = false
            }
        }

        /// Closes every connection made so far, both ways, as a network that resets them does
        /// (new ones are forwarded as before).
        func reset() { state.withLock { $0.generation += 1 } }

        /// Whether a connection was stalled after sending the marker.
        var markerSeen: Bool { state.withLock { $0.markerSeen } }

        /// Forwards again (what was held goes on).
        func resume() {
            state.withLock {
                $0.stalledAll = false
                $0.marker = nil
                $0.stalledPairs = []
            }
        }

        /// Closes every connection and the listening socket.
        func close() {
            let first = state.withLock { state -> Bool in
                defer { state.closed = true }
                return !state.closed
            }
            guard first else { return }
            _ = threads.wait(timeout: .now() + 5)
            Foundation.close(listener)
        }

        deinit { close() }

        private var isClosed: Bool { state.withLock { $0.closed } }

        private func acceptConnections() {
            while !isClosed {
                var descriptor = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
                guard poll(&descriptor, 1, 50) > 0 else { continue }
                let client = accept(listener, nil, nil)
                guard client >= 0 else { continue }
                Self.neverSignal(client)
                guard let upstream = connectToServer() else {
                    Foundation.close(client)
                    continue
                }
                let generation = state.withLock { $0.generation }
                threads.enter()
                Thread.detachNewThread { [self] in
                    pump(client: client, server: upstream, generation: generation)
                    threads.leave()
                }
            }
        }

        private func connectToServer() -> Int32? {
            #if os(Linux)
                let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            #else
                let descriptor = socket(AF_UNIX, SOCK_STREAM, 0)
            #endif
            guard descriptor >= 0 else { return nil }
            Self.neverSignal(descriptor)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            let path = Array(target.utf8CString)
            withUnsafeMutableBytes(of: &address.sun_path) { raw in
                for (index, byte) in path.prefix(raw.count - 1).enumerated() {
                    raw[index] = UInt8(bitPattern: byte)
                }
            }
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            guard connected == 0 else {
                Foundation.close(descriptor)
                return nil
            }
            return descriptor
        }

        /// Forwards between one client and its server connection until either closes, the proxy
        /// does, or it is reset; holds both ways while stalled.
        private func pump(client: Int32, server: Int32, generation: Int) {
            defer {
                Foundation.close(client)
                Foundation.close(server)
            }
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while !isClosed {
                let (stalled, reset) = state.withLock {
                    ($0.stalledAll || $0.stalledPairs.contains(client), $0.generation != generation)
                }
                if reset { return }
                if stalled {
                    Thread.sleep(forTimeInterval: 0.02)
                    continue
                }
                var descriptors = [
                    pollfd(fd: client, events: Int16(POLLIN), revents: 0),
                    pollfd(fd: server, events: Int16(POLLIN), revents: 0),
                ]
                guard poll(&descriptors, 2, 50) > 0 else { continue }
                for (index, (from, to)) in [(client, server), (server, client)].enumerated()
                where descriptors[index].revents != 0 {
                    let count = read(from, &buffer, buffer.count)
                    guard count > 0 else { return }
                    let chunk = Array(buffer[0..<count])
                    guard writeAll(chunk, to: to) else { return }
                    if from == client {
                        state.withLock { state in
                            if let marker = state.marker, Self.contains(chunk, marker) {
                                state.stalledPairs.insert(client)
                                state.stalledAll = state.stalledAll || state.markerStallsAll
                                state.markerSeen = true
                                state.marker = nil
                            }
                        }
                    }
                }
            }
        }

        private func writeAll(_ bytes: [UInt8], to descriptor: Int32) -> Bool {
            var offset = 0
            while offset < bytes.count {
                // Never SIGPIPE: a peer that closed (a reset, the server stopped) ends this pair,
                // not the test process.
                let written = bytes[offset...].withUnsafeBytes {
                    send(descriptor, $0.baseAddress, $0.count, Self.noSignal)
                }
                guard written > 0 else { return false }
                offset += written
            }
            return true
        }

        #if os(Linux)
            private static let noSignal = Int32(MSG_NOSIGNAL)
        #else
            private static let noSignal: Int32 = 0  // each socket is SO_NOSIGPIPE instead
        #endif

        /// On Apple platforms, a socket that never raises SIGPIPE (Linux: `MSG_NOSIGNAL` per send).
        private static func neverSignal(_ descriptor: Int32) {
            #if !os(Linux)
                var on: Int32 = 1
                _ = setsockopt(descriptor, SOL_SOCKET, SO_NOSIGPIPE, &on, socklen_t(MemoryLayout<Int32>.size))
            #endif
        }

        private static func contains(_ bytes: [UInt8], _ marker: [UInt8]) -> Bool {
            guard !marker.isEmpty, bytes.count >= marker.count else { return false }
            for start in 0...(bytes.count - marker.count)
            where bytes[start..<start + marker.count].elementsEqual(marker) {
                return true
            }
            return false
        }
    }
#endif
