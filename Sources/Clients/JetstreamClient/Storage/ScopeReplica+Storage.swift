import Foundation
import Jetstream
import JetstreamModel

extension ScopeReplica {
    /// The copy as it is now: what the storage writes (encoded off this actor, by its writer).
    var storedCopy: StoredCopy {
        StoredCopy(
            scope: name, clientID: engine.clientID, sequence: engine.lastSequence, schema: engine.schema,
            schemaTag: schemaTag, state: engine.confirmed, pending: engine.pending)
    }

    /// Keeps this copy in `storage` from now on; its first write is the whole copy (which also
    /// empties the journal the copy was read with).
    func attach(_ storage: ScopeStorage, problems: [String]) {
        self.storage = storage
        storageProblems = problems
        storage.write(storedCopy)
    }

    /// A local change set became pending under `key`: journaled at once (made durable in the
    /// writer's next batch).
    func storeAdded(key: String) {
        guard let storage, let set = engine.pending.last, set.key == key else { return }
        storage.append(.added(set, sequence: engine.lastSequence))
    }

    /// The server accepted `key` at `version`: after a restart the set is not sent again, and it
    /// shows until the stream reaches that version.
    func storeAccepted(key: String, version: Int) {
        storage?.append(.accepted(key: key, version: version))
    }

    /// The server refused `key`: it is gone from the pending sets.
    func storeFinished(key: String) {
        storage?.append(.finished(key: key))
    }

    /// The confirmed state moved (an event, a reset): the stored copy is rewritten a while later
    /// (``Client/Configuration/storedCopyInterval``), once for all the events meanwhile. Until
    /// then a restart resumes from the older version, which the stream brings up to date.
    func confirmedStateMoved() {
        guard storage != nil, copyRewrite == nil else { return }
        let interval = client.configuration.storedCopyInterval
        copyRewrite = Task { [weak self] in
            try? await Task.sleep(for: interval)
            guard let self, !Task.isCancelled else { return }
            await self.rewriteStoredCopy(isolation: self.actor)
        }
    }

    /// Writes the whole copy now (an app going to the background, the sync stopping).
    func rewriteStoredCopy(isolation: isolated any Actor = #isolation) {
        copyRewrite?.cancel()
        copyRewrite = nil
        storage?.write(storedCopy)
    }

    /// ``ScopeSync/saved(isolation:)``: local writes not yet delivered are recorded first. On the
    /// replica's actor, like every member: the flush runs the scope's change recorder.
    func saved(isolation: isolated any Actor = #isolation) async throws(ClientError) {
        guard let storage else {
            throw ClientError.invalidState(
                "scope \(name) is not stored: the client was made without storage (Client(url:storage: .directory(…)))")
        }
        scope.flush()
        do {
            try await storage.saved()
        } catch {
            storageProblems.append("\(error)")
            throw error
        }
    }

    /// The last handle stopped: the copy is written whole and the scope's lock let go (the pending
    /// sets stay stored and are sent by the next fetch). A scope deleted on the server leaves no copy.
    func closeStorage(isolation: isolated any Actor = #isolation) async {
        guard let storage else { return }
        copyRewrite?.cancel()
        copyRewrite = nil
        self.storage = nil
        if !discardsStoredCopy { storage.write(storedCopy) }
        try? await storage.close()
        if discardsStoredCopy { storage.removeFiles() }
    }
}
