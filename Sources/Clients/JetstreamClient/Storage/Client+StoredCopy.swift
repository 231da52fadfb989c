import Foundation
import Jetstream
import JetstreamModel

extension Client {
    /// ``fetch(_:createIfMissing:isolation:)`` with storage: a stored copy of the scope is shown at
    /// once and followed from its version — the stream brings what changed meanwhile (or a `reset`,
    /// after which the pending sets go again with their keys). When the server cannot be reached
    /// the copy is shown all the same: the sync starts `.reconnecting` and catches up once it can.
    /// Without a stored copy the scope is loaded from the server, then stored.
    func fetch(
        _ scope: Scope, storedIn directory: URL, createIfMissing: Bool, isolation: isolated (any Actor)
    ) async throws(ClientError) -> ScopeSync {
        let (storage, opened) = try ScopeStorage.open(directory: directory, scope: scope.name)
        do {
            guard let copy = opened.copy else {
                return try await fetchFromServer(
                    scope, createIfMissing: createIfMissing, stored: (storage, opened.problems), isolation: isolation)
            }
            return try await resume(
                scope, from: copy, storage: storage, problems: opened.problems, isolation: isolation)
        } catch {
            // The scope's lock goes: a later fetch may try again.
            try? await storage.close()
            throw error
        }
    }

    /// Starts the sync from a stored copy. The server's schema is read first when it can be: the
    /// model classes are checked against it, and a schema changed since the copy was stored (another
    /// `ETag`) loads the state afresh under it (the pending sets are applied again over it, as after
    /// a `reset`). Offline, the copy's own schema is used.
    private func resume(
        _ scope: Scope, from copy: StoredCopy, storage: ScopeStorage, problems: [String],
        isolation: isolated (any Actor)
    ) async throws(ClientError) -> ScopeSync {
        var served: ServedSchema?
        do {
            served = try await loadSchema()
        } catch {
            guard case .unreachable = error else { throw error }
        }
        let modelSchema = try Self.modelSchema(of: scope)
        let rootClass = type(of: scope.root).className
        var state = copy.state
        var current = ServedSchema(schema: copy.schema, entityTag: copy.schemaTag)
        if let served, served.entityTag == nil || served.entityTag != copy.schemaTag {
            try Self.check(modelSchema, scope: scope.name, rootClass: rootClass, against: served.schema)
            let answer = try await request("GET", "/v1/scopes/\(Self.escaped(scope.name))")
            guard answer.status == 200 else { throw ClientError.refused(status: answer.status, problem: answer.body) }
            state = try Self.state(from: answer.body, schema: served.schema)
            current = served
        } else {
            try Self.check(modelSchema, scope: scope.name, rootClass: rootClass, against: current.schema)
        }
        let engine = SyncEngine(
            state: state, schema: current.schema, clientID: copy.clientID, sequence: copy.sequence,
            pending: copy.pending)
        scope.flush()
        scope.adoptSchema(current.schema)
        let view = engine.view
        do {
            try scope.applyFullState(view.exportFragments(), rootUUID: view.rootUUID, version: view.version)
        } catch {
            throw ClientError.invalidState(
                "the stored copy of scope \(scope.name) does not fit the model classes: \(error)")
        }
        scope.adoptState(view)
        let replica = ScopeReplica(
            scope: scope, client: self, schema: current, modelSchema: modelSchema, state: state, engine: engine,
            isolation: isolation)
        replica.attach(storage, problems: problems)
        if let existing = await stream.add(replica, configuration: configuration) {
            await replica.closeStorage()
            return try handle(on: existing, for: scope, isolation: isolation)
        }
        replica.start()
        return ScopeSync(replica: replica)
    }
}

extension Client {
    /// Removes the stored copy of scope `name` (its pending sets too: they are never sent). Does
    /// nothing when there is none or the client has no storage.
    ///
    /// - Throws: ``ClientError/storage(_:)`` while a sync uses the scope (stop it first), or when
    ///   the files cannot be removed.
    public func removeStoredCopy(of name: String) async throws(ClientError) {
        guard case .directory(let directory) = storage else { return }
        let folder = directory.appending(path: ScopeStorage.escapedFileName(name))
        guard FileManager.default.fileExists(atPath: folder.path) else { return }
        let (held, _) = try ScopeStorage.open(directory: directory, scope: name, reading: false)
        held.removeFiles()
        try await held.close()
        do {
            try FileManager.default.removeItem(at: folder)
        } catch {
            throw ClientError.storage("cannot remove \(folder.path): \(error.localizedDescription)")
        }
    }
}
