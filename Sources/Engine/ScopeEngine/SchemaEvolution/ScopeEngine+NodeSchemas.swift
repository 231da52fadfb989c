import Foundation
import JetstreamModel
import Logging
import Store
import Synchronization

extension ScopeEngine {
    /// How often a node on a shared store refreshes its ``NodeSchemaEntry`` and reads the others'.
    static let nodeSchemaInterval: Duration = .seconds(2)
    /// An entry not refreshed for this long belongs to a node that is gone.
    static let nodeSchemaExpiry: Int64 = 10_000
    /// Entries of nodes gone this long are removed by whichever node reads them.
    static let nodeSchemaCleanup: Int64 = 600_000

    /// On a shared store: tells the other nodes which schema this one serves, and keeps watching
    /// theirs. While a node that started earlier runs a schema this one cannot serve beside
    /// (``JetstreamModel/Schema/rollingUpgradeConflicts(with:)``), this node is not ready
    /// (``readinessProblem()`` names the conflict) and says so in its log. The first round is
    /// over when this returns (a node is never ready before it compared); the rest run in the
    /// background until the drain.
    public func watchNodeSchemas() async {
        guard store is any SharedChangeLogStore else { return }
        let entry = NodeSchemaEntry(
            node: UUID().wireString, fingerprint: schema.fingerprint, schema: schema.jsonValue,
            startedAt: configuration.wallClock(), seenAt: configuration.wallClock())
        evolution.withLock { $0.nodeKey = entry.key }
        guard await compareNodeSchemas(entry) else { return }
        Task { [weak self] in
            while true {
                try? await Task.sleep(for: Self.nodeSchemaInterval)
                guard let engine = self, !engine.isDraining, await engine.compareNodeSchemas(entry) else { return }
            }
        }
    }

    /// Removes this node's entry (a node stopping is gone at once, not after the expiry).
    public func withdrawNodeSchema() async {
        guard let key = evolution.withLock({ $0.nodeKey }) else { return }
        try? await store.writeMetadata(key: key, value: nil)
    }

    /// Why this node may not serve beside the others, nil when it may.
    var nodeSchemaConflict: String? { evolution.withLock { $0.conflict } }

    /// One round: refresh this node's entry, read every other, decide. False once the store is
    /// closed (the engine is going away).
    func compareNodeSchemas(_ entry: NodeSchemaEntry) async -> Bool {
        var entry = entry
        let now = configuration.wallClock()
        entry.seenAt = now
        let others: [NodeSchemaEntry]
        do throws(StoreError) {
            try await store.writeMetadata(key: entry.key, value: entry.bytes)
            let read = try await store.metadataEntries(prefix: NodeSchemaEntry.keyPrefix)
            var live: [NodeSchemaEntry] = []
            for (key, bytes) in read where key != entry.key {
                guard let other = NodeSchemaEntry(bytes: bytes) else { continue }
                if now - other.seenAt > Self.nodeSchemaCleanup {
                    try? await store.writeMetadata(key: key, value: nil)
                } else if now - other.seenAt <= Self.nodeSchemaExpiry {
                    live.append(other)
                }
            }
            others = live
        } catch .closed {
            return false
        } catch {
            // The store's outage is readiness's business already; the last decision stands.
            return true
        }
        let conflict = conflict(of: entry, among: others)
        let previous = evolution.withLock { evolution in
            defer { evolution.conflict = conflict }
            return evolution.conflict
        }
        if conflict != previous {
            if let conflict {
                logger.warning("not ready: schema conflict", metadata: ["reason": "\(conflict)"])
            } else if previous != nil {
                logger.notice("schema conflict resolved: ready")
            }
        }
        return true
    }

    /// The first older node whose schema this one cannot serve beside, as a reason for `/readyz`.
    func conflict(of entry: NodeSchemaEntry, among others: [NodeSchemaEntry]) -> String? {
        for other in others.sorted(by: { $0.isOlder(than: $1) }) where other.isOlder(than: entry) {
            guard other.fingerprint != entry.fingerprint else { continue }
            guard let conflicts = conflicts(with: other) else {
                return "node \(other.node) runs a schema this gateway cannot read (fingerprint \(other.fingerprint))"
            }
            guard !conflicts.isEmpty else { continue }
            return "schema \(entry.fingerprint) cannot serve beside node \(other.node), which runs schema "
                + "\(other.fingerprint): \(conflicts.joined(separator: "; ")) — change those on every node together"
        }
        return nil
    }

    /// This schema's conflicts with another node's, nil when that one cannot be read; worked out
    /// once per fingerprint (every round reads every node's entry again).
    private func conflicts(with other: NodeSchemaEntry) -> [String]? {
        if let known = evolution.withLock({ $0.conflictsByFingerprint[other.fingerprint] }) { return known }
        let conflicts = (try? Schema.parse(tree: other.schema)).map { schema.rollingUpgradeConflicts(with: $0) }
        evolution.withLock { $0.conflictsByFingerprint[other.fingerprint] = conflicts }
        return conflicts
    }
}
