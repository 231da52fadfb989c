import HTTPTypes
import Logging
import SocketLoop
import Synchronization
import TestSupport
import Testing

@testable import HTTPServer

/// Whatever way an HTTP/2 stream closes — answered, or reset by the client while it is an open
/// event stream, a response waiting for window, or a request waiting behind it — the handler
/// keeps nothing of it, and what it held returns to the server-wide budgets. A real server on
/// loopback, raw frames from a socket, the handler looked at on its own loop.
@Suite struct HTTP2StreamCleanupLiveTests {
    /// Makes the real handler, as ``H2CConnectionFactory`` does, and keeps it for the test.
    final class KeepingFactory: HTTP2ConnectionFactory {
        let handlers = Mutex<[HTTP2ConnectionHandler]>([])

        func makePriorKnowledgeHandler(connection: Connection, core: ServerCore) -> any ConnectionHandler {
            let handler = HTTP2ConnectionHandler(connection: connection, core: core)
            handlers.withLock { $0.append(handler) }
            return handler
        }

        func makeUpgradeHandler(
            connection: Connection, request: HTTPServerRequest, settings: String, core: ServerCore
        ) -> (any ConnectionHandler)? {
            nil
        }
    }

    /// What the handler holds, read on its loop, with the server-wide counts.
    struct Holdings: Sendable, Equatable, CustomStringConvertible {
        var streams: [Int32]
        var waiting: [Int32]
        var waitingBodyBytes: Int
        var eventStreams: Int
        /// Requests routed, event streams open and unsent bytes charged, server-wide.
        var requests: Int
        var openStreams: Int
        var unsentBytes: Int

        init(_ handler: HTTP2ConnectionHandler) {
            let table = handler.table
            streams = table.records.keys.map(\.rawValue).sorted()
            waiting = table.waitingOrder.map(\.rawValue)
            waitingBodyBytes = table.waitingBodyBytes
            eventStreams = table.eventStreams
            requests = handler.core.stats.requests.load(ordering: .relaxed)
            openStreams = handler.core.stats.openStreams.load(ordering: .relaxed)
            unsentBytes = handler.core.unsentBudget.heldBytes
        }

        var description: String {
            "streams \(streams), waiting \(waiting) (\(waitingBodyBytes) bytes), event streams \(eventStreams); "
                + "server-wide: \(requests) requests, \(openStreams) open event streams, \(unsentBytes) bytes unsent"
        }
    }

    static let bigBody = 64 * 1024
    static let uploadBody = 1000
    static let bodyBudget = 4096

    static func router() -> Router {
        var router = Router()
        router.get("/empty") { _, _ in HTTPServerResponse(status: .noContent) }
        router.get("/big") { _, _ in .text(String(repeating: "b", count: bigBody)) }
        router.post("/echo") { request, _ in .text("\(request.body.count)") }
        // Stays open until the client resets it (the sink keeps the stream).
        router.get("/events") { _, context in
            _ = context.openEventStream()
            return .streamOpened
        }
        return router
    }

    func holdings(_ handler: HTTP2ConnectionHandler) async -> Holdings {
        await withCheckedContinuation { continuation in
            handler.connection.loop.execute { continuation.resume(returning: Holdings(handler)) }
        }
    }

    struct NotReached: Error, CustomStringConvertible {
        var description: String
    }

    /// Polls the handler's holdings until `condition` holds; throws with the last holdings seen
    /// when it does not within 30 s (later steps would only wait too).
    func eventually(
        _ handler: HTTP2ConnectionHandler, _ what: String, _ condition: (Holdings) -> Bool
    ) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(30)
        var last = await holdings(handler)
        while !condition(last), clock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
            last = await holdings(handler)
        }
        guard condition(last) else {
            throw NotReached(description: "\(what): not reached in 30 s; the handler holds \(last)")
        }
    }

    /// Whether no request body is charged to the server-wide body budget: the whole budget can
    /// be taken (and is given back at once).
    static func bodyBudgetIsWhole(_ core: ServerCore) -> Bool {
        guard core.reserveBodyBytes(bodyBudget) else { return false }
        core.releaseBodyBytes(bodyBudget)
        return true
    }

    @Test func everyWayAStreamCloses_LeavesNothingBehind() async throws {
        var configuration = HTTPServerConfiguration(addresses: [.tcp(host: "127.0.0.1", port: 0)], loopCount: 1)
        configuration.gracePeriod = .seconds(2)
        // Backed up beyond 1 KiB unsent; no timeout or heartbeat fires while the test runs.
        configuration.maxPendingBytes = 1024
        configuration.maxBufferedBodyBytes = Self.bodyBudget
        configuration.idleTimeout = .seconds(300)
        configuration.heartbeatInterval = .seconds(300)
        let factory = KeepingFactory()
        let core = ServerCore(
            configuration: configuration, router: Self.router(), logger: Logger(label: "test"), http2: factory)
        let server = HTTPServer(core: core)
        try server.start()
        do {
            try await closeEveryWay(server: server, core: core, factory: factory)
        } catch {
            await server.shutdown()
            throw error
        }
        await server.shutdown()
    }

    func closeEveryWay(server: HTTPServer, core: ServerCore, factory: KeepingFactory) async throws {
        let port = try #require(server.boundPorts.first)
        let client = try TestSocket(port: port)
        // A window of 0: the client takes no DATA, so response bodies stay queued.
        client.send(H2Frames.preface + H2Frames.settings([(H2Frames.initialWindowSize, 0)]))
        client.send(H2Frames.headers(stream: 1, method: "GET", path: "/empty", endStream: true))
        #expect(await waitUntil { !factory.handlers.withLock(\.isEmpty) })
        let first = factory.handlers.withLock(\.first)
        let handler = try #require(first)

        // Answered (no body): the stream closes normally and its record goes.
        try await eventually(handler, "a stream closed normally") { $0.requests == 1 && $0.streams.isEmpty }

        client.send(H2Frames.headers(stream: 3, method: "GET", path: "/events", endStream: true))
        try await eventually(handler, "an event stream opened") {
            $0.streams == [3] && $0.eventStreams == 1 && $0.openStreams == 1
        }

        // A charged body the client never reads: it backs the connection up.
        client.send(H2Frames.headers(stream: 5, method: "GET", path: "/big", endStream: true))
        try await eventually(handler, "a large body queued") { $0.streams == [3, 5] && $0.unsentBytes == Self.bigBody }

        // So a complete upload waits, its body charged to the server-wide budget.
        client.send(
            H2Frames.headers(stream: 7, method: "POST", path: "/echo", endStream: false)
                + H2Frames.data(stream: 7, [UInt8](repeating: 0x61, count: Self.uploadBody), endStream: true))
        try await eventually(handler, "an upload waiting") {
            $0.streams == [3, 5, 7] && $0.waiting == [7] && $0.waitingBodyBytes == Self.uploadBody
        }
        let chargedWhileWaiting = !Self.bodyBudgetIsWhole(core)
        #expect(chargedWhileWaiting)

        client.send(H2Frames.reset(stream: 7))
        try await eventually(handler, "a waiting upload reset") {
            $0.streams == [3, 5] && $0.waiting.isEmpty && $0.waitingBodyBytes == 0
        }
        let wholeAfterReset = Self.bodyBudgetIsWhole(core)
        #expect(wholeAfterReset)

        client.send(H2Frames.reset(stream: 5))
        try await eventually(handler, "a response with unsent bytes reset") {
            $0.streams == [3] && $0.unsentBytes == 0
        }

        client.send(H2Frames.reset(stream: 3))
        try await eventually(handler, "an open event stream reset") {
            $0.streams.isEmpty && $0.eventStreams == 0 && $0.openStreams == 0
        }
    }
}
