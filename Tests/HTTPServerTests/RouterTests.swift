import HTTPTypes
import Testing

@testable import HTTPServer

@Suite struct RouterTests {
    func router() -> Router {
        var router = Router()
        router.get("/v1/scopes/{name}") { _, context in .text(context.parameters["name"] ?? "") }
        router.post("/v1/scopes/{name}/changesets") { _, _ in .text("post") }
        router.delete("/v1/scopes/{name}") { _, _ in .text("delete") }
        router.get("/files/*") { _, _ in .text("files") }
        return router
    }

    @Test func matchesPathParametersPercentDecoded() {
        guard case .found(_, let parameters) = router().match(method: .get, path: "/v1/scopes/canvas%201") else {
            Issue.record("no match")
            return
        }
        #expect(parameters == ["name": "canvas 1"])
    }

    @Test func distinguishesNotFoundFromMethodNotAllowed() {
        let router = router()
        guard case .methodNotAllowed(let allowed) = router.match(method: .put, path: "/v1/scopes/a") else {
            Issue.record("expected 405")
            return
        }
        #expect(allowed == [.get, .delete])
        guard case .notFound = router.match(method: .get, path: "/v1/scopes/a/b/c") else {
            Issue.record("expected 404")
            return
        }
        guard case .notFound = router.match(method: .get, path: "/v1/scopes") else {
            Issue.record("expected 404 for a missing parameter")
            return
        }
    }

    @Test func headUsesTheGetRouteAndRestMatchesDeeperPaths() {
        let router = router()
        guard case .found = router.match(method: .head, path: "/v1/scopes/a") else {
            Issue.record("HEAD did not use the GET route")
            return
        }
        guard case .found = router.match(method: .get, path: "/files/a/b/c") else {
            Issue.record("* did not match")
            return
        }
    }

    @Test func requestPathAndQuery() {
        let request = HTTPServerRequest(
            head: HTTPRequest(method: .get, scheme: nil, authority: "a", path: "/x/y?a=1&b=two%20words&c=x+y&d"))
        #expect(request.path == "/x/y")
        #expect(request.query == "a=1&b=two%20words&c=x+y&d")
        #expect(request.queryValue("b") == "two words")
        #expect(request.queryValue("c") == "x y")
        #expect(request.queryValue("d") == "")
        #expect(request.queryValue("z") == nil)
        let absolute = HTTPServerRequest(
            head: HTTPRequest(method: .get, scheme: nil, authority: "a", path: "http://example.com/p/q?x=1"))
        #expect(absolute.path == "/p/q")
    }
}
