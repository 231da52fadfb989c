/// The route a request target falls under, as the `route` label of the request metrics: a fixed,
/// small set (scope names never become labels), found by scanning the target without allocating.
///
/// ```swift
/// GatewayRoute(target: "/v1/scopes/canvas-1/events?lastEventId=4") // .events
/// ```
enum GatewayRoute: Int, CaseIterable, Sendable {
    case healthz, readyz, metrics, openAPI, schema, scopes, scope, changesets, events, other

    var label: String {
        switch self {
        case .healthz: "/healthz"
        case .readyz: "/readyz"
        case .metrics: "/metrics"
        case .openAPI: "/openapi.yaml"
        case .schema: "/v1/schema"
        case .scopes: "/v1/scopes"
        case .scope: "/v1/scopes/{name}"
        case .changesets: "/v1/scopes/{name}/changesets"
        case .events: "/v1/scopes/{name}/events"
        case .other: "other"
        }
    }

    private static let exactRoutes: [GatewayRoute] = [.healthz, .readyz, .metrics, .openAPI, .schema, .scopes]

    init(target: String) {
        var path = target.utf8[...]
        if let query = path.firstIndex(of: UInt8(ascii: "?")) { path = path[..<query] }
        for fixed in Self.exactRoutes
        where path.elementsEqual(fixed.label.utf8) {
            self = fixed
            return
        }
        let prefix = "/v1/scopes/".utf8
        guard path.starts(with: prefix) else {
            self = .other
            return
        }
        let rest = path.dropFirst(prefix.count)
        guard let slash = rest.firstIndex(of: UInt8(ascii: "/")) else {
            self = rest.isEmpty ? .scopes : .scope
            return
        }
        let tail = rest[slash...]
        if tail.elementsEqual("/changesets".utf8) {
            self = .changesets
        } else if tail.elementsEqual("/events".utf8) {
            self = .events
        } else {
            self = .other
        }
    }
}
