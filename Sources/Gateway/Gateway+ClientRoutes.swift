import HTTPServer
import HTTPTypes

extension Gateway {
    /// The browser client (`Clients/js`, docs/js-client.md), served with every schema: the ES module and
    /// its TypeScript declarations.
    static let clientAssets: [(path: String, asset: StaticAsset)] = [
        (
            "/client/jetstream.mjs",
            StaticAsset(body: PackageResources.jetstream_mjs, contentType: "text/javascript; charset=utf-8")
        ),
        (
            "/client/jetstream.d.ts",
            StaticAsset(body: PackageResources.jetstream_d_ts, contentType: "application/typescript; charset=utf-8")
        ),
    ]

    /// The shared-canvas demo page (`Clients/js/demo/index.html`), at `/demo/`.
    static let demoPage = StaticAsset(body: PackageResources.demo_index_html, contentType: "text/html; charset=utf-8")

    /// The files the demo page loads next to it.
    static let demoAssets: [(path: String, asset: StaticAsset)] = [
        ("/demo/demo.css", StaticAsset(body: PackageResources.demo_css, contentType: "text/css; charset=utf-8")),
        ("/demo/demo.mjs", StaticAsset(body: PackageResources.demo_mjs, contentType: "text/javascript; charset=utf-8")),
    ]

    /// Adds `GET /client/jetstream.mjs` and `/client/jetstream.d.ts`, and — when ``servesDemo`` —
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
