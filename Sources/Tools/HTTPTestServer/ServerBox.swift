import HTTPServer
import Synchronization

/// Lets routes read the server's counters although the router is built before the server.
final class ServerBox: Sendable {
    private let storage = Mutex<HTTPServer?>(nil)

    var server: HTTPServer? {
        get { storage.withLock { $0 } }
        set { storage.withLock { $0 = newValue } }
    }
}
