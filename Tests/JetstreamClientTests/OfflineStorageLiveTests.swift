import CanvasModel
import Foundation
import Jetstream
import JetstreamClient
import JetstreamJSON
import JetstreamModel
import Testing

/// Storage against the real gateway (docs/offline.md): a client with `.directory(URL)` starts from
/// its stored copy with the server down, keeps what was `saved()` across runs, catches up from the
/// stored version, and every stored change set reaches the server exactly once.
@Suite("Offline storage: stored copies, saved(), starting offline, catching up", .serialized)
@MainActor
struct OfflineStorageLiveTests {
    /// A client of `live`'s gateway that keeps its scopes in `directory`.
    static func client(
        _ live: LiveHarness, directory: URL, transport: FaultyTransport = FaultyTransport()
    ) -> Client {
        var configuration = Client.Configuration()
        configuration.backoff = LiveHarness.quickBackoff
        configuration.storedCopyInterval = .milliseconds(50)
        return Client(
            url: live.gateway.url, storage: .directory(directory), transport: transport, configuration: configuration)
    }

    /// A live gateway (with `arguments`) and a storage directory of its own, removed at the end.
    static func withStorage(
        _ arguments: [String] = [], _ body: (LiveHarness, URL) async throws -> Void
    ) async throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "jetstream-storage-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try await LiveHarness.run(arguments) { live in try await body(live, directory) }
    }

    static func labels(_ canvas: Canvas) -> [String] { canvas.shapes.map(\.label) }

    static func shape(_ label: String) -> Shape {
        let shape = Shape()
        shape.label = label
        return shape
    }

    /// The server's shapes' labels, and how many logged change sets carry each key.
    static func serverLabels(_ live: LiveHarness) async throws -> [String] {
        let state = try await live.serverState()
        return try CanvasSnapshot(state).shapes.map(\.label)
    }

    static func keyCounts(_ live: LiveHarness) async throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for set in try await live.api.changeSets(of: live.scopeName) {
            if let key = set["idempotencyKey"]?.string { counts[key, default: 0] += 1 }
        }
        return counts
    }

    @Test(
        "changes saved with the server down survive the app's end; the next run shows the stored view offline, reconnecting, takes more changes, and each set reaches the server once when it is back"
    )
    func offlineAcrossRuns() async throws {
        try await Self.withStorage { live, directory in
            try await live.seed(labels: ["seed"])
            let first = Self.client(live, directory: directory)
            let canvas = Canvas()
            let sync = try await first.fetch(Scope(name: live.scopeName, root: canvas))
            canvas.shapes.append(Self.shape("online"))
            try await sync.saved()
            try await Poll.until("the online change is confirmed") { sync.pendingCount == 0 }

            live.gateway.kill()
            canvas.shapes.append(Self.shape("offline-1"))
            try await sync.saved()
            // Not delivered to the sync yet when it stops: stopping stores it too.
            canvas.shapes.append(Self.shape("offline-2"))
            await sync.stop()

            // The next run: the server is still down.
            let transport = FaultyTransport()
            let second = Self.client(live, directory: directory, transport: transport)
            let again = Canvas()
            let resumed = try await second.fetch(Scope(name: live.scopeName, root: again))
            #expect(Self.labels(again) == ["seed", "online", "offline-1", "offline-2"], "the stored view, offline")
            #expect(resumed.pendingCount == 2 && resumed.storageProblems.isEmpty)
            try await Poll.until("reconnecting, status \(resumed.status)") {
                if case .reconnecting = resumed.status { return true }
                return false
            }
            again.shapes.append(Self.shape("offline-3"))
            try await resumed.saved()
            #expect(resumed.pendingCount == 3)

            try await live.gateway.restart()
            try await Poll.until("caught up: live, nothing pending (status \(resumed.status), \(resumed.pendingCount))")
            {
                resumed.status == .live && resumed.pendingCount == 0
            }
            let server = try await Self.serverLabels(live)
            #expect(server == ["seed", "online", "offline-1", "offline-2", "offline-3"])
            #expect(Self.labels(again) == server)
            let counts = try await Self.keyCounts(live)
            #expect(counts.values.allSatisfy { $0 == 1 }, "every key once in the log: \(counts)")
            #expect(counts.count == 4, "the four sets of this client, each logged: \(counts)")
            await resumed.stop()
        }
    }

    @Test(
        "a second run with the server up resumes the stream from the stored version (no GET of the scope) and gets what others wrote meanwhile"
    )
    func catchesUpFromTheStoredVersion() async throws {
        try await Self.withStorage { live, directory in
            try await live.seed(labels: ["seed"])
            let first = Self.client(live, directory: directory)
            let canvas = Canvas()
            let sync = try await first.fetch(Scope(name: live.scopeName, root: canvas))
            canvas.shapes.append(Self.shape("mine"))
            try await Poll.until("confirmed") {
                try await Self.serverLabels(live) == ["seed", "mine"] && sync.pendingCount == 0
                    && sync.status == .live
            }
            let storedVersion = sync.version
            await sync.stop()

            let other = try await live.peer()
            other.canvas.shapes.append(Self.shape("theirs"))
            try await live.waitUntilConverged([other])

            let transport = FaultyTransport()
            let second = Self.client(live, directory: directory, transport: transport)
            let again = Canvas()
            let resumed = try await second.fetch(Scope(name: live.scopeName, root: again))
            #expect(resumed.version == storedVersion, "it starts from the stored copy")
            try await Poll.until("theirs arrives: \(Self.labels(again)), \(transport.streamScopes), \(resumed.status)")
            {
                Self.labels(again) == ["seed", "mine", "theirs"]
            }
            #expect(
                !transport.requestLines.contains { $0.hasPrefix("GET /v1/scopes/") },
                "the state came from storage and the stream: \(transport.requestLines)")
            let query = transport.streamScopes.first ?? []
            #expect(query == ["\(live.scopeName)@\(storedVersion)"], "the stream resumes after the stored version")
            await resumed.stop()
        }
    }

    @Test("a set whose answer was lost before the app ended is sent again with its key and applied once")
    func lostAnswerAcrossRuns() async throws {
        try await Self.withStorage { live, directory in
            try await live.seed(labels: [])
            // Every answer is lost after the commit, and no stream opens: the set stays pending.
            let transport = FaultyTransport()
            transport.failStreams(1_000)
            let first = Self.client(live, directory: directory, transport: transport)
            let canvas = Canvas()
            let sync = try await first.fetch(Scope(name: live.scopeName, root: canvas))
            transport.loseAnswers(1_000)
            canvas.shapes.append(Self.shape("once"))
            try await sync.saved()
            try await Poll.until("the set reached the server") { try await Self.serverLabels(live) == ["once"] }
            #expect(sync.pendingCount == 1)
            await sync.stop()

            let second = Self.client(live, directory: directory)
            let again = Canvas()
            let resumed = try await second.fetch(Scope(name: live.scopeName, root: again))
            try await Poll.until("confirmed") { resumed.status == .live && resumed.pendingCount == 0 }
            #expect(Self.labels(again) == ["once"])
            #expect(try await Self.serverLabels(live) == ["once"])
            let counts = try await Self.keyCounts(live)
            #expect(counts.count == 1 && counts.values.allSatisfy { $0 == 1 }, "\(counts)")
            await resumed.stop()
        }
    }

    @Test(
        "a set made before everything the server still logs, sent after its window, is refused with its own type and reported"
    )
    func pastTheWindowIsRefusedNotAppliedTwice() async throws {
        try await Self.withStorage(["--idempotency-ttl", "2"]) { live, directory in
            try await live.seed(labels: [])
            let first = Self.client(live, directory: directory)
            let canvas = Canvas()
            let sync = try await first.fetch(Scope(name: live.scopeName, root: canvas))
            live.gateway.kill()
            let madeAt = ContinuousClock.now
            canvas.shapes.append(Self.shape("too old to tell"))
            try await sync.saved()
            await sync.stop()

            try await live.gateway.restart()
            // Another writer's set, logged more than the allowed clock difference (half the 2 s
            // window) after the stored set was made: the log no longer reaches back before it.
            try await Poll.until("1.5 s since the set was made") { ContinuousClock.now - madeAt > .milliseconds(1500) }
            let other = try await live.peer()
            other.canvas.shapes.append(Self.shape("later"))
            try await live.waitUntilConverged([other])
            try await Poll.until("past the window") { ContinuousClock.now - madeAt > .milliseconds(3500) }

            let second = Self.client(live, directory: directory)
            let again = Canvas()
            let resumed = try await second.fetch(Scope(name: live.scopeName, root: again))
            var rejections: [Rejection] = []
            resumed.onRejected { rejections.append($0) }
            try await Poll.until("refused and reported") { !rejections.isEmpty && resumed.pendingCount == 0 }
            #expect(rejections.first?.status == 409)
            #expect(rejections.first?.problemType?.hasSuffix("/idempotency-window-passed") == true)
            #expect(Self.labels(again) == ["later"], "its effect left the view")
            #expect(try await Self.serverLabels(live) == ["later"])
            await resumed.stop()
        }
    }

    @Test(
        "a second sync of the same stored scope is refused while the first runs, and may take it after; removeStoredCopy waits for the stop"
    )
    func oneSyncAtATime() async throws {
        try await Self.withStorage { live, directory in
            try await live.seed(labels: ["seed"])
            let first = Self.client(live, directory: directory)
            let sync = try await first.fetch(Scope(name: live.scopeName, root: Canvas()))
            let second = Self.client(live, directory: directory)
            do {
                _ = try await second.fetch(Scope(name: live.scopeName, root: Canvas()))
                Issue.record("a second sync of the stored scope was let in")
            } catch {
                guard case ClientError.storage(let detail) = error else { throw error }
                #expect(detail.contains("in use by another sync"), "\(detail)")
            }
            do {
                try await first.removeStoredCopy(of: live.scopeName)
                Issue.record("the stored copy of a running sync was removed")
            } catch {
                guard case ClientError.storage = error else { throw error }
            }
            await sync.stop()
            let canvas = Canvas()
            let later = try await second.fetch(Scope(name: live.scopeName, root: canvas))
            #expect(Self.labels(canvas) == ["seed"])
            await later.stop()

            // Removed: no folder left; the next fetch loads the scope from the server.
            try await second.removeStoredCopy(of: live.scopeName)
            #expect(!FileManager.default.fileExists(atPath: directory.appending(path: live.scopeName).path))
            try await second.removeStoredCopy(of: live.scopeName)
        }
    }

    @Test("a damaged stored copy gives a clear problem and a fresh start from the server; the file is kept aside")
    func damagedCopy() async throws {
        try await Self.withStorage { live, directory in
            try await live.seed(labels: ["seed"])
            let first = Self.client(live, directory: directory)
            let sync = try await first.fetch(Scope(name: live.scopeName, root: Canvas()))
            await sync.stop()
            let copy = directory.appending(path: live.scopeName).appending(path: "copy")
            var bytes = [UInt8](try Data(contentsOf: copy))
            bytes[bytes.count / 2] ^= 0xFF
            try Data(bytes).write(to: copy)

            let second = Self.client(live, directory: directory)
            let canvas = Canvas()
            let resumed = try await second.fetch(Scope(name: live.scopeName, root: canvas))
            #expect(Self.labels(canvas) == ["seed"], "the server's state")
            #expect(resumed.storageProblems.count == 1)
            #expect(resumed.storageProblems.first?.contains("could not be read") == true, "\(resumed.storageProblems)")
            #expect(FileManager.default.fileExists(atPath: copy.path + ".damaged"))
            try await resumed.saved()
            await resumed.stop()
            #expect(FileManager.default.fileExists(atPath: copy.path), "a new copy was stored")
        }
    }

    @Test("saved() without storage is a clear error")
    func savedWithoutStorage() async throws {
        try await LiveHarness.run { live in
            try await live.seed(labels: [])
            let peer = try await live.peer()
            do {
                try await peer.sync.saved()
                Issue.record("saved() without storage returned")
            } catch {
                guard case ClientError.invalidState(let detail) = error else { throw error }
                #expect(detail.contains("not stored"))
            }
        }
    }
}
