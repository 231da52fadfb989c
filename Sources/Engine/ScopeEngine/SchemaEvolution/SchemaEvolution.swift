/// The engine's view of schema changes: whether stored data goes through a translation, and the
/// boundaries of ``StoredSchemaRecord``.
struct SchemaEvolution: Sendable {
    /// Whether every stored snapshot and change set is read through ``StoredDataTranslation``:
    /// true until recovery finds the store last served with this very schema (on a shared store,
    /// always: another node may run another schema during a rolling upgrade). Otherwise only what
    /// a scope stored at or before its boundary is (written under an earlier schema).
    var translatesAll = true
    var boundaries: [String: Int] = [:]
    /// On a shared store: this node's ``NodeSchemaEntry`` key, and why it may not serve beside
    /// an older node (nil when it may).
    var nodeKey: String?
    var conflict: String?
    /// Other nodes' schemas (by fingerprint) and this one's conflicts with each; nil for one this
    /// gateway cannot read.
    var conflictsByFingerprint: [String: [String]?] = [:]
}
