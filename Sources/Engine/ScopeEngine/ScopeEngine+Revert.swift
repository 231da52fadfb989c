import Foundation
import JetstreamModel
import Store

extension ScopeEngine {
    /// How often a revert is planned again when the scope moved between its planning and its
    /// staging, before ``ScopeError/revertOutdated(scope:)`` is answered.
    static let revertAttempts = 4

    /// Undoes change set `version` as a new change set: the values it changed go back to what they
    /// were before it, objects it added leave, objects it removed come back — when no later
    /// change set touched the same properties or objects. Otherwise
    /// ``ScopeError/revertConflict(scope:version:conflicts:)`` names them and nothing is applied.
    /// The new set is validated, keyed and versioned like any other; its event carries
    /// `"revertOf"`. ``ScopeError/versionNotFound(scope:version:current:)`` when `version` is not a
    /// change set the store retains.
    ///
    /// The plan reads the log from `version` to the head; it is staged only on the version it was
    /// planned against (under the scope's lock), else planned again, so a change set landing
    /// meanwhile is never overwritten.
    ///
    /// ```swift
    /// engine.revert(handle, changeSet: 41) { outcome in … }
    /// ```
    public func revert(
        _ handle: ScopeHandle, changeSet version: Int, ifMatch: VersionCondition? = nil,
        idempotency: IdempotencyKey? = nil, origin: ChangeOrigin = ChangeOrigin(),
        completion: @escaping @Sendable (SubmitOutcome) -> Void
    ) {
        var origin = origin
        origin.revertOf = version
        Task {
            // A retry of a revert already decided is answered from its key before any planning:
            // planned again, it would conflict with the revert its first request made.
            if let idempotency, await answeredFromStore(idempotency, of: handle, completion: completion) { return }
            var handle = handle
            for attempt in 1...Self.revertAttempts {
                let plan: RevertPlan
                do throws(ScopeError) {
                    plan = try await planRevert(of: version, in: handle)
                } catch {
                    return completion(.rejected(error))
                }
                if !plan.conflicts.isEmpty {
                    let conflict = ScopeError.revertConflict(
                        scope: handle.name, version: version, conflicts: plan.conflicts)
                    // Final for its key, as a refused change set is: a retry gets the same 409.
                    guard let idempotency else { return completion(.rejected(conflict)) }
                    return recordRejection(conflict, idempotency: idempotency, of: handle, completion: completion)
                }
                let submission = Submission(
                    .revert(fragments: plan.fragments, plannedAt: plan.plannedAt), origin: origin)
                let outcome = await withCheckedContinuation { continuation in
                    submit(
                        submission, to: handle, ifMatch: ifMatch, idempotency: idempotency,
                        completion: { continuation.resume(returning: $0) })
                }
                guard case .rejected(.revertOutdated) = outcome, attempt < Self.revertAttempts else {
                    return completion(outcome)
                }
                // The copy is behind the log the plan read, or moved on: catch up, plan again.
                handle = await catchUp(handle.name) ?? handle
            }
        }
    }

    /// What a revert writes, planned against the log up to `plannedAt`.
    struct RevertPlan: Sendable {
        var fragments: [SyncFragment]
        var plannedAt: Int
        var conflicts: [RevertConflict]
    }

    /// At most this many conflicts are named (the first ones, by later version).
    static let maxRevertConflicts = 100

    func planRevert(of version: Int, in handle: ScopeHandle) async throws(ScopeError) -> RevertPlan {
        let name = handle.name
        let before: ScopeState
        do throws(ScopeError) {
            before = try await pastState(of: handle, at: version - 1)
        } catch .versionGone, .versionNotFound {
            throw .versionNotFound(scope: name, version: version, current: handle.version)
        }
        var page = try await logPage(of: handle, after: version - 1)
        guard let first = page.records.first, Int(first.version) == version else {
            throw .versionNotFound(scope: name, version: version, current: Int(page.currentVersion))
        }
        let after: ScopeState
        do {
            after = try replay(first, onto: before, scope: name)
        } catch {
            throw storeFailure(.corrupt(path: "scope '\(name)'", message: "\(error)"))
        }
        let touched = Self.touchedObjects(by: first)
        let fragments = after.difference(to: before, among: touched)
        // What the revert writes, by object and property; objects it adds or removes as wholes.
        var properties: [UUID: Set<String>] = [:]
        var wholes = Set(after.objectsMissing(from: before))
        for fragment in fragments {
            if fragment.type == .add {
                wholes.insert(fragment.uuid)
            } else {
                properties[fragment.uuid, default: []].formUnion(fragment.properties.map(\.key))
            }
        }
        // Later change sets and what each would conflict on, in version order; a later set that a
        // later revert cancelled leaves with that revert (an add, a move, an undo of the move:
        // the add can still be undone). A revert of such a revert re-applies: it stays.
        var live: [(version: Int, conflicts: [RevertConflict])] = []
        var plannedAt = version
        var records = page.records.dropFirst()
        while true {
            for record in records {
                plannedAt = Int(record.version)
                let (found, revertOf) = Self.conflicts(of: record, with: properties, wholes: wholes)
                if let revertOf, let cancelled = live.firstIndex(where: { $0.version == revertOf }) {
                    live.remove(at: cancelled)
                } else if !found.isEmpty {
                    live.append((plannedAt, found))
                }
            }
            guard plannedAt < Int(page.currentVersion) else { break }
            page = try await logPage(of: handle, after: plannedAt)
            guard !page.records.isEmpty else { break }
            records = page.records[...]
        }
        return RevertPlan(
            fragments: fragments, plannedAt: plannedAt,
            conflicts: Array(live.flatMap(\.conflicts).prefix(Self.maxRevertConflicts)))
    }

    private func logPage(of handle: ScopeHandle, after version: Int) async throws(ScopeError) -> ChangePage {
        do throws(StoreError) {
            return try await store.changes(
                scope: handle.name, after: Int64(version), limit: min(configuration.maxHistoryPage, 1000))
        } catch .scopeMissing {
            throw .scopeNotFound(handle.name)
        } catch .historyTruncated {
            // Pruned while the revert was planned: the change set is no longer retained.
            throw .versionNotFound(scope: handle.name, version: version + 1, current: handle.version)
        } catch {
            throw storeFailure(error)
        }
    }

    /// The objects a logged change set names: its fragments' and its removals'.
    static func touchedObjects(by record: ChangeRecord) -> Set<UUID> {
        guard let payload = try? JSONParser.parse(record.payload) else { return [] }
        var touched = Set<UUID>()
        for fragment in payload["fragments"]?.array ?? [] {
            if let uuid = fragment["uuid"]?.string.flatMap(UUID.init(wireString:)) { touched.insert(uuid) }
        }
        for removed in payload["removed"]?.array ?? [] {
            if let uuid = removed.string.flatMap(UUID.init(wireString:)) { touched.insert(uuid) }
        }
        return touched
    }

    /// Where a later logged change set touches what the revert writes: a property it writes too,
    /// or any property, the addition or the removal of an object the revert adds or removes.
    /// Also returns the change set `record` reverted, if it is a revert.
    static func conflicts(
        of record: ChangeRecord, with properties: [UUID: Set<String>], wholes: Set<UUID>
    ) -> (conflicts: [RevertConflict], revertOf: Int?) {
        guard let payload = try? JSONParser.parse(record.payload) else { return ([], nil) }
        let revertOf = payload["revertOf"]?.number?.int64Value.map(Int.init)
        let version = Int(record.version)
        var found: [RevertConflict] = []
        for fragment in payload["fragments"]?.array ?? [] {
            guard let uuid = fragment["uuid"]?.string.flatMap(UUID.init(wireString:)) else { continue }
            let written = fragment["properties"]?.object.map { $0.map(\.key) } ?? []
            if wholes.contains(uuid) {
                found.append(RevertConflict(uuid: uuid, property: written.first, version: version))
            } else if let reverted = properties[uuid] {
                for property in written where reverted.contains(property) {
                    found.append(RevertConflict(uuid: uuid, property: property, version: version))
                }
            }
        }
        for removed in payload["removed"]?.array ?? [] {
            guard let uuid = removed.string.flatMap(UUID.init(wireString:)),
                wholes.contains(uuid) || properties[uuid] != nil
            else { continue }
            found.append(RevertConflict(uuid: uuid, property: nil, version: version))
        }
        return (found, revertOf)
    }
}
