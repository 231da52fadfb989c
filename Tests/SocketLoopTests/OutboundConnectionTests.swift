import Glibc
import Logging
import SocketLoop
import Synchronization
import TestSupport
import Testing

/// A client handler that sends a greeting as soon as it is written (possibly before the connect
/// completes) and records what comes back and how the connection ended.
final class RecordingClient: ConnectionHandler, @unchecked Sendable {
    private let state = Mutex(Record())

    struct Record {
        var opened = false
        var received: [UInt8] = []
        var closed = false
        var failure: SocketError?
    }

    var record: Record { state.withLock { $0 } }

    func connectionDidOpen(_ connection: Connection) {
        state.withLock { $0.opened = true }
    }

    func connection(_ connection: Connection, didReceive bytes: UnsafeRawBufferPointer) {
        state.withLock { $0.received.append(contentsOf: bytes) }
    }

    func connectionDidClose(_ connection: Connection) {
        state.withLock {
            $0.closed = true
            $0.failure = connection.failure
        }
    }
}

/// A client loop on its own thread, stopped and joined at the end.
final class ClientLoopThread: @unchecked Sendable {
    let loop: EventLoop
    private var thread = pthread_t()

    init(iteration: (@Sendable (LoopInstant) -> Void)? = nil) throws {
        loop = try EventLoop(index: 0)
        if let iteration { loop.onEveryIteration(maxWait: .milliseconds(2), iteration) }
        let box = Unmanaged.passRetained(loop).toOpaque()
        pthread_create(
            &thread, nil,
            { argument in
                Unmanaged<EventLoop>.fromOpaque(argument!).takeRetainedValue().run()
                return nil
            }, box)
    }

    func stop() {
        loop.stop()
        pthread_join(thread, nil)
    }
}

@Suite(.serialized) struct OutboundConnectionTests {
    /// A one-loop server on an ephemeral loopback port.
    static func startServer(
        _ makeHandler: @escaping @Sendable (Connection) -> any ConnectionHandler
    ) throws -> SocketServer {
        let server = SocketServer(
            configuration: SocketServerConfiguration(addresses: [.tcp(host: "127.0.0.1", port: 0)], loopCount: 1),
            logger: Logger(label: "test"), makeHandler: makeHandler)
        try server.start()
        return server
    }

    @Test func connectsWritesEarlyAndReadsTheEcho() async throws {
        let server = try Self.startServer { _ in EchoHandler() }
        defer { server.stop() }
        let port = try #require(server.boundPorts.first)
        let client = RecordingClient()
        let loopThread = try ClientLoopThread()
        defer { loopThread.stop() }
        let loop = loopThread.loop
        loop.execute {
            // Written while the connect is still in flight: sent once it is established.
            let connection = try? loop.connect(to: IPv4Endpoint("127.0.0.1", port: UInt16(port)), handler: client)
            connection?.write(Array("hello from the client\n".utf8))
        }
        #expect(await waitUntil { client.record.received.count == 22 })
        #expect(String(decoding: client.record.received, as: UTF8.self) == "hello from the client\n")
        #expect(client.record.opened)
        #expect(await waitUntil { server.openConnections == 1 })
        #expect(loop.openConnections == 1)
    }

    @Test func aRefusedConnectClosesWithTheReason() async throws {
        // A port that was just bound and released: nothing listens there.
        let server = try Self.startServer { _ in EchoHandler() }
        let port = try #require(server.boundPorts.first)
        server.stop()
        let client = RecordingClient()
        let loopThread = try ClientLoopThread()
        defer { loopThread.stop() }
        let loop = loopThread.loop
        loop.execute { _ = try? loop.connect(to: IPv4Endpoint("127.0.0.1", port: UInt16(port)), handler: client) }
        #expect(await waitUntil { client.record.closed })
        #expect(!client.record.opened)
        #expect(client.record.failure?.code == ECONNREFUSED)
        #expect(loop.openConnections == 0)
    }

    @Test func bindsTheRequestedSourceAddress() async throws {
        final class PeerReporter: ConnectionHandler {
            func connectionDidOpen(_ connection: Connection) {
                connection.write(Array("\(connection.remoteAddress)\n".utf8))
            }
            func connection(_ connection: Connection, didReceive bytes: UnsafeRawBufferPointer) {}
        }
        let server = try Self.startServer { _ in PeerReporter() }
        defer { server.stop() }
        let port = try #require(server.boundPorts.first)
        let client = RecordingClient()
        let loopThread = try ClientLoopThread()
        defer { loopThread.stop() }
        let loop = loopThread.loop
        let source = try IPv4Endpoint("127.0.0.7", port: 0).address
        loop.execute {
            _ = try? loop.connect(to: IPv4Endpoint("127.0.0.1", port: UInt16(port)), from: source, handler: client)
        }
        #expect(await waitUntil { client.record.received.last == UInt8(ascii: "\n") })
        #expect(String(decoding: client.record.received, as: UTF8.self).hasPrefix("127.0.0.7:"))
    }

    @Test func iterationHandlersRunBetweenCoarseTicks() async throws {
        let iterations = Atomic<Int>(0)
        let loopThread = try ClientLoopThread { _ in iterations.add(1, ordering: .relaxed) }
        defer { loopThread.stop() }
        // With a 2 ms bound on the wait, an idle loop wakes far more often than its 1 s tick.
        #expect(await waitUntil(seconds: 10) { iterations.load(ordering: .relaxed) >= 20 })
    }

    @Test func endpointsParseDottedQuadsOnly() throws {
        #expect(try IPv4Endpoint("localhost", port: 80).description == "127.0.0.1:80")
        #expect(try IPv4Endpoint("10.1.2.3", port: 8080).description == "10.1.2.3:8080")
        #expect(throws: SocketError.self) { try IPv4Endpoint("example.com", port: 80) }
    }
}
