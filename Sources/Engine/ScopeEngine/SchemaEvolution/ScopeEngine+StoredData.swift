import Foundation
import JetstreamModel
import Logging
import Store
import Synchronization

extension ScopeEngine {
    /// `scope`'s state: its snapshot, then its tail replayed (each record handed to `replayed`
    /// once applied, with its payload as the current schema reads it), and the translation that
    /// read them (nil when stored data is read as is: the store was last served with this schema).
    func load(
        _ scope: RecoveredScope, replayed: (ChangeRecord, [UInt8]) -> Void = { _, _ in }
    ) throws(RecoveryError) -> (state: ScopeState, translation: StoredDataTranslation?) {
        let name = scope.info.name
        func failure(_ version: Int64, _ message: String) -> RecoveryError {
            RecoveryError(scope: name, version: Int(version), message: message)
        }
        let snapshot: JSONValue
        do {
            snapshot = try JSONParser.parse(scope.snapshot)
        } catch {
            throw failure(scope.snapshotVersion, "snapshot is not JSON: \(error)")
        }
        guard let rootText = snapshot["rootUUID"]?.string, let rootUUID = UUID(wireString: rootText),
            let fragmentValues = snapshot["fragments"]?.array
        else { throw failure(scope.snapshotVersion, "snapshot lacks rootUUID or fragments") }
        var translation =
            translates(name, from: scope.snapshotVersion) ? StoredDataTranslation(schema: schema) : nil
        var state: ScopeState
        do {
            var fragments = try fragmentValues.map { value throws(FragmentError) in try SyncFragment(json: value) }
            if translation != nil { fragments = translation!.translate(fragments) }
            state = try ScopeState(
                importing: fragments, rootUUID: rootUUID, version: Int(scope.snapshotVersion), schema: schema
            ).withOwners(ScopeEncoding.owners(inSnapshot: snapshot))
        } catch {
            throw failure(scope.snapshotVersion, "snapshot does not load: \(error)")
        }
        for record in scope.tail {
            let payload: [UInt8]
            (state, payload) = try replay(record, onto: state, scope: name, translation: &translation)
            replayed(record, payload)
        }
        if translation != nil { state = translation!.finish(state, schema: schema) }
        return (state, translation)
    }

    /// The state `scope` was read at (a past version, a copy to adopt): stored values the schema
    /// refuses read as their defaults.
    func rebuild(_ scope: RecoveredScope) throws(RecoveryError) -> ScopeState {
        try load(scope).state
    }

    /// Applies a change set that is already durable (logged here before a restart, or committed by
    /// another node) through the model core, without limits: it was accepted once.
    func replay(_ record: ChangeRecord, onto state: ScopeState, scope name: String) throws(RecoveryError) -> ScopeState
    {
        try replayed(record, onto: state, scope: name).state
    }

    /// ``replay(_:onto:scope:)``, and the record's payload as the current schema reads it (the
    /// stored bytes themselves when nothing in it needed a change).
    ///
    /// A change set the schema accepts as stored needs no translation (every property known, every
    /// value valid), so it is applied as stored first — the common case on a shared store, where
    /// the translation is on for every record another node commits — and translated only when
    /// that is refused.
    func replayed(
        _ record: ChangeRecord, onto state: ScopeState, scope name: String
    ) throws(RecoveryError) -> (state: ScopeState, payload: [UInt8]) {
        var asStored: StoredDataTranslation? = nil
        guard translates(name, from: record.version) else {
            return try replay(record, onto: state, scope: name, translation: &asStored)
        }
        if let replayed = try? replay(record, onto: state, scope: name, translation: &asStored) { return replayed }
        var translation: StoredDataTranslation? = StoredDataTranslation(schema: schema)
        return try replay(record, onto: state, scope: name, translation: &translation)
    }

    private func replay(
        _ record: ChangeRecord, onto state: ScopeState, scope name: String,
        translation: inout StoredDataTranslation?
    ) throws(RecoveryError) -> (state: ScopeState, payload: [UInt8]) {
        func failure(_ message: String) -> RecoveryError {
            RecoveryError(scope: name, version: Int(record.version), message: message)
        }
        let payload: JSONValue
        do {
            payload = try JSONParser.parse(record.payload)
        } catch {
            throw failure("logged change set is not JSON: \(error)")
        }
        guard let fragmentValues = payload["fragments"]?.array else {
            throw failure("logged change set has no fragments")
        }
        var changeSet = ChangeSet(json: fragmentValues)
        var served = record.payload
        if translation != nil {
            let fragments = changeSet.entries.compactMap { try? $0.get() }
            guard fragments.count == changeSet.entries.count else { throw failure("a logged fragment is unreadable") }
            let translated = translation!.translate(fragments)
            if translated != fragments {
                changeSet = ChangeSet(fragments: translated)
                served = Self.payload(payload, with: translated)
            }
            // Everything it changed is gone under this schema: the version passes all the same.
            if translated.isEmpty { return (state.withVersion(Int(record.version)), served) }
        }
        // Accepted once already: no rule judges it again, and what it added is its subject's.
        let author = ChangeAuthor.server(subject: payload["subject"]?.string)
        switch state.applying(changeSet, schema: schema, limits: .unlimited, author: author) {
        case .accepted(let applied) where applied.state.version == Int(record.version):
            return (applied.state, served)
        case .accepted(let applied):
            throw failure("replay produced version \(applied.state.version)")
        case .rejected(let replies):
            let reason = replies.compactMap(\.error).first.map { "\($0)" } ?? "rejected"
            throw failure("the schema no longer accepts it: \(reason)")
        }
    }

    /// Whether what `name` stored at `version` (a snapshot, a logged change set) may have been
    /// written under another schema: everything, when the store was last served with another
    /// one (or is shared with other nodes); else what is at or before the scope's boundary.
    func translates(_ name: String, from version: Int64) -> Bool {
        evolution.withLock { evolution in
            evolution.translatesAll || evolution.boundaries[name].map { version <= Int64($0) } ?? false
        }
    }

    /// A stored change set's payload as the current schema reads it: what history pages and
    /// resumes read from the store send.
    func servedPayload(_ record: ChangeRecord, of name: String) -> [UInt8] {
        let stored = record.payload
        guard translates(name, from: record.version), let payload = try? JSONParser.parse(stored),
            let values = payload["fragments"]?.array
        else { return stored }
        let fragments = values.compactMap { try? SyncFragment(json: $0) }
        guard fragments.count == values.count else { return stored }
        var translation = StoredDataTranslation(schema: schema)
        let translated = translation.translate(fragments)
        return translated == fragments ? stored : Self.payload(payload, with: translated)
    }

    private static func payload(_ payload: JSONValue, with fragments: [SyncFragment]) -> [UInt8] {
        guard case .object(var object) = payload else { return payload.encoded() }
        object["fragments"] = .array(fragments.map(\.jsonValue))
        return JSONValue.object(object).encoded()
    }
}

extension ScopeEngine {
    /// How every stored scope fits this engine's schema, read in one pass and hosting nothing:
    /// `jetstream check-schema --data-dir` (a dry run before a deploy).
    public func checkStoredData() async throws -> SchemaFitReport {
        evolution.withLock { $0.translatesAll = true }
        var report = SchemaFitReport()
        try await store.recover { scope in _ = try restore(scope, into: &report) }
        return report
    }

    /// The version `name` had when the current schema took over; a stream resuming at or before it
    /// gets a `reset` (its copy was read under the schema before).
    func schemaBoundary(of name: String) -> Int? {
        evolution.withLock { $0.boundaries[name] }
    }

    func storedSchemaRecord() async throws(StoreError) -> StoredSchemaRecord? {
        try await store.metadata(key: StoredSchemaRecord.metadataKey).flatMap(StoredSchemaRecord.init(bytes:))
    }

    /// Records this schema with the store once recovery read everything under it: its fingerprint,
    /// and for every scope the version it has now, after which its change sets are this schema's.
    ///
    /// A store with no record (new, or from before schema records) may or may not have changed
    /// schema: only the scopes whose stored data the translation changed get a boundary, so that
    /// upgrading the gateway alone does not send every stream a `reset`.
    func recordSchema(
        replacing previous: StoredSchemaRecord?, heads: [ScopeHandle], report: SchemaFitReport
    ) async throws(StoreError) {
        var boundaries = previous?.boundaries ?? [:]
        for handle in heads where previous != nil || report.translatedScopes.contains(handle.name) {
            boundaries[handle.name] = handle.version
        }
        let record = StoredSchemaRecord(
            fingerprint: schema.fingerprint, schema: schema.jsonValue, boundaries: boundaries)
        try await store.writeMetadata(key: StoredSchemaRecord.metadataKey, value: record.bytes)
        // From now on the boundaries say what was stored under an earlier schema.
        let shared = store is any SharedChangeLogStore
        evolution.withLock { evolution in
            evolution.boundaries = boundaries
            evolution.translatesAll = shared
        }
        if let previous {
            logger.notice(
                "schema changed",
                metadata: [
                    "from": "\(previous.fingerprint)", "to": "\(record.fingerprint)", "scopes": "\(heads.count)",
                    "fixedValues": "\(report.fixedValues)",
                ])
        } else {
            logger.info(
                "schema recorded", metadata: ["fingerprint": "\(record.fingerprint)", "scopes": "\(heads.count)"])
        }
    }
}
