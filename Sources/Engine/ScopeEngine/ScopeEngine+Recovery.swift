import Foundation
import JetstreamJSON
import JetstreamModel
import Store
import Synchronization

/// Why a stored scope could not be loaded; the engine refuses to start half-recovered.
public struct RecoveryError: Error, CustomStringConvertible {
    public let scope: String
    public let version: Int
    public let message: String

    public var description: String { "cannot recover scope '\(scope)' at version \(version): \(message)" }
}

extension ScopeEngine {
    /// Loads every stored scope: its latest snapshot, then the change sets logged after it,
    /// re-applied through the model core — through ``StoredDataTranslation`` when the store was
    /// last served with another schema. Stored objects the schema refuses stop it, all of them
    /// named (``SchemaFitReport``), before anything is hosted. Returns the number of scopes and
    /// change sets replayed.
    @discardableResult
    public func recover() async throws -> (scopes: Int, replayed: Int) {
        let record = try await storedSchemaRecord()
        let changed = record?.fingerprint != schema.fingerprint
        evolution.withLock { evolution in
            evolution.translatesAll = changed || store is any SharedChangeLogStore
            evolution.boundaries = record?.boundaries ?? [:]
        }
        var loaded: [ScopeHandle] = []
        var replayed = 0
        var report = SchemaFitReport()
        try await store.recover { scope in
            if let handle = try restore(scope, into: &report) { loaded.append(handle) }
            replayed += scope.tail.count
        }
        guard report.fits else { throw report }
        apply(directory.withLock { $0.recovered(loaded) })
        if changed { try await recordSchema(replacing: record, heads: loaded, report: report) }
        return (loaded.count, replayed)
    }

    /// Hosts a scope that was created or changed elsewhere (another node, through the shared
    /// store): its snapshot and log tail are loaded as at start-up. Replaces a live scope of the
    /// same name (its subscribers get `reset` when they resume) unless that one is ahead of the
    /// copy, which is then kept and returned. A copy of a scope deleted since it was read (or
    /// being deleted here) is not hosted: ``ScopeError/scopeNotFound(_:)``.
    @discardableResult
    public func adopt(_ scope: RecoveredScope) throws -> ScopeHandle {
        guard let live = host(try restore(scope), readAt: scope.info.version, replacing: true) else {
            throw ScopeError.scopeNotFound(scope.info.name)
        }
        return live
    }

    /// A handle no longer live for its name (replaced by a newer copy): it takes no more writes
    /// and its subscribers end without a final event, so they resume on the live handle (and
    /// get `reset` there when it cannot continue their stream).
    func retire(_ handle: ScopeHandle) {
        handle.runtime.withLock { runtime in
            runtime.deleted = true
            handle.subscribers.endAll(with: nil)
        }
    }

    /// A live handle for `scope`: the snapshot, then the tail replayed (the newest ones also
    /// kept in the resume buffer, as the current schema reads them). Values the schema refuses
    /// load as their defaults (recovery at start refuses them first, see ``recover()``).
    func restore(_ scope: RecoveredScope) throws -> ScopeHandle {
        var report = SchemaFitReport()
        return try restore(scope, into: &report, strict: false)!
    }

    /// ``restore(_:)`` that adds the scope to `report`; nil when its stored objects do not fit the
    /// schema (`strict`) or, while translating, it cannot be read under it at all.
    func restore(
        _ scope: RecoveredScope, into report: inout SchemaFitReport, strict: Bool = true
    ) throws -> ScopeHandle? {
        var recent = RecentChangeSets(capacity: configuration.resumeBufferSize)
        let loaded: (state: ScopeState, translation: StoredDataTranslation?)
        do {
            loaded = try load(scope) { record, payload in
                recent.append(ScopeEvent(kind: .changeset, version: Int(record.version), payload: payload))
            }
        } catch {
            // While translating, a scope the schema cannot read is part of the report.
            guard strict && translates(scope.info.name, from: scope.snapshotVersion) else { throw error }
            report.failures.append(.init(scope: error.scope, version: error.version, message: error.message))
            return nil
        }
        report.scopes += 1
        report.objects += loaded.state.count
        if let translation = loaded.translation {
            report.fixedValues += translation.fixedValues
            if translation.changedAnything { report.translatedScopes.insert(scope.info.name) }
            let problems = translation.problems
            report.problems += problems.map { SchemaFitReport.Problem(scope: scope.info.name, problem: $0) }
            if strict && !problems.isEmpty { return nil }
        }
        let handle = makeHandle(
            name: scope.info.name, state: loaded.state, oldestResumable: Int(scope.info.oldestResumableVersion))
        handle.runtime.withLock { $0.recent = recent }
        return handle
    }
}
