import HTTPTypes

/// Maps method and path to handlers. Build it before starting the server; it is a value and is
/// copied into the server.
///
/// Handlers come in three shapes, chosen by the closure you pass:
///
/// ```swift
/// var router = Router()
/// // Answer at once, on the loop thread (must not block):
/// router.get("/health") { request, context in .text("ok") }
/// // Answer from async code (runs in a Task):
/// router.get("/v1/scopes/{name}") { request, context in
///     try await store.load(context.parameters["name"]!)
/// }
/// // Answer later from any thread through the responder:
/// router.post("/v1/scopes/{name}/changesets") { request, context, responder in
///     hub.submit(request.body) { result in responder.respond(.json(result)) }
/// }
/// ```
///
/// Unknown paths get 404; a known path with another method gets 405 with `Allow`. `HEAD` uses
/// the `GET` route (the body is dropped).
public struct Router: Sendable {
    struct Route: Sendable {
        var method: HTTPRequest.Method?
        var pattern: RoutePattern
        var handler: RouteHandler
    }

    enum Match {
        case found(RouteHandler, parameters: [String: String])
        case methodNotAllowed(allowed: [HTTPRequest.Method])
        case notFound
    }

    private(set) var routes: [Route] = []

    public init() {}

    mutating func add(_ method: HTTPRequest.Method?, _ path: String, _ handler: RouteHandler) {
        routes.append(Route(method: method, pattern: RoutePattern(path), handler: handler))
    }

    func match(method: HTTPRequest.Method, path: String) -> Match {
        var allowed: [HTTPRequest.Method] = []
        var fallback: (RouteHandler, [String: String])?
        let parts = path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true).map { Substring($0) }
        for route in routes {
            guard let parameters = route.pattern.match(parts: parts) else { continue }
            guard let routeMethod = route.method else { return .found(route.handler, parameters: parameters) }
            if routeMethod == method { return .found(route.handler, parameters: parameters) }
            if method == .head, routeMethod == .get, fallback == nil { fallback = (route.handler, parameters) }
            if !allowed.contains(routeMethod) { allowed.append(routeMethod) }
        }
        if let (handler, parameters) = fallback { return .found(handler, parameters: parameters) }
        return allowed.isEmpty ? .notFound : .methodNotAllowed(allowed: allowed)
    }

    /// Routes `request` and runs its handler (on the loop thread).
    func dispatch(_ request: HTTPServerRequest, context: HTTPRequestContext) {
        switch match(method: request.method, path: request.path) {
        case .found(let handler, let parameters):
            var context = context
            context.parameters = parameters
            handler.run(request, context)
        case .methodNotAllowed(let allowed):
            var response = context.responder.renderError(
                .methodNotAllowed, "\(request.method.rawValue) is not allowed on \(request.path)")
            response.head.headerFields[.allow] = allowed.map(\.rawValue).joined(separator: ", ")
            context.responder.respond(response)
        case .notFound:
            context.responder.respond(context.responder.renderError(.notFound, "no resource at \(request.path)"))
        }
    }
}
