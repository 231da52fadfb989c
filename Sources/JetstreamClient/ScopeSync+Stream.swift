import Foundation
import Jetstream
import JetstreamJSON
import JetstreamModel
import ServerSentEvents

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension ScopeSync {
    /// How one connection of the event stream ended, and so what to do next.
    enum StreamEnd: Sendable {
        /// Reconnect after a backoff (network error, `event: error`, a silent stream, a 5xx).
        case retry
        /// Reconnect at once (`event: closing`, a gap).
        case immediately
        /// Ask the token provider again, then reconnect at once (`401`, `event: auth-expired`).
        case refreshToken
        case deleted
        case forbidden(String)
    }

    /// After a reconnection at once, the next connection must last this long for its `closing`,
    /// gap or `auth-expired`/`401` to reconnect at once too; a shorter one backs off.
    static let minimumImmediateLifetime = Duration.seconds(1)

    /// Rules 6–8: follows the stream from `version`, reconnecting until the sync stops.
    func followStream(isolation: isolated any Actor) async {
        // Whether the previous connection ended with a reconnection at once.
        var endedAtOnce = false
        while !isStopped && !Task.isCancelled {
            let started = ContinuousClock.now
            let connection = Task { await self.readStream(isolation: self.actor) }
            let watchdog = Task { await self.watch(connection, isolation: self.actor) }
            let end = await withTaskCancellationHandler {
                await connection.value
            } onCancel: {
                connection.cancel()
            }
            watchdog.cancel()
            if isStopped || Task.isCancelled { return }
            switch end {
            case .deleted:
                finish(.deleted)
                return
            case .forbidden(let detail):
                finish(.forbidden(detail))
                return
            case .refreshToken, .immediately:
                if case .refreshToken = end { token = try? await client.token?() }
                // After one reconnection at once, a connection that ends that fast again backs off
                // instead of spinning: a draining server answers every new stream with `closing`,
                // and a provider with no valid token left gets `401` after `401`.
                let spinning = endedAtOnce && ContinuousClock.now - started < Self.minimumImmediateLifetime
                endedAtOnce = true
                if !spinning {
                    if case .immediately = end { setStatus(.reconnecting(attempt: 0)) }
                    continue
                }
            case .retry:
                endedAtOnce = false
            }
            // A connection that stayed up for a minute was healthy: start the backoff over.
            if ContinuousClock.now - started > .seconds(60) { streamAttempt = 0 }
            streamAttempt += 1
            setStatus(.reconnecting(attempt: streamAttempt))
            try? await Task.sleep(for: client.configuration.backoff.delay(attempt: streamAttempt - 1))
        }
    }

    /// Drops a connection on which no byte arrived for two heartbeat intervals.
    private func watch(_ connection: Task<StreamEnd, Never>, isolation: isolated any Actor) async {
        let silence = client.configuration.heartbeatInterval * 2
        lastStreamActivity = .now
        while !Task.isCancelled {
            try? await Task.sleep(for: silence / 4)
            if ContinuousClock.now - lastStreamActivity > silence {
                connection.cancel()
                return
            }
        }
    }

    /// One connection: the request with `Last-Event-ID`, then events until the stream ends.
    private func readStream(isolation: isolated any Actor) async -> StreamEnd {
        var request = URLRequest(url: client.url.appending(path: "/v1/scopes/\(Client.escaped(scope.name))/events"))
        request.setValue("text/event-stream", forHTTPHeaderField: "Accept")
        // The watchdog judges silence (two heartbeats); the request's own idle timeout only backs it up.
        request.timeoutInterval = 3600
        if !needsFullState { request.setValue(String(engine.version), forHTTPHeaderField: "Last-Event-ID") }
        if token == nil { token = try? await client.token?() }
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        let response: HTTPURLResponse
        let chunks: AsyncThrowingStream<Data, any Error>
        do {
            (response, chunks) = try await client.transport.stream(for: request)
        } catch {
            return .retry
        }
        switch response.statusCode {
        case 200: break
        case 401: return .refreshToken
        case 403: return .forbidden("the server refuses this client scope \(scope.name)")
        case 404: return .deleted
        default: return .retry
        }
        setStatus(.live)
        needsFullState = false
        var parser = SSEParser(maxLineBytes: 1 << 30)
        do {
            for try await chunk in chunks {
                lastStreamActivity = .now
                var end: StreamEnd?
                parser.consume([UInt8](chunk)) { event in
                    if end == nil { end = handle(event) }
                }
                if let end { return end }
            }
        } catch {
            return .retry
        }
        return .retry
    }

    /// One event of the stream; a non-nil result ends the connection.
    private func handle(_ event: SSEEvent) -> StreamEnd? {
        switch event.type {
        case "changeset":
            return applyChangeSetEvent(event.data)
        case "snapshot", "reset":
            do {
                let state = try Client.state(from: event.data, schema: engine.schema)
                scope.flush()
                engine.reset(to: state)
                showWholeView()
                sendAttempt = 0
                wakeSender.yield()
                return nil
            } catch {
                needsFullState = true
                return .retry
            }
        case "deleted": return .deleted
        case "closing": return .immediately
        case "auth-expired": return .refreshToken
        case "error": return .retry
        default: return nil
        }
    }

    /// Rules 6 and 7: applies a `changeset` event, or asks for a reconnection on a gap.
    private func applyChangeSetEvent(_ data: [UInt8]) -> StreamEnd? {
        let fragments: [SyncFragment]
        let version: Int
        let removed: [UUID]
        do {
            let json = try JSONParser.parse(data, options: JSONParser.Options(maxDepth: 64, maxBytes: 1 << 30))
            guard let number = json["version"]?.number?.int64Value, let array = json["fragments"]?.array else {
                needsFullState = true
                return .retry
            }
            version = Int(number)
            fragments = try array.map { element throws(FragmentError) in try SyncFragment(json: element) }
            removed = (json["removed"]?.array ?? []).compactMap { $0.string.flatMap(UUID.init(wireString:)) }
            // Local writes not yet delivered become pending first, so the rebase includes them.
            scope.flush()
            let outcome = engine.event(
                version: version, fragments: fragments, removed: removed,
                idempotencyKey: json["idempotencyKey"]?.string)
            switch outcome {
            case .stale: return nil
            case .gap: return .immediately
            case .inconsistent:
                needsFullState = true
                return .immediately
            case .applied(let update):
                show(update)
                return nil
            }
        } catch {
            needsFullState = true
            return .retry
        }
    }
}
