import JetstreamModel

extension ScopeHub {
    /// Creates the demo schema's `demo` scope (an empty canvas) unless it exists, so that
    /// `jetstream serve` with no arguments has something to open.
    public func ensureDemoScope() async throws {
        guard handle(named: "demo") == nil, let rootClass = schema.rootClass(forScope: "demo") else { return }
        _ = try await create(name: "demo", rootClassName: rootClass.name, rootUUID: nil, properties: JSONObject())
    }
}
