import Foundation

#if os(macOS) || os(Linux)
    /// Starts a program with `posix_spawn` itself, not Foundation's `Process`.
    ///
    /// On Linux, `Process.run()` of Swift 6.3 finds the highest open descriptor by copying each
    /// `/proc/self/fd` entry's whole 256-byte name out of `readdir`'s buffer, past the end of a
    /// short last entry (swift-corelibs-foundation issue 5472, fixed after 6.3). When that
    /// buffer ends at an unmapped page the whole test process dies in `memcpy`: seen twice in
    /// five CI runs once the Secret Service tests' D-Bus connections added descriptors, and
    /// reported by AddressSanitizer as a heap overflow in `Process.run()` at every run.
    ///
    /// ```swift
    /// let pid = try Spawn.start("/bin/true", [], environment: ["PATH": "/bin"], stdin: 0, stdout: 1, stderr: 2)
    /// ```
    enum Spawn {
        /// Starts `path` with `arguments` and exactly `environment`, and returns its process id.
        ///
        /// Its standard streams are the three descriptors given; it runs in a process group of its
        /// own (as `Process` puts it), with every other descriptor of this process closed in it.
        static func start(
            _ path: String, _ arguments: [String], environment: [String: String],
            stdin: Int32, stdout: Int32, stderr: Int32
        ) throws -> pid_t {
            #if canImport(Darwin)
                var actions: posix_spawn_file_actions_t?
                var attributes: posix_spawnattr_t?
            #else
                var actions = posix_spawn_file_actions_t()
                var attributes = posix_spawnattr_t()
            #endif
            try check(posix_spawn_file_actions_init(&actions), "posix_spawn_file_actions_init")
            defer { posix_spawn_file_actions_destroy(&actions) }
            try check(posix_spawnattr_init(&attributes), "posix_spawnattr_init")
            defer { posix_spawnattr_destroy(&attributes) }

            let streams = [(stdin, STDIN_FILENO), (stdout, STDOUT_FILENO), (stderr, STDERR_FILENO)]
            for (descriptor, target) in streams {
                try check(posix_spawn_file_actions_adddup2(&actions, descriptor, target), "adddup2")
            }
            // Nothing but the three streams reaches the child: a pipe end of another test's child
            // held open by this one would keep that test's reader waiting for an end.
            #if canImport(Darwin)
                let closeTheRest = Int32(POSIX_SPAWN_CLOEXEC_DEFAULT)
            #else
                try check(try closeFrom()(&actions, 3), "posix_spawn_file_actions_addclosefrom_np")
                let closeTheRest: Int32 = 0
            #endif
            try check(posix_spawnattr_setpgroup(&attributes, 0), "posix_spawnattr_setpgroup")
            try check(
                posix_spawnattr_setflags(&attributes, Int16(Int32(POSIX_SPAWN_SETPGROUP) | closeTheRest)),
                "posix_spawnattr_setflags")

            let argv = cStrings([path] + arguments)
            let envp = cStrings(environment.map { "\($0.key)=\($0.value)" })
            defer {
                for pointer in argv + envp { free(pointer) }
            }
            var pid: pid_t = 0
            let result = posix_spawn(&pid, path, &actions, &attributes, argv + [nil], envp + [nil])
            guard result == 0 else {
                throw TestFailure("cannot start \(path): \(String(cString: strerror(result)))")
            }
            return pid
        }

        #if !canImport(Darwin)
            /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which Swift's
            /// Glibc module does not declare.
            private typealias CloseFrom =
                @convention(c) (
                    UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32
                ) -> Int32

            private static func closeFrom() throws -> CloseFrom {
                guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else {
                    throw TestFailure(
                        "this C library has no posix_spawn_file_actions_addclosefrom_np (glibc 2.34 or later)"
                    )
                }
                return unsafeBitCast(symbol, to: CloseFrom.self)
            }
        #endif

        /// The exit status of a `waitpid` status word, or the number of the signal that ended it
        /// (as `Process.terminationStatus` gives them).
        static func endStatus(_ status: Int32) -> Int32 {
            let signal = status & 0x7f
            return signal == 0 ? (status >> 8) & 0xff : signal
        }

        private static func cStrings(_ strings: [String]) -> [UnsafeMutablePointer<CChar>?] {
            strings.map { strdup($0) }
        }

        private static func check(_ result: Int32, _ call: String) throws {
            guard result == 0 else {
                throw TestFailure("\(call) failed: \(String(cString: strerror(result)))")
            }
        }
    }
#endif
