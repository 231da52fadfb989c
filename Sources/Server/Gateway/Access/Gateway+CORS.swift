import HTTPServer
import HTTPTypes

extension Gateway {
    /// Paths a browser may preflight.
    static let preflightPaths = [
        "/healthz", "/readyz", "/metrics", "/openapi.yaml", "/v1/schema", "/v1/scopes", "/v1/scopes/{name}",
        "/v1/scopes/{name}/objects/{uuid}", "/v1/scopes/{name}/changesets", "/v1/scopes/{name}/events",
        "/v1/scopes/{name}/objects/{uuid}/history", "/v1/scopes/{name}/diff", "/v1/scopes/{name}/restore",
        "/v1/scopes/{name}/changesets/{version}/revert", "/v1/events", "/v1/scopes/{name}/presence",
        "/v1/scopes/{name}/presence/{client}", "/v1/scopes/{name}/methods/{method}",
        "/client/jetstream.mjs", "/client/jetstream.d.ts",
    ]

    /// Answers `OPTIONS` preflights when CORS is on (the origin headers come from
    /// ``corsResponseHeaders``, installed in the engine).
    func addPreflightRoutes(to router: inout Router) {
        let cors = access.policy.cors
        guard cors.isEnabled else { return }
        for path in Self.preflightPaths {
            router.on(.options, path) { request, _ in
                let origin = request.headerFields.value(of: ServerHeaders.origin)
                guard let origin, let method = request.headerFields[ServerHeaders.accessControlRequestMethod] else {
                    return HTTPServerResponse(
                        status: .noContent, headerFields: [.allow: cors.allowedMethods.joined(separator: ", ")])
                }
                let decision = cors.preflight(
                    origin: origin, method: method,
                    requestHeaders: request.headerFields[ServerHeaders.accessControlRequestHeaders])
                if case .refused(let reason) = decision {
                    return Problem(.forbidden, detail: "CORS preflight refused: \(reason)").response
                }
                return HTTPServerResponse(
                    status: .noContent,
                    headerFields: [
                        ServerHeaders.allowMethods: cors.allowedMethods.joined(separator: ", "),
                        ServerHeaders.allowHeaders: cors.allowedHeaders.joined(separator: ", "),
                        ServerHeaders.maxAge: String(cors.maxAge),
                    ])
            }
        }
    }

    /// The engine hook (``HTTPServerConfiguration/responseHeaders``) that adds CORS headers to
    /// every response; nil when CORS is off.
    ///
    /// ```swift
    /// configuration.responseHeaders = gateway.corsResponseHeaders
    /// ```
    public var corsResponseHeaders: (@Sendable (HTTPServerRequest, inout HTTPFields) -> Void)? {
        let cors = access.policy.cors
        guard cors.isEnabled else { return nil }
        return { request, fields in
            cors.apply(origin: request.headerFields.value(of: ServerHeaders.origin), to: &fields)
        }
    }
}
