import HTTPServer
import HTTPTypes

extension Gateway {
    /// The browser client (`Clients/js`, docs/js-client.md), served with every schema under
    /// `/client/`: the entry module, the modules it imports (relative imports, so they resolve
    /// next to it) and its TypeScript declarations. To serve another file, add a symlink in
    /// `Sources/Server/Gateway/Resources`, its `.embedInCode` line in Package.swift and a row here.
    static let clientAssets: [(path: String, asset: StaticAsset)] = [
        ("jetstream.mjs", PackageResources.jetstream_mjs),
        ("jetstream.d.ts", PackageResources.jetstream_d_ts),
        ("errors.mjs", PackageResources.errors_mjs),
        ("schema.mjs", PackageResources.schema_mjs),
        ("state.mjs", PackageResources.state_mjs),
        ("sync-core.mjs", PackageResources.sync_core_mjs),
        ("connection-state.mjs", PackageResources.connection_state_mjs),
        ("backoff.mjs", PackageResources.backoff_mjs),
        ("sse-parser.mjs", PackageResources.sse_parser_mjs),
        ("scope.mjs", PackageResources.scope_mjs),
        ("connection.mjs", PackageResources.connection_mjs),
        ("shared-stream.mjs", PackageResources.shared_stream_mjs),
        ("scope-copy.mjs", PackageResources.scope_copy_mjs),
        ("scope-past.mjs", PackageResources.scope_past_mjs),
        ("presence.mjs", PackageResources.presence_mjs),
        ("stored-copy.mjs", PackageResources.stored_copy_mjs),
    ].map { name, body in ("/client/" + name, StaticAsset(file: name, body: body)) }

    /// The shared-canvas demo page (`Clients/js/demo/index.html`), at `/demo/`.
    static let demoPage = StaticAsset(file: "index.html", body: PackageResources.demo_index_html)

    /// The files the demo page loads next to it.
    static let demoAssets: [(path: String, asset: StaticAsset)] = [
        ("demo.css", PackageResources.demo_css),
        ("demo.mjs", PackageResources.demo_mjs),
    ].map { name, body in ("/demo/" + name, StaticAsset(file: name, body: body)) }

    /// Adds `GET` for each of ``clientAssets`` (`/client/jetstream.mjs`, the modules it imports,
    /// `/client/jetstream.d.ts`), and — when ``servesDemo`` —
    /// `/demo/` with its files and `/demo` → `308 /demo/`. Without the demo schema `/demo/…` has
    /// no route, so it is `404` problem+json like any unknown path. Public (no token needed) and
    /// not rate-limited, like `/openapi.yaml`: they are the same bytes for everyone.
    ///
    /// ```swift
    /// gateway.addClientRoutes(to: &router)
    /// // GET /client/jetstream.mjs → 200 text/javascript, ETag, Cache-Control: no-cache
    /// ```
    func addClientRoutes(to router: inout Router) {
        for (path, asset) in Self.clientAssets {
            router.get(path) { request, _ in asset.response(to: request) }
        }
        guard servesDemo else { return }
        // `/demo` and `/demo/` match one pattern (the router ignores empty segments): the handler
        // tells them apart, so that the page's relative URLs (`demo.css`) resolve under `/demo/`.
        router.get("/demo/") { request, _ in
            guard request.path.hasSuffix("/") else { return Self.redirectToDemo(request) }
            return Self.demoPage.response(to: request)
        }
        for (path, asset) in Self.demoAssets {
            router.get(path) { request, _ in asset.response(to: request) }
        }
    }

    /// `308 Permanent Redirect` to `/demo/`, keeping the query. The target is the constant path,
    /// never the request's (`//demo` must not become a redirect to another host).
    static func redirectToDemo(_ request: HTTPServerRequest) -> HTTPServerResponse {
        let location = "/demo/" + (request.query.map { "?" + $0 } ?? "")
        return HTTPServerResponse(status: .permanentRedirect, headerFields: [.location: location])
    }
}
