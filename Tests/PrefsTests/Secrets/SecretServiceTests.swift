#if os(Linux)
    import Foundation
    import PrefsSupport
    import PrefsTestSupport
    import Testing

    @testable import Prefs

    /// Secret keys against a real Secret Service.
    ///
    /// `gnome-keyring-daemon` on a D-Bus session bus of the test's own (``SecretServiceDaemon``). One at a time: some stop or lock the daemon.
    @Suite(.serialized) struct SecretServiceTests {
        static let token = Preferences.Key<String?>("apiToken", storedAs: .secret)
        static let settings = Preferences.Key<[String: Int]>("limits", default: [:], storedAs: .secret)

        /// A handle on a fresh SQLite store in a folder of its own, its secrets under a service
        /// no other test uses.
        private func handle(
            _ issues: IssueRecorder = IssueRecorder(), folder: URL? = nil, service: String? = nil
        )
            throws -> (Preferences, URL, String)
        {
            let folder = folder ?? ScratchFolder.make("secret-service-store")
            let service = service ?? "com.example.tests.\(UUID().uuidString)"
            let store = try SQLiteStore(path: folder.appendingPathComponent("app.sqlite").path)
            return (
                Preferences(
                    store: store, diagnostics: issues.diagnostics, secrets: .system(service: service)),
                folder, service
            )
        }

        @Test func storedInTheKeyringAndInNoFile() throws {
            guard SecretServiceDaemon.ready != nil else { return }
            let (prefs, folder, service) = try handle()
            let secret = "never-in-a-file-ss-token-4b1f0e"
            try prefs.set(secret, for: Self.token)
            try prefs.set(["requests": 41, "burst": 7], for: Self.settings)
            #expect(prefs[Self.token] == secret)

            // A handle with a copy of its own asks the keyring.
            let (fresh, _, _) = try handle(folder: folder, service: service)
            #expect(fresh[Self.token] == secret)
            #expect(try fresh.value(for: Self.settings) == ["requests": 41, "burst": 7])
            // As libsecret holds it: the string as text, other values in Prefs' encoding.
            let raw = try SecretService().item(service: service, account: "apiToken")
            #expect(raw == SecretItem(bytes: Data(secret.utf8), form: "text"))
            let limits = try SecretService().item(service: service, account: "limits")
            #expect(limits?.form == "value")
            // Another type written under the same key replaces the item: one answers.
            let reused = Preferences.Key<Int>("apiToken", default: 0, storedAs: .secret)
            try prefs.set(99, for: reused)
            #expect(try SecretService().item(service: service, account: "apiToken")?.form == "value")
            #expect(try fresh.value(for: reused) == 99)
            try prefs.set(secret, for: Self.token)

            try (prefs.store as! SQLiteStore).flush()
            #expect(SecretFiles.holding(secret, under: folder) == [])

            prefs.reset(Self.token)
            #expect(fresh[Self.token] == nil)
            #expect(try SecretService().item(service: service, account: "apiToken") == nil)
        }

        @Test func anotherProcessWritesAndThisOneSees() async throws {
            guard SecretServiceDaemon.ready != nil else { return }
            let (prefs, folder, service) = try handle()
            let path = folder.appendingPathComponent("app.sqlite").path
            try prefs.set("never-in-a-file-from-here", for: Self.token)
            #expect(
                try Helper.run(["secret", path, service, "apiToken"]).stdout == "never-in-a-file-from-here")

            let seen = Locked<[String?]>([])
            let observation = prefs.observe(Self.token, initial: false) { value in
                seen.withLock { $0.append(value) }
            }
            defer { observation.cancel() }
            let wrote = try Helper.run(["secret", path, service, "apiToken", "never-in-a-file-from-there"])
            #expect(wrote.stdout == "wrote", "\(wrote.stderr)")
            #expect(await eventually { seen.withLock { $0 }.last == "never-in-a-file-from-there" })
            #expect(prefs[Self.token] == "never-in-a-file-from-there")
            _ = try Helper.run(["secret", path, service, "apiToken", "-"])
            #expect(await eventually { prefs[Self.token] == nil })
        }

        @Test func theDaemonGoingAwayIsAClearErrorAndLosesNothing() throws {
            guard let daemon = SecretServiceDaemon.ready else { return }
            let issues = IssueRecorder()
            let (prefs, folder, service) = try handle(issues)
            try prefs.set("never-in-a-file-before-the-outage", for: Self.token)
            daemon.stopKeyring()
            defer { try? daemon.startKeyring() }

            let (fresh, _, _) = try handle(issues, folder: folder, service: service)
            let read = #expect(throws: StoreError.self) { try fresh.value(for: Self.token) }
            #expect(read?.kind == .secretStoreUnavailable)
            #expect(read?.message.contains("Secret Service") == true, "\(read?.message ?? "")")
            #expect(fresh[Self.token] == nil)
            #expect(issues.issues.count == 1)
            // Told once, the store named once: not "in the Secret Service: the Secret Service: …".
            let told = issues.issues.first?.description ?? ""
            #expect(!told.contains("Secret Service: the Secret Service"), "\(told)")
            let stampBefore = prefs.store.value(forKey: "prefs.secret:apiToken")
            let write = #expect(throws: StoreError.self) {
                try prefs.set("never-in-a-file-during-the-outage", for: Self.token)
            }
            #expect(write?.kind == .secretStoreUnavailable)
            #expect(write?.keys == ["apiToken"])
            #expect(prefs.store.value(forKey: "prefs.secret:apiToken") == stampBefore)

            try daemon.startKeyring()
            let (after, _, _) = try handle(issues, folder: folder, service: service)
            #expect(try after.value(for: Self.token) == "never-in-a-file-before-the-outage")
            try after.set("never-in-a-file-after-the-outage", for: Self.token)
            #expect(prefs[Self.token] == "never-in-a-file-after-the-outage")
        }

        @Test func aDaemonThatStopsAnsweringIsGivenFiveSeconds() throws {
            guard let daemon = SecretServiceDaemon.ready else { return }
            let (prefs, folder, service) = try handle()
            try prefs.set("never-in-a-file-before-the-stop", for: Self.token)
            try daemon.signalKeyring(SIGSTOP)
            defer { try? daemon.signalKeyring(SIGCONT) }
            let (fresh, _, _) = try handle(folder: folder, service: service)
            let started = ContinuousClock.now
            let read = #expect(throws: StoreError.self) { try fresh.value(for: Self.token) }
            let waited = ContinuousClock.now - started
            #expect(read?.kind == .secretStoreUnavailable)
            #expect(read?.message.contains("did not answer") == true, "\(read?.message ?? "")")
            // The bound is 5 s; D-Bus's own was 25 s a call, 50 s for a first read.
            #expect(waited < .seconds(20), "\(waited)")
            try daemon.signalKeyring(SIGCONT)
            #expect(try fresh.value(for: Self.token) == "never-in-a-file-before-the-stop")
        }

        @Test func aLockedKeyringIsSaidAndUnlockingBringsItBack() throws {
            guard let daemon = SecretServiceDaemon.ready else { return }
            let (prefs, folder, service) = try handle()
            try prefs.set("never-in-a-file-kept-while-locked", for: Self.token)
            try daemon.lockKeyring()
            let (fresh, _, _) = try handle(folder: folder, service: service)
            let read = #expect(throws: StoreError.self) { try fresh.value(for: Self.token) }
            #expect(read?.kind == .protectedDataUnavailable)
            #expect(read?.message.contains("locked") == true)
            let write = #expect(throws: StoreError.self) {
                try fresh.set("never-in-a-file-refused", for: Self.token)
            }
            #expect(write?.kind == .protectedDataUnavailable)
            #expect(throws: StoreError.self) { try fresh.set(nil, for: Self.token) }

            // Unlocked (the daemon started again with the password): the value is as it was.
            daemon.stopKeyring()
            try daemon.startKeyring()
            let (unlocked, _, _) = try handle(folder: folder, service: service)
            #expect(try unlocked.value(for: Self.token) == "never-in-a-file-kept-while-locked")
        }

        @Test func withoutASessionBusItSaysWhatIsMissing() throws {
            guard SecretServiceDaemon.ready != nil else { return }
            let folder = ScratchFolder.make("secret-no-bus")
            let path = folder.appendingPathComponent("app.sqlite").path
            let output = try ChildProcess.run(
                Helper.executable,
                ["secret", path, "com.example.nobus", "apiToken", "never-in-a-file-never-stored"],
                environment: ["DBUS_SESSION_BUS_ADDRESS": nil, "DISPLAY": nil])
            #expect(output.status == 3)
            #expect(
                output.stdout.hasPrefix("error: secretStoreUnavailable: no D-Bus session bus"),
                "\(output.stdout)")
            // Nothing written anywhere instead: not the value, not a stamp.
            #expect(SecretFiles.holding("never-in-a-file-never-stored", under: folder) == [])
            #expect(try SQLiteStore(path: path).snapshot().isEmpty)
        }
    }
#endif
