import HTTPServer
import HTTPTypes

extension Gateway {
    /// `GET /`: where a person who opens the server's address lands. A browser (`Accept` naming
    /// `text/html`) gets a small page of links — the demo when this server runs the demo schema,
    /// the API document, the client module, health and metrics; anything else gets the same
    /// links as JSON, so `curl http://host/` says where to go instead of answering 404.
    ///
    /// ```swift
    /// gateway.addIndexRoute(to: &router)
    /// // curl -s localhost:8080/  → {"api":"/openapi.yaml","client":"/client/jetstream.mjs",…}
    /// ```
    func addIndexRoute(to router: inout Router) {
        let links = Self.indexLinks(demo: servesDemo)
        let json = Self.indexJSON(links)
        let page = Self.indexPage(links)
        router.get("/") { request, _ in
            guard request.path == "/" else {
                return Problem(.notFound, detail: "no route for \(request.path)").response
            }
            let accept = request.headerFields[.accept] ?? ""
            guard accept.contains("text/html") else { return .json(json) }
            return HTTPServerResponse(
                status: .ok, headerFields: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-cache"],
                body: Array(page.utf8))
        }
    }

    /// The index's links: (JSON key, path, what a person finds there).
    static func indexLinks(demo: Bool) -> [(key: String, path: String, title: String)] {
        var links: [(key: String, path: String, title: String)] = []
        if demo { links.append(("demo", "/demo/", "The demo: a shared canvas of shapes (open it in two windows)")) }
        links += [
            ("api", "/openapi.yaml", "The HTTP API (OpenAPI 3.1)"),
            ("schema", "/v1/schema", "This server's schema"),
            ("scopes", "/v1/scopes", "The scopes (JSON)"),
            ("client", "/client/jetstream.mjs", "The JavaScript client module"),
            ("health", "/healthz", "Health"),
            ("readiness", "/readyz", "Readiness"),
            ("metrics", "/metrics", "Metrics (Prometheus)"),
        ]
        return links
    }

    static func indexJSON(_ links: [(key: String, path: String, title: String)]) -> String {
        let members = links.map { #""\#($0.key)":"\#($0.path)""# }.joined(separator: ",")
        return #"{"name":"Jetstream Gateway","links":{\#(members)}}"#
    }

    static func indexPage(_ links: [(key: String, path: String, title: String)]) -> String {
        let items = links.map { #"<li><a href="\#($0.path)">\#($0.title)</a> <code>\#($0.path)</code></li>"# }
        return """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><title>Jetstream Gateway</title>
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <style>body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem}
            code{color:#555;font-size:.85em}</style></head>
            <body><h1>Jetstream Gateway</h1><ul>
            \(items.joined(separator: "\n"))
            </ul></body></html>

            """
    }
}
