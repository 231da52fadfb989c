import Glibc
import Synchronization
import TestSupport
import Testing

/// The test client's own descriptor hygiene: the whole test process shares one descriptor table,
/// so a test helper that closes a descriptor twice can close another test's socket or database
/// connection.
@Suite struct TestSocketTests {
    /// A port bound but not listening: a connection to it is refused at once.
    private static func refusingPort() throws -> (descriptor: Int32, port: Int) {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(descriptor, pointer, length) == 0 && getsockname(descriptor, pointer, &length) == 0
            }
        }
        try #require(bound, "bind 127.0.0.1:0 failed: errno \(errno)")
        return (descriptor, Int(UInt16(bigEndian: address.sin_port)))
    }

    @Test("a refused connection closes its descriptor once, never one another thread opened since")
    func refusedConnectionClosesItsDescriptorOnce() throws {
        let (refuser, port) = try Self.refusingPort()
        defer { close(refuser) }
        let stop = Atomic<Bool>(false)
        let opened = Atomic<Int>(0)
        let closedUnderneath = Atomic<Int>(0)
        // Another thread opens descriptors while the refused attempts run. The lowest free number
        // is the one a refused attempt just closed, so a second close of it lands on this thread's.
        let opener = Thread {
            while !stop.load(ordering: .acquiring) {
                let descriptor = open("/dev/null", O_RDONLY | O_CLOEXEC)
                guard descriptor >= 0 else { continue }
                opened.add(1, ordering: .relaxed)
                sched_yield()
                if fcntl(descriptor, F_GETFD) == -1 {
                    closedUnderneath.add(1, ordering: .relaxed)
                } else {
                    close(descriptor)
                }
            }
        }
        var refused = 0
        for _ in 0..<5_000 where (try? TestSocket(port: port)) == nil { refused += 1 }
        stop.store(true, ordering: .releasing)
        opener.join()
        #expect(refused == 5_000)
        #expect(opened.load(ordering: .relaxed) > 0)
        #expect(closedUnderneath.load(ordering: .relaxed) == 0)
    }
}

/// A POSIX thread running a closure, joined by the test.
private final class Thread: @unchecked Sendable {
    private var handle = pthread_t()
    private let body: @Sendable () -> Void

    init(_ body: @escaping @Sendable () -> Void) {
        self.body = body
        let argument = Unmanaged.passRetained(self).toOpaque()
        let result = pthread_create(
            &handle, nil,
            { argument in
                let thread = Unmanaged<Thread>.fromOpaque(argument!).takeRetainedValue()
                thread.body()
                return nil
            }, argument)
        precondition(result == 0, "pthread_create failed: \(result)")
    }

    func join() { pthread_join(handle, nil) }
}
