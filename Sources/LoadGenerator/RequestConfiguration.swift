/// `jetstream bench write` and `read`: C keep-alive connections sending requests back-to-back
/// for a fixed time.
public struct RequestConfiguration: Sendable {
    public enum Workload: Sendable {
        /// POST change sets; connection i writes to scope i % scopes.
        case write(scopes: Int, scopePrefix: String, rootClass: String, property: String)
        /// GET `path`.
        case read(path: String)
    }

    public var workload: Workload
    public var connections: Int
    public var durationSeconds: Double

    public init(workload: Workload, connections: Int = 32, durationSeconds: Double = 10) {
        self.workload = workload
        self.connections = connections
        self.durationSeconds = durationSeconds
    }

    var mode: String {
        switch workload {
        case .write: "write"
        case .read: "read"
        }
    }
}
