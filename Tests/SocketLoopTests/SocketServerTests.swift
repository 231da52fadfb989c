import Glibc
import Logging
import SocketLoop
import Synchronization
import TestSupport
import Testing

/// Echoes what it receives; answers `stats` and `big` specially.
final class EchoHandler: ConnectionHandler {
    static let opened = Atomic<Int>(0)

    func connectionDidOpen(_ connection: Connection) {
        Self.opened.add(1, ordering: .relaxed)
    }

    func connection(_ connection: Connection, didReceive bytes: UnsafeRawBufferPointer) {
        connection.write(Array(bytes))
    }
}

@Suite(.serialized) struct SocketServerTests {
    let logger = Logger(label: "test")

    func makeServer(
        addresses: [ListenAddress] = [.tcp(host: "127.0.0.1", port: 0)], loops: Int = 2, maxPending: Int = 1 << 20,
        handler: @escaping @Sendable (Connection) -> any ConnectionHandler = { _ in EchoHandler() }
    ) throws -> SocketServer {
        let server = SocketServer(
            configuration: SocketServerConfiguration(
                addresses: addresses, loopCount: loops, maxPendingBytes: maxPending),
            logger: logger, makeHandler: handler)
        try server.start()
        return server
    }

    @Test func echoesOverManyConnectionsOnEveryLoop() async throws {
        let server = try makeServer()
        defer { server.stop() }
        let port = try #require(server.boundPorts.first)
        #expect(port > 0)
        var clients: [TestSocket] = []
        for index in 0..<20 {
            let client = try TestSocket(port: port)
            client.send("hello \(index)\n")
            clients.append(client)
        }
        for (index, client) in clients.enumerated() {
            #expect(await client.read(untilContains: "hello \(index)\n") == "hello \(index)\n")
        }
        #expect(await waitUntil { server.openConnections == 20 })
        #expect(server.loops.count == 2)
        clients.removeAll()
        #expect(await waitUntil { server.openConnections == 0 })
    }

    @Test func largeWritesAreFlushedAsThePeerReads() async throws {
        final class BigWriter: ConnectionHandler {
            func connection(_ connection: Connection, didReceive bytes: UnsafeRawBufferPointer) {
                let block = SharedBytes([UInt8](repeating: 0x61, count: 1 << 20))
                for _ in 0..<8 { connection.write(ByteSlice(block)) }
                connection.closeAfterFlush()
            }
        }
        let server = try makeServer(maxPending: 64 << 20) { _ in BigWriter() }
        defer { server.stop() }
        let client = try TestSocket(port: try #require(server.boundPorts.first))
        client.send("go")
        let received = await client.read()
        #expect(received.count == 8 << 20)
        #expect(received.allSatisfy { $0 == 0x61 })
    }

    @Test func pendingLimitHookRunsForAPeerThatDoesNotRead() async throws {
        final class Flooder: ConnectionHandler {
            static let hookCalls = Atomic<Int>(0)
            func connection(_ connection: Connection, didReceive bytes: UnsafeRawBufferPointer) {
                let block = SharedBytes([UInt8](repeating: 0x62, count: 64 * 1024))
                for _ in 0..<512 where !connection.isClosed { connection.write(ByteSlice(block)) }
            }
            func connectionExceededPendingLimit(_ connection: Connection) {
                Self.hookCalls.add(1, ordering: .relaxed)
                connection.close()
            }
        }
        let server = try makeServer(maxPending: 256 * 1024) { _ in Flooder() }
        defer { server.stop() }
        let client = try TestSocket(port: try #require(server.boundPorts.first))
        client.send("go")
        #expect(await waitUntil { Flooder.hookCalls.load(ordering: .relaxed) == 1 })
        #expect(await client.waitForClose())
    }

    @Test func executeRunsOnTheLoopThreadInOrder() async throws {
        let server = try makeServer(loops: 1)
        defer { server.stop() }
        let loop = try #require(server.loops.first)
        #expect(!loop.inEventLoop)
        let seen = Mutex<[Int]>([])
        let onLoop = Atomic<Int>(0)
        for value in 0..<100 {
            loop.execute {
                if loop.inEventLoop { onLoop.add(1, ordering: .relaxed) }
                seen.withLock { $0.append(value) }
            }
        }
        #expect(await waitUntil { seen.withLock { $0.count } == 100 })
        #expect(seen.withLock { $0 } == Array(0..<100))
        #expect(onLoop.load(ordering: .relaxed) == 100)
    }

    @Test func urgentWorkRunsAheadOfQueuedWorkAndInOrder() async throws {
        let server = try makeServer(loops: 1)
        defer { server.stop() }
        let loop = try #require(server.loops.first)
        let seen = Mutex<[String]>([])
        let started = Atomic<Bool>(false)
        let release = Atomic<Bool>(false)
        defer { release.store(true, ordering: .releasing) }  // before the server stops
        // Holds the loop until everything below is queued behind it.
        loop.execute {
            started.store(true, ordering: .releasing)
            while !release.load(ordering: .acquiring) { usleep(1000) }
        }
        #expect(await waitUntil { started.load(ordering: .acquiring) })
        for name in ["n1", "n2"] { loop.execute { seen.withLock { $0.append(name) } } }
        for name in ["u1", "u2"] { loop.executeUrgently { seen.withLock { $0.append(name) } } }
        release.store(true, ordering: .releasing)
        #expect(await waitUntil { seen.withLock { $0.count } == 4 })
        #expect(seen.withLock { $0 } == ["u1", "u2", "n1", "n2"])
    }

    @Test func deadlinesFireOnTheCoarseTick() async throws {
        final class Expiring: ConnectionHandler {
            func connectionDidOpen(_ connection: Connection) {
                connection.deadline = connection.loop.now
            }
            func connection(_ connection: Connection, didReceive bytes: UnsafeRawBufferPointer) {}
            func connection(_ connection: Connection, deadlinePassed now: LoopInstant) {
                connection.write(Array("expired\n".utf8))
                connection.closeAfterFlush()
            }
        }
        let server = try makeServer(loops: 1) { _ in Expiring() }
        defer { server.stop() }
        let client = try TestSocket(port: try #require(server.boundPorts.first))
        #expect(String(decoding: await client.read(), as: UTF8.self) == "expired\n")
    }

    @Test func listensOnUnixSocketAndIPv6() async throws {
        let path = "/tmp/socketloop-test-\(getpid()).sock"
        let server = try makeServer(addresses: [.unix(path: path), .tcp(host: "::1", port: 0)])
        defer { server.stop() }
        let client = try TestSocket(unixPath: path)
        client.send("over unix\n")
        #expect(await client.read(untilContains: "\n") == "over unix\n")
        #expect(server.boundPorts.count == 1)
        server.stopAccepting()
        #expect(access(path, F_OK) != 0)
    }

    @Test func stopAcceptingRefusesNewConnectionsButKeepsOpenOnes() async throws {
        let server = try makeServer()
        defer { server.stop() }
        let port = try #require(server.boundPorts.first)
        let client = try TestSocket(port: port)
        client.send("before\n")
        #expect(await client.read(untilContains: "\n") == "before\n")
        server.stopAccepting()
        // Tests run side by side, and another one's server can be given the freed port at once;
        // so a connection that succeeds is fine as long as this server did not take it. An echo
        // there means the accept is long done: this server would count two connections then.
        if let late = try? TestSocket(port: port) {
            late.send("late\n")
            _ = await late.read(untilContains: "\n", timeout: 5)
        }
        #expect(server.openConnections == 1)
        client.send("after\n")
        #expect(await client.read(untilContains: "\n") == "after\n")
    }

    @Test func invalidAddressFailsWithAClearError() async throws {
        let invalid = SocketServer(
            configuration: SocketServerConfiguration(addresses: [.tcp(host: "not-an-ip", port: 0)], loopCount: 1),
            logger: logger, makeHandler: { _ in EchoHandler() })
        let error = #expect(throws: SocketError.self) { try invalid.start() }
        #expect(error?.description.contains("not-an-ip") == true)
    }

    @Test func aPortAnotherServerListensOnIsRefusedNotShared() async throws {
        let first = try makeServer()
        defer { first.stop() }
        let port = try #require(first.boundPorts.first)
        // Both would set SO_REUSEPORT; the kernel would split clients between them.
        let second = SocketServer(
            configuration: SocketServerConfiguration(addresses: [.tcp(host: "127.0.0.1", port: port)], loopCount: 2),
            logger: logger, makeHandler: { _ in EchoHandler() })
        let error = #expect(throws: SocketError.self) { try second.start() }
        #expect(error?.code == EADDRINUSE)
        #expect(error?.description.contains("another process listens there") == true)
        // Once the first is gone the port is free again, and several loops still share it.
        first.stop()
        let third = SocketServer(
            configuration: SocketServerConfiguration(addresses: [.tcp(host: "127.0.0.1", port: port)], loopCount: 2),
            logger: logger, makeHandler: { _ in EchoHandler() })
        try third.start()
        defer { third.stop() }
        #expect(third.boundPorts == [port])
        #expect(third.loops.count == 2)
    }

    @Test func loopInstantArithmetic() {
        let start = LoopInstant(nanoseconds: 1_000)
        #expect(start.advanced(by: .seconds(2)).nanoseconds == 2_000_001_000)
        #expect(start.advanced(by: .milliseconds(-5)) == start)
        #expect(LoopInstant(nanoseconds: .max - 1).advanced(by: .seconds(1)).nanoseconds == .max)
        #expect(start < start.advanced(by: .nanoseconds(1)))
    }

    @Test func handlerCanBeReplacedWithUnconsumedBytesReplayed() async throws {
        final class Upper: ConnectionHandler {
            func connection(_ connection: Connection, didReceive bytes: UnsafeRawBufferPointer) {
                connection.write(bytes.map { $0 >= 97 && $0 <= 122 ? $0 - 32 : $0 })
            }
        }
        final class Switcher: ConnectionHandler {
            func connection(_ connection: Connection, didReceive bytes: UnsafeRawBufferPointer) {
                let text = Array(bytes)
                guard let newline = text.firstIndex(of: 10) else { return }
                connection.write(Array("switching\n".utf8))
                connection.replaceHandler(with: Upper(), replaying: Array(text[(newline + 1)...]))
            }
        }
        let server = try makeServer(loops: 1) { _ in Switcher() }
        defer { server.stop() }
        let client = try TestSocket(port: try #require(server.boundPorts.first))
        client.send("upgrade\nrest of it ")
        #expect(await client.read(untilContains: "REST OF IT ") == "switching\nREST OF IT ")
        client.send("more")
        #expect(await client.read(untilContains: "MORE") == "MORE")
    }
}
