import Foundation
import Jetstream

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The transport of a client made by the deprecated `Client(options:)`: today's
/// ``URLSessionTransport``, plus the original client's session state (`connect()`, `onSession`),
/// which a `Client` value cannot hold itself. Every copy of the client shares it.
@available(*, deprecated, message: "only behind the deprecated Client(options:)")
@MainActor
final class LegacySessionTransport: HTTPTransport {
    nonisolated let base = URLSessionTransport()
    /// The session `connect()` made, once it was delivered.
    var session: Session?
    var isConnecting = false
    var listeners: [(id: Int, callback: (Session) -> Void)] = []
    var nextListenerID = 0

    nonisolated init() {}

    nonisolated func data(for request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        try await base.data(for: request)
    }

    nonisolated func stream(
        for request: URLRequest
    ) async throws -> (HTTPURLResponse, AsyncThrowingStream<Data, any Error>) {
        try await base.stream(for: request)
    }

    func addListener(_ callback: @escaping (Session) -> Void) -> CancelObserver {
        nextListenerID += 1
        let id = nextListenerID
        listeners.append((id, callback))
        return { [weak self] in
            MainActor.assumeIsolated { self?.listeners.removeAll { $0.id == id } }
        }
    }

    /// Makes the session and delivers it on a later turn of the main actor, as the original did
    /// once its handshake was answered: listeners registered right after `connect()` get it.
    func connect(client: Client) {
        guard session == nil, !isConnecting else { return }
        isConnecting = true
        Task { @MainActor in
            let session = Session(client: client)
            self.session = session
            isConnecting = false
            for (_, callback) in listeners {
                callback(session)
            }
        }
    }
}
