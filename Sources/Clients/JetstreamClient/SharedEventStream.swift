import Foundation
import JetstreamJSON
import JetstreamModel
import ServerSentEvents
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A client's one event stream for every scope it syncs: `GET /v1/events?scope=a&scope=b…` on one
/// HTTP connection, re-opened from the last event id whenever a scope is fetched or stopped, and
/// reconnected as ``SharedStreamConnection`` decides (docs/sync-protocol.md, "The stream" and "One
/// stream for many scopes"). Each event goes to the ``ScopeReplica`` its `"scope"` member names, on
/// that replica's actor, one at a time and in order. A scope fetched into two `Scope` objects has two
/// replicas on one place of the stream: each gets every event of it.
///
/// The client may be suspended (``Client/suspend()``): the connection closes, no other is made and
/// no backoff is waited out until ``Client/resume()``, which connects at once from the last id.
actor SharedEventStream {
    nonisolated let presenceID = UUID().uuidString.lowercased()
    /// The origin of the time presence refreshes are measured in.
    nonisolated let origin = ContinuousClock.now
    /// Whether the client is suspended, readable on the replicas' actors (their senders and
    /// presence hold back while it is); changed with `machine`'s.
    private nonisolated let suspension = Atomic<Bool>(false)
    private let url: URL
    private let tokenProvider: Client.TokenProvider?
    private let transport: any HTTPTransport
    private var configuration = Client.Configuration()
    var machine = SharedStreamConnection()
    /// The copies of each scope followed (one per `Scope` object that fetched it).
    private(set) var replicas: [String: [ScopeReplica]] = [:]
    /// Each copy's confirmed state as its actor last left it: its next `changeset` event is read
    /// and applied to it here, off that actor (``PreparedChangeSet``).
    private var bases: [ObjectIdentifier: ConfirmedBase] = [:]
    private var runner: Task<Void, Never>?
    /// The connection being read, cancelled to re-open the stream for another list of scopes.
    private var reading: Task<SharedStreamConnection.End, Never>?
    private var restartRequested = false
    private var token: String?
    /// When the current connection last delivered a byte (heartbeats included).
    private var lastActivity = ContinuousClock.now
    /// The backoff being waited out, cancelled to reconnect at once.
    private var backoffWait: Task<Void, Never>?
    /// Counts the calls that cut a backoff short (resume, the network back): a wait decided before
    /// one, but not begun when it came, is skipped too.
    private var backoffCuts = 0
    #if canImport(Network)
    /// Reports the network coming back (made with the first connection).
    private var pathWatcher: NetworkPathWatcher?
    #endif

    init(url: URL, token: Client.TokenProvider?, transport: any HTTPTransport) {
        self.url = url
        self.tokenProvider = token
        self.transport = transport
    }

    /// The live copy of scope `name` in the `Scope` object `scopeID`, if this client syncs it.
    func replica(named name: String, scopeID: ObjectIdentifier) -> ScopeReplica? {
        replicas[name]?.first { $0.scopeID == scopeID }
    }

    /// Follows `replica`'s scope from its version; returns the copy of the same `Scope` object
    /// another fetch added meanwhile instead, if any (then `replica` is not followed).
    func add(_ replica: ScopeReplica, configuration: Client.Configuration) async -> ScopeReplica? {
        let name = replica.name
        if let existing = self.replica(named: name, scopeID: replica.scopeID) { return existing }
        self.configuration = configuration
        replicas[name, default: []].append(replica)
        let base = await replica.confirmedBase(isolation: replica.actor)
        bases[ObjectIdentifier(replica)] = base
        if machine.add(name, version: base.state.version) { startOrRestart() }
        await publishStatus(to: [replica])
        return nil
    }

    /// Stops following `replica` (its last handle stopped); the scope leaves the stream with its
    /// last copy.
    func remove(_ replica: ScopeReplica) {
        let name = replica.name
        guard let copies = replicas[name], copies.contains(where: { $0 === replica }) else { return }
        replicas[name] = copies.filter { $0 !== replica }
        bases[ObjectIdentifier(replica)] = nil
        guard replicas[name]?.isEmpty ?? true else { return }
        replicas[name] = nil
        if machine.remove(name) || machine.isEmpty { startOrRestart() }
    }

    private var allReplicas: [ScopeReplica] { replicas.values.flatMap { $0 } }

    private func forgetBases(of copies: [ScopeReplica]) {
        for copy in copies { bases[ObjectIdentifier(copy)] = nil }
    }

    /// Connects when no connection runs, else ends the current one so that the next carries the
    /// new list (a connection waiting for its backoff is left to it: it will carry the new list).
    /// Nothing while suspended: the connection at resume carries the list then.
    private func startOrRestart() {
        guard !machine.isSuspended else { return }
        guard runner != nil else {
            guard !machine.isEmpty else { return }
            watchNetwork()
            runner = Task { await self.run() }
            return
        }
        restartRequested = true
        reading?.cancel()
    }

    /// Connections, one after the other, until no scope is left (or all are stopped), or the client
    /// is suspended. No `await` between the loop's last check and the end (`runner = nil`): a
    /// resume or a fetch meanwhile either finds the loop going on or starts another.
    private func run() async {
        defer { runner = nil }
        while !machine.isEmpty && !machine.isSuspended && !Task.isCancelled {
            restartRequested = false
            let request = machine.connecting()
            let started = ContinuousClock.now
            let reading = Task { await self.read(request) }
            self.reading = reading
            let watchdog = Task { await self.watch(reading) }
            var end = await reading.value
            watchdog.cancel()
            self.reading = nil
            let endedAt = backoffCuts
            if restartRequested, end == .stream(.dropped(needsFullState: false)) { end = .changed }
            if case .scope(let name, let refusal) = end, let copies = replicas[name] {
                switch refusal {
                case .deleted, .forbidden:
                    replicas[name] = nil
                    forgetBases(of: copies)
                    for replica in copies { await replica.stop(refusal.stopReason, isolation: replica.actor) }
                default: break
                }
            }
            let decision = machine.ended(end, lasted: ContinuousClock.now - started)
            await publishStatus(to: allReplicas)
            switch decision {
            case .idle, .suspended:
                // A scope fetched while the last connection ended gets a new one; a client resumed
                // meanwhile connects at once (else the loop ends on its condition).
                continue
            case .stop(let reason):
                let stopping = allReplicas
                replicas = [:]
                bases = [:]
                for replica in stopping {
                    machine.deleted(replica.name)
                    await replica.stop(reason, isolation: replica.actor)
                }
                return
            case .reconnectNow(let refreshToken):
                if refreshToken { token = try? await tokenProvider?() }
            case .backOff(let attempt, let refreshToken):
                if refreshToken { token = try? await tokenProvider?() }
                await waitOutBackoff(configuration.backoff.delay(attempt: attempt - 1), unlessCutSince: endedAt)
            }
        }
    }

    /// Sleeps `delay` unless a cut came since `mark` (then not at all) or comes meanwhile.
    private func waitOutBackoff(_ delay: Duration, unlessCutSince mark: Int) async {
        guard backoffCuts == mark, !machine.isSuspended else { return }
        let wait = Task<Void, Never> { try? await Task.sleep(for: delay) }
        backoffWait = wait
        await withTaskCancellationHandler {
            await wait.value
        } onCancel: {
            wait.cancel()
        }
        backoffWait = nil
    }

    /// Ends the backoff being waited out, or about to be.
    private func cutBackoff() {
        backoffCuts += 1
        backoffWait?.cancel()
    }

    /// Drops a connection on which no byte arrived for two heartbeat intervals.
    private func watch(_ reading: Task<SharedStreamConnection.End, Never>) async {
        let silence = configuration.heartbeatInterval * 2
        lastActivity = .now
        while !Task.isCancelled {
            try? await Task.sleep(for: silence / 4)
            if ContinuousClock.now - lastActivity > silence {
                reading.cancel()
                return
            }
        }
    }

    // MARK: - Suspension and the network

    /// Whether the client is suspended (from any actor).
    nonisolated var isSuspended: Bool { suspension.load(ordering: .acquiring) }

    /// Closes the connection and stops reconnecting until ``resume()``; returns once the connection
    /// ended (the events it already brought are applied, and the last id is theirs). The replicas
    /// show `.suspended` and hold their changes and presence back.
    func suspend() async {
        guard !machine.isSuspended else { return }
        machine.suspend()
        suspension.store(true, ordering: .releasing)
        let closing = reading
        // The end is the client's own: a resume before the runner sees it reconnects at once.
        restartRequested = true
        closing?.cancel()
        cutBackoff()
        await publishSuspension()
        _ = await closing?.value
    }

    /// Connects at once from where every scope was (no backoff), with a token asked for anew (the
    /// last may have expired meanwhile); the replicas send what they held back.
    func resume() async {
        guard machine.isSuspended else { return }
        machine.resume()
        suspension.store(false, ordering: .releasing)
        token = nil
        cutBackoff()
        startOrRestart()
        await publishSuspension()
    }

    /// The device's network came back: a backoff being waited out ends now (the stream's and the
    /// senders'). Nothing while suspended.
    func networkBecameAvailable() async {
        guard !machine.isSuspended else { return }
        if machine.networkBecameAvailable() {
            cutBackoff()
            await publishStatus(to: allReplicas)
        }
        for replica in allReplicas { await replica.networkBecameAvailable(isolation: replica.actor) }
    }

    /// Every replica takes in the suspension as it is when the call lands there.
    private func publishSuspension() async {
        for replica in allReplicas {
            await replica.streamStatus(machine.status(of: replica.name), isolation: replica.actor)
            await replica.suspensionChanged(isolation: replica.actor)
        }
    }

    /// Starts watching the device's network, where the platform can (Apple's `Network`).
    private func watchNetwork() {
        #if canImport(Network)
        guard pathWatcher == nil else { return }
        pathWatcher = NetworkPathWatcher { [weak self] in
            Task { await self?.networkBecameAvailable() }
        }
        #endif
    }

    /// The status each replica shows now.
    private func publishStatus(to targets: [ScopeReplica]) async {
        for replica in targets {
            await replica.streamStatus(machine.status(of: replica.name), isolation: replica.actor)
        }
    }

    // MARK: - One connection

    /// One connection: the request, then events until the stream ends.
    private func read(_ request: SharedStreamConnection.Request) async -> SharedStreamConnection.End {
        var components = URLComponents(url: url.appending(path: "/v1/events"), resolvingAgainstBaseURL: false)
        components?.queryItems = request.query.map { URLQueryItem(name: "scope", value: $0) }
        guard let target = components?.url else { return .stream(.dropped(needsFullState: false)) }
        var urlRequest = URLRequest(url: target)
        urlRequest.setValue("text/event-stream", forHTTPHeaderField: "Accept")
        // The watchdog judges silence (two heartbeats); the request's own idle timeout only backs it up.
        urlRequest.timeoutInterval = 3600
        if let lastEventID = request.lastEventID {
            urlRequest.setValue(lastEventID, forHTTPHeaderField: "Last-Event-ID")
        }
        if token == nil { token = try? await tokenProvider?() }
        if let token { urlRequest.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        let response: HTTPURLResponse
        let chunks: AsyncThrowingStream<Data, any Error>
        do {
            (response, chunks) = try await transport.stream(for: urlRequest)
        } catch {
            return .stream(.dropped(needsFullState: false))
        }
        if response.statusCode != 200 {
            return SharedStreamConnection.End(
                openingStatus: response.statusCode, scope: await Self.problemScope(in: chunks)) ?? .changed
        }
        if Task.isCancelled { return .stream(.dropped(needsFullState: false)) }
        machine.opened()
        for name in request.query.map(Self.name(inQueryValue:)) {
            for replica in replicas[name] ?? [] { await replica.streamOpened(isolation: replica.actor) }
        }
        var parser = SSEParser(maxLineBytes: 1 << 30)
        do {
            for try await chunk in chunks {
                lastActivity = .now
                var events: [ServerSentEvent] = []
                parser.consume([UInt8](chunk)) { event in events.append(event) }
                for event in events {
                    if let end = await dispatch(event) { return end }
                }
            }
        } catch {
            return .stream(.dropped(needsFullState: false))
        }
        return .stream(.dropped(needsFullState: false))
    }

    /// One event; a non-nil result ends the connection.
    private func dispatch(_ event: ServerSentEvent) async -> SharedStreamConnection.End? {
        switch event.type {
        case "snapshot", "reset", "changeset", "deleted", "presence":
            guard let json = try? JSONParser.parse(event.data, options: ScopeReplica.eventJSONOptions) else {
                return .stream(.dropped(needsFullState: false))
            }
            // A scope stopped meanwhile: its events until the stream is re-opened are not needed.
            guard let name = json["scope"]?.string, let copies = replicas[name] else { return nil }
            switch event.type {
            case "presence":
                for replica in copies { await replica.presenceEvent(json, isolation: replica.actor) }
                return nil
            case "deleted":
                // That scope ends; the stream goes on for the others (and ends with the last one).
                replicas[name] = nil
                forgetBases(of: copies)
                machine.deleted(name)
                for replica in copies { await replica.stop(.deleted, isolation: replica.actor) }
                return machine.isEmpty ? .changed : nil
            default:
                var end: StreamConnection.End?
                var version = Int.max
                var stopped: [ScopeReplica] = []
                // Read here, off the replicas' actors, unless the benchmark asks for the old path.
                let prepares = event.type == "changeset" && configuration.preparesEventsOffActor
                let changeSet = prepares ? PreparedChangeSet(json: json) : nil
                if prepares && changeSet == nil { return .scope(name, .dropped(needsFullState: true)) }
                for replica in copies {
                    let id = ObjectIdentifier(replica)
                    if !configuration.preparesEventsOffActor, event.type == "changeset" {
                        let answer = await replica.receiveOnActor(json, isolation: replica.actor)
                        end = end ?? answer.end
                        version = min(version, answer.version)
                        continue
                    }
                    if var prepared = changeSet {
                        if let base = bases[id] { prepared.validate(against: base) }
                        let answer = await replica.receive(prepared, isolation: replica.actor)
                        bases[id] = answer.base
                        end = end ?? answer.end
                        version = min(version, answer.version)
                        continue
                    }
                    let answer = await replica.receive(event.type, json, isolation: replica.actor)
                    bases[id] = await replica.confirmedBase(isolation: replica.actor)
                    if answer.stopped {
                        stopped.append(replica)
                        continue
                    }
                    end = end ?? answer.end
                    version = min(version, answer.version)
                }
                if !stopped.isEmpty {
                    // A copy whose classes no longer fit the server's schema stopped: it is no longer
                    // followed, and a scope with no copy left leaves the stream (no reconnection
                    // brings it back), which goes on for the others.
                    forgetBases(of: stopped)
                    let left = (replicas[name] ?? []).filter { copy in !stopped.contains { $0 === copy } }
                    replicas[name] = left.isEmpty ? nil : left
                    if left.isEmpty {
                        machine.deleted(name)
                        return machine.isEmpty ? .changed : nil
                    }
                }
                if let end { return .scope(name, end) }
                // Every copy that answered stopped, and another copy was added meanwhile: it
                // started from its own version; this event moves nothing.
                guard version != Int.max else { return nil }
                machine.delivered(
                    name, version: version, isState: event.type != "changeset",
                    eventID: event.lastEventID.isEmpty ? nil : event.lastEventID)
                return nil
            }
        default:
            return StreamConnection.End(eventType: event.type).map { .stream($0) }
        }
    }

    /// The `"scope"` member of a refusal's problem body (at most 64 KiB of it is read).
    private static func problemScope(in chunks: AsyncThrowingStream<Data, any Error>) async -> String? {
        var body: [UInt8] = []
        do {
            for try await chunk in chunks {
                body += chunk
                if body.count > 1 << 16 { return nil }
            }
        } catch {
            return nil
        }
        return (try? JSONParser.parse(body))?["scope"]?.string
    }

    /// `canvas-1` of `canvas-1@4`.
    static func name(inQueryValue value: String) -> String {
        value.split(separator: "@", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? value
    }
}

extension StreamConnection.End {
    /// The reason a scope refused when the shared stream opened stops with.
    var stopReason: ScopeSync.StopReason {
        if case .forbidden(let detail) = self { return .forbidden(detail) }
        return .deleted
    }
}
