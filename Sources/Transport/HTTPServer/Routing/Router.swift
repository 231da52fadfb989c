import HTTPTypes
import Logging

/// What every route is: a function from the request and its context to the response. It runs on
/// the connection's loop thread and must not block. A handler that answers later — from async code
/// or another thread — returns ``HTTPServerResponse/deferred`` and answers through
/// `context.responder` (``HTTPRequestContext/answerAsync(_:)`` does that for async code).
public typealias RouteHandler = @Sendable (HTTPServerRequest, HTTPRequestContext) throws -> HTTPServerResponse

/// A route's look at a request before its body is read (the request it gets has an empty body,
/// the route's parameters beside it): true when the route will refuse the request without needing
/// its body — the route then runs at once on the bodiless request to answer it, the body is never
/// read and `100 Continue` never sent — false to read the body first. It runs on the loop thread
/// and must be cheap and synchronous: media type, presence of credentials, the target's existence.
///
/// ```swift
/// router.post("/v1/scopes/{name}/changesets", admitBody: { request, parameters in
///     request.headerFields[.contentType] != "application/json" || !scopes.exist(parameters["name"])
/// }) { request, context in … }
/// ```
public typealias BodyAdmission = @Sendable (HTTPServerRequest, [String: String]) -> Bool

/// Code that runs around route handlers: authentication, metrics, logging. It calls `next` to go
/// on (now, or later from another thread, returning ``HTTPServerResponse/deferred`` meanwhile and
/// answering through `context.responder`), or answers itself.
///
/// ```swift
/// struct RequireHeader: RouterMiddleware {
///     func handle(_ request: HTTPServerRequest, context: HTTPRequestContext, next: RouteHandler) throws -> HTTPServerResponse {
///         guard request.headerFields[.authorization] != nil else { return .text("who are you?", status: .unauthorized) }
///         return try next(request, context)
///     }
/// }
/// ```
public protocol RouterMiddleware: Sendable {
    func handle(
        _ request: HTTPServerRequest, context: HTTPRequestContext, next: @escaping RouteHandler
    ) throws -> HTTPServerResponse
}

/// Maps method and path to handlers. Build it before starting the server; it is a value and is
/// copied into the server.
///
/// ```swift
/// var router = Router()
/// router.get("/health") { request, context in .text("ok") }
/// router.get("/v1/scopes/{name}", middleware: [auth]) { request, context in
///     context.answerAsync { try await store.load(context.parameters["name"]!) }
/// }
/// router.post("/v1/scopes/{name}/changesets") { request, context in
///     hub.submit(request.body) { result in context.responder.respond(.json(result)) }
///     return .deferred
/// }
/// ```
///
/// Unknown paths get 404; a known path with another method gets 405 with `Allow`. `HEAD` uses
/// the `GET` route (the body is dropped). The matched pattern is the request's
/// ``HTTPRequestContext/route`` and ``AccessLogEntry/route``, so metrics label by route, never by
/// the raw target.
public struct Router: Sendable {
    struct Route: Sendable {
        var method: HTTPRequest.Method?
        var pattern: RoutePattern
        var handler: RouteHandler
        var admitBody: BodyAdmission?
    }

    enum Match {
        case found(Route, parameters: [String: String])
        case methodNotAllowed(allowed: [HTTPRequest.Method])
        case notFound

        /// The matched route's pattern.
        var route: String? {
            if case .found(let route, _) = self { return route.pattern.description }
            return nil
        }
    }

    private(set) var routes: [Route] = []
    private var middleware: [any RouterMiddleware] = []

    public init() {}

    /// Adds middleware that runs around every route added after it.
    public mutating func add(middleware: any RouterMiddleware) {
        self.middleware.append(middleware)
    }

    /// Adds a route for `method` (nil: any method) behind `middleware` (outermost first), inside
    /// the router-wide middleware.
    /// An unknown route or method never gets its body read (the engine answers 404, 405 or 501
    /// first); `admitBody` adds the route's own check before the body is read.
    public mutating func on(
        _ method: HTTPRequest.Method?, _ path: String, middleware: [any RouterMiddleware] = [],
        admitBody: BodyAdmission? = nil, _ handler: @escaping RouteHandler
    ) {
        var chained = handler
        for layer in (self.middleware + middleware).reversed() {
            let next = chained
            chained = { request, context in try layer.handle(request, context: context, next: next) }
        }
        routes.append(Route(method: method, pattern: RoutePattern(path), handler: chained, admitBody: admitBody))
    }

    public mutating func get(_ path: String, middleware: [any RouterMiddleware] = [], _ handler: @escaping RouteHandler)
    {
        on(.get, path, middleware: middleware, handler)
    }

    public mutating func post(
        _ path: String, middleware: [any RouterMiddleware] = [], admitBody: BodyAdmission? = nil,
        _ handler: @escaping RouteHandler
    ) {
        on(.post, path, middleware: middleware, admitBody: admitBody, handler)
    }

    public mutating func put(
        _ path: String, middleware: [any RouterMiddleware] = [], admitBody: BodyAdmission? = nil,
        _ handler: @escaping RouteHandler
    ) {
        on(.put, path, middleware: middleware, admitBody: admitBody, handler)
    }

    public mutating func delete(
        _ path: String, middleware: [any RouterMiddleware] = [], _ handler: @escaping RouteHandler
    ) {
        on(.delete, path, middleware: middleware, handler)
    }

    public mutating func patch(
        _ path: String, middleware: [any RouterMiddleware] = [], admitBody: BodyAdmission? = nil,
        _ handler: @escaping RouteHandler
    ) {
        on(.patch, path, middleware: middleware, admitBody: admitBody, handler)
    }

    func match(method: HTTPRequest.Method, path: String) -> Match {
        var allowed: [HTTPRequest.Method] = []
        var fallback: (Route, [String: String])?
        let parts = path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true).map { Substring($0) }
        for route in routes {
            guard let parameters = route.pattern.match(parts: parts) else { continue }
            guard let routeMethod = route.method else { return .found(route, parameters: parameters) }
            if routeMethod == method { return .found(route, parameters: parameters) }
            if method == .head, routeMethod == .get, fallback == nil { fallback = (route, parameters) }
            if !allowed.contains(routeMethod) { allowed.append(routeMethod) }
        }
        if let (route, parameters) = fallback { return .found(route, parameters: parameters) }
        return allowed.isEmpty ? .notFound : .methodNotAllowed(allowed: allowed)
    }

    /// Runs the matched route's handler (on the loop thread), or answers 404/405.
    func dispatch(_ match: Match, _ request: HTTPServerRequest, context: HTTPRequestContext) {
        let responder = context.responder
        switch match {
        case .found(let route, let parameters):
            var context = context
            context.parameters = parameters
            context.route = route.pattern.description
            do {
                let response = try route.handler(request, context)
                if !response.isDeferred, !responder.hasResponded { responder.respond(response) }
            } catch {
                responder.respond(Self.response(for: error, context: context))
            }
        case .methodNotAllowed where !Self.standardMethods.contains(request.method.rawValue):
            // A method no route knows of is not implemented here (RFC 9110 §9.1); the answer does
            // not repeat it (it is the client's text, and may be anything a token allows).
            responder.respond(responder.renderError(.notImplemented, "the request method is not implemented"))
        case .methodNotAllowed(let allowed):
            var response = responder.renderError(
                .methodNotAllowed, "\(request.method.rawValue) is not allowed on \(request.path)")
            response.head.headerFields[.allow] = allowed.map(\.rawValue).joined(separator: ", ")
            responder.respond(response)
        case .notFound:
            responder.respond(responder.renderError(.notFound, "no resource at \(request.path)"))
        }
    }

    /// The methods of RFC 9110, RFC 5789 (PATCH) and the HTTP QUERY method (httpbis, safe with a
    /// body): a known method a route does not take is 405 with `Allow`, any other 501.
    static let standardMethods: Set<String> = [
        "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH", "QUERY",
    ]

    /// The answer to an error a handler threw: its own status for an ``HTTPError``, else 500.
    static func response(for error: any Error, context: HTTPRequestContext) -> HTTPServerResponse {
        if let error = error as? HTTPError {
            return context.responder.renderError(
                error.status, error.message.isEmpty ? error.status.reasonPhrase : error.message)
        }
        context.logger.error("handler failed", metadata: ["error": "\(error)"])
        return context.responder.renderError(.internalServerError, "the request could not be served")
    }
}
