import Foundation
import Jetstream
import JetstreamJSON
import JetstreamModel

extension ScopeReplica {
    /// A `snapshot` or `reset` event of this scope from the client's shared stream
    /// (docs/sync-protocol.md, "The stream"): applied, and the confirmed version after it. A
    /// non-nil end asks the shared stream to reconnect (a gap, a disagreement, an unreadable event);
    /// `stopped` says the sync stopped on it (a state under a schema the model classes no longer
    /// fit), so the shared stream no longer follows this copy.
    ///
    /// A whole state may come under another schema (a stream resumed across a server restart with
    /// a changed schema gets a `reset`), so the schema is read again first (``SchemaRecheck``).
    func receive(
        _ type: String, _ json: JSONValue, isolation: isolated any Actor
    ) async -> (end: StreamConnection.End?, version: Int, stopped: Bool) {
        guard !isStopped else { return (nil, engine.version, false) }
        var schema: Schema?
        switch await recheckSchema() {
        case .unchanged:
            break
        case .changed(let served, let entityTag):
            schema = served
            schemaTag = entityTag
        case .mismatch(let problems):
            // The state is left unapplied: the scope keeps the last state the classes could show.
            finish(.schemaMismatch(problems))
            return (nil, engine.version, true)
        case .unreadable:
            return (.dropped(needsFullState: false), engine.version, false)
        }
        // The sync may have been stopped while the schema was read.
        guard !isStopped else { return (nil, engine.version, false) }
        do {
            let state = try Client.state(from: json, schema: schema ?? engine.schema)
            scope.flush()
            engine.reset(to: state, schema: schema)
            if let schema { scope.adoptSchema(schema) }
            showWholeView()
            confirmedStateMoved()
            sendRetry.startOver()
            wakeSender.yield()
            return (nil, engine.version, false)
        } catch {
            return (.dropped(needsFullState: true), engine.version, false)
        }
    }

    /// Reads `GET /v1/schema` again, with `If-None-Match` when the last read had an `ETag`.
    private func recheckSchema(isolation: isolated any Actor = #isolation) async -> SchemaRecheck {
        let headers = schemaTag.map { ["If-None-Match": $0] } ?? [:]
        let answer = try? await client.request("GET", "/v1/schema", headers: headers)
        return SchemaRecheck(
            answer: answer, current: engine.schema, model: modelSchema, scope: name,
            rootClass: Swift.type(of: scope.root).className)
    }

    /// The confirmed state the shared stream starts this copy after (its version) and prepares
    /// its next event against.
    func confirmedBase(isolation: isolated any Actor) -> ConfirmedBase {
        engine.confirmedBase
    }

    /// The shared stream opened with this scope: it is live, and the server sends a `join` for every
    /// member present now, so the ones known before start over.
    func streamOpened(isolation: isolated any Actor) {
        guard !isStopped else { return }
        streamState = .live
        showStatus()
        if !roster.members.isEmpty {
            roster.clear()
            notifyPresence()
        }
    }

    /// E1: applies a `changeset` event, or asks for a reconnection on a gap (R1) or a disagreement (R2).
    /// Also a revert's or restore's answer (the same payload): applied when it is the next version.
    func applyChangeSetEvent(_ data: [UInt8]) -> StreamConnection.End? {
        guard let json = try? JSONParser.parse(data, options: Self.eventJSONOptions) else {
            return .dropped(needsFullState: true)
        }
        return applyChangeSetEvent(json)
    }

    /// How deep and large an event's or answer's JSON may be.
    static let eventJSONOptions = JSONParser.Options(maxDepth: 64, maxBytes: 1 << 30)

    func applyChangeSetEvent(_ json: JSONValue) -> StreamConnection.End? {
        guard let prepared = PreparedChangeSet(json: json) else { return .dropped(needsFullState: true) }
        return apply(prepared)
    }

    /// A `changeset` event of the shared stream, read (and, when it could be, applied to the
    /// confirmed state) off this actor: only the view's update and the observers run here.
    func receive(
        _ prepared: PreparedChangeSet, isolation: isolated any Actor
    ) -> (end: StreamConnection.End?, version: Int, base: ConfirmedBase) {
        guard !isStopped else { return (nil, engine.version, engine.confirmedBase) }
        let started = ContinuousClock.now
        let end = apply(prepared)
        eventTiming.record(ContinuousClock.now - started)
        return (end, engine.version, engine.confirmedBase)
    }

    /// A `changeset` event read and applied on this actor, all of it (the benchmark's comparison,
    /// ``Client/Configuration/preparesEventsOffActor`` off).
    func receiveOnActor(
        _ json: JSONValue, isolation: isolated any Actor
    ) -> (end: StreamConnection.End?, version: Int) {
        guard !isStopped else { return (nil, engine.version) }
        let started = ContinuousClock.now
        let end = applyChangeSetEvent(json)
        eventTiming.record(ContinuousClock.now - started)
        return (end, engine.version)
    }

    /// E1: applies a change set event, or asks for a reconnection on a gap (R1) or a disagreement (R2).
    private func apply(_ prepared: PreparedChangeSet) -> StreamConnection.End? {
        // Local writes not yet delivered become pending first, so the rebase includes them.
        scope.flush()
        let key = prepared.idempotencyKey
        let echoesOwnSet = key.map { key in engine.pending.contains { $0.key == key } } ?? false
        let outcome = engine.event(prepared)
        if case .applied(let update) = outcome {
            // The echo of one of this client's sets: the server took it, whatever becomes of
            // the POST's answer (it can be lost to a connection dropped after the commit, and
            // the set, no longer pending, is not sent again). An undo may revert it from now.
            if echoesOwnSet, let key {
                undoHistory.accepted(prepared.version)
                storeAccepted(key: key, version: prepared.version)
            }
            show(update)
            confirmedStateMoved()
        }
        return outcome.streamEnd
    }
}
