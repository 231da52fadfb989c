import HTTPServer
import HTTPTypes

/// A route's access requirement, so routes read `router.get(path, gate(.read)) { … }` with the
/// handler shapes the engine's router knows; the handler runs only once the request is admitted.
struct AccessGate: Sendable {
    let gateway: Gateway
    let requirement: Gateway.Requirement
}

extension Router {
    /// A gated route answered through the responder; the handler also gets the request's grant.
    mutating func on(
        _ method: HTTPRequest.Method, _ path: String, _ gate: AccessGate, _ handler: @escaping Gateway.GrantedHandler
    ) {
        on(method, path, gate.gateway.guarded(gate.requirement, handler))
    }

    /// A gated route that returns its response at once.
    mutating func on(
        _ method: HTTPRequest.Method, _ path: String, _ gate: AccessGate,
        _ handler: @escaping @Sendable (HTTPServerRequest, HTTPRequestContext) -> HTTPServerResponse
    ) {
        on(method, path, gate) { request, context, responder, _ in responder.respond(handler(request, context)) }
    }

    /// A gated route answered by async code.
    mutating func on(
        _ method: HTTPRequest.Method, _ path: String, _ gate: AccessGate,
        _ handler: @escaping @Sendable (HTTPServerRequest, HTTPRequestContext) async -> HTTPServerResponse
    ) {
        on(method, path, gate) { request, context, responder, _ in
            Task { responder.respond(await handler(request, context)) }
        }
    }

    mutating func get(_ path: String, _ gate: AccessGate, _ handler: @escaping Gateway.GrantedHandler) {
        on(.get, path, gate, handler)
    }

    mutating func get(
        _ path: String, _ gate: AccessGate,
        _ handler: @escaping @Sendable (HTTPServerRequest, HTTPRequestContext) -> HTTPServerResponse
    ) {
        on(.get, path, gate, handler)
    }

    mutating func get(
        _ path: String, _ gate: AccessGate,
        _ handler: @escaping @Sendable (HTTPServerRequest, HTTPRequestContext) async -> HTTPServerResponse
    ) {
        on(.get, path, gate, handler)
    }

    /// A gated `GET` that returns its response at once and needs the grant (the scope list).
    mutating func get(
        _ path: String, _ gate: AccessGate,
        _ handler: @escaping @Sendable (HTTPServerRequest, HTTPRequestContext, AccessGrant) -> HTTPServerResponse
    ) {
        on(.get, path, gate) { request, context, responder, grant in
            responder.respond(handler(request, context, grant))
        }
    }

    mutating func post(_ path: String, _ gate: AccessGate, _ handler: @escaping Gateway.GrantedHandler) {
        on(.post, path, gate, handler)
    }

    mutating func put(
        _ path: String, _ gate: AccessGate,
        _ handler: @escaping @Sendable (HTTPServerRequest, HTTPRequestContext) async -> HTTPServerResponse
    ) {
        on(.put, path, gate, handler)
    }

    mutating func delete(
        _ path: String, _ gate: AccessGate,
        _ handler: @escaping @Sendable (HTTPServerRequest, HTTPRequestContext) async -> HTTPServerResponse
    ) {
        on(.delete, path, gate, handler)
    }
}
