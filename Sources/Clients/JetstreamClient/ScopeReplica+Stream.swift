import Foundation
import Jetstream
import JetstreamJSON
import JetstreamModel
import ServerSentEvents

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension ScopeSync {
    /// Follows the stream from `version`, reconnecting as ``StreamConnection`` decides until the
    /// sync stops (docs/sync-protocol.md, "The stream").
    func followStream(isolation: isolated any Actor) async {
        while !isStopped && !Task.isCancelled {
            let started = ContinuousClock.now
            let reading = Task { await self.readStream(isolation: self.actor) }
            let watchdog = Task { await self.watch(reading, isolation: self.actor) }
            let end = await withTaskCancellationHandler {
                await reading.value
            } onCancel: {
                reading.cancel()
            }
            watchdog.cancel()
            if isStopped || Task.isCancelled { return }
            let decision = connection.ended(end, lasted: ContinuousClock.now - started)
            switch decision {
            case .stop(let reason):
                finish(reason)
                return
            case .reconnectNow(let refreshToken):
                setStatus(connection.status)
                if refreshToken { token = try? await client.token?() }
            case .backOff(let attempt, let refreshToken):
                setStatus(connection.status)
                if refreshToken { token = try? await client.token?() }
                try? await Task.sleep(for: client.configuration.backoff.delay(attempt: attempt - 1))
            }
        }
    }

    /// Drops a connection on which no byte arrived for two heartbeat intervals.
    private func watch(_ reading: Task<StreamConnection.End, Never>, isolation: isolated any Actor) async {
        let silence = client.configuration.heartbeatInterval * 2
        lastStreamActivity = .now
        while !Task.isCancelled {
            try? await Task.sleep(for: silence / 4)
            if ContinuousClock.now - lastStreamActivity > silence {
                reading.cancel()
                return
            }
        }
    }

    /// One connection: the request with `Last-Event-ID`, then events until the stream ends.
    private func readStream(isolation: isolated any Actor) async -> StreamConnection.End {
        var request = URLRequest(url: client.url.appending(path: "/v1/scopes/\(Client.escaped(scope.name))/events"))
        request.setValue("text/event-stream", forHTTPHeaderField: "Accept")
        // The watchdog judges silence (two heartbeats); the request's own idle timeout only backs it up.
        request.timeoutInterval = 3600
        if let lastEventID = connection.lastEventID(confirmed: engine.version) {
            request.setValue(String(lastEventID), forHTTPHeaderField: "Last-Event-ID")
        }
        if token == nil { token = try? await client.token?() }
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        let response: HTTPURLResponse
        let chunks: AsyncThrowingStream<Data, any Error>
        do {
            (response, chunks) = try await client.transport.stream(for: request)
        } catch {
            return .dropped(needsFullState: false)
        }
        if let end = StreamConnection.End(openingStatus: response.statusCode, scope: scope.name) { return end }
        connection.opened()
        setStatus(connection.status)
        var parser = SSEParser(maxLineBytes: 1 << 30)
        do {
            for try await chunk in chunks {
                lastStreamActivity = .now
                var end: StreamConnection.End?
                parser.consume([UInt8](chunk)) { event in
                    if end == nil { end = handle(event) }
                }
                if let end { return end }
            }
        } catch {
            return .dropped(needsFullState: false)
        }
        return .dropped(needsFullState: false)
    }

    /// One event of the stream; a non-nil result ends the connection.
    private func handle(_ event: ServerSentEvent) -> StreamConnection.End? {
        switch event.type {
        case "changeset":
            return applyChangeSetEvent(event.data)
        case "snapshot", "reset":
            do {
                let state = try Client.state(from: event.data, schema: engine.schema)
                scope.flush()
                engine.reset(to: state)
                showWholeView()
                sendRetry.startOver()
                wakeSender.yield()
                return nil
            } catch {
                return .dropped(needsFullState: true)
            }
        default:
            return StreamConnection.End(eventType: event.type)
        }
    }

    /// E1: applies a `changeset` event, or asks for a reconnection on a gap (R1) or a disagreement (R2).
    /// Also a revert's or restore's answer (the same payload): applied when it is the next version.
    func applyChangeSetEvent(_ data: [UInt8]) -> StreamConnection.End? {
        let fragments: [SyncFragment]
        let version: Int
        let removed: [UUID]
        do {
            let json = try JSONParser.parse(data, options: JSONParser.Options(maxDepth: 64, maxBytes: 1 << 30))
            guard let number = json["version"]?.number?.int64Value, let array = json["fragments"]?.array else {
                return .dropped(needsFullState: true)
            }
            version = Int(number)
            fragments = try array.map { element throws(FragmentError) in try SyncFragment(json: element) }
            removed = (json["removed"]?.array ?? []).compactMap { $0.string.flatMap(UUID.init(wireString:)) }
            // Local writes not yet delivered become pending first, so the rebase includes them.
            scope.flush()
            let outcome = engine.event(
                version: version, fragments: fragments, removed: removed,
                idempotencyKey: json["idempotencyKey"]?.string)
            if case .applied(let update) = outcome { show(update) }
            return outcome.streamEnd
        } catch {
            return .dropped(needsFullState: true)
        }
    }
}
