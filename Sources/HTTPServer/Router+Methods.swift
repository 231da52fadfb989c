import HTTPTypes

extension Router {
    /// Adds a route for `method` (nil: any method) that answers at once on the loop thread.
    public mutating func on(
        _ method: HTTPRequest.Method?, _ path: String,
        _ handler: @escaping @Sendable (HTTPServerRequest, HTTPRequestContext) throws -> HTTPServerResponse
    ) {
        add(method, path, .immediate(handler))
    }

    /// Adds a route for `method` (nil: any method) answered by async code in a `Task`.
    public mutating func on(
        _ method: HTTPRequest.Method?, _ path: String,
        _ handler: @escaping @Sendable (HTTPServerRequest, HTTPRequestContext) async throws -> HTTPServerResponse
    ) {
        add(method, path, .asynchronous(handler))
    }

    /// Adds a route for `method` (nil: any method) answered through the responder, now or later.
    public mutating func on(
        _ method: HTTPRequest.Method?, _ path: String,
        _ handler: @escaping @Sendable (HTTPServerRequest, HTTPRequestContext, HTTPResponder) -> Void
    ) {
        add(method, path, .responder(handler))
    }

    /// Adds a `GET` route answered at once on the loop thread.
    public mutating func get(
        _ path: String,
        _ handler: @escaping @Sendable (HTTPServerRequest, HTTPRequestContext) throws -> HTTPServerResponse
    ) {
        on(.get, path, handler)
    }

    /// Adds a `GET` route answered by async code.
    public mutating func get(
        _ path: String,
        _ handler: @escaping @Sendable (HTTPServerRequest, HTTPRequestContext) async throws -> HTTPServerResponse
    ) {
        on(.get, path, handler)
    }

    /// Adds a `GET` route answered through the responder.
    public mutating func get(
        _ path: String,
        _ handler: @escaping @Sendable (HTTPServerRequest, HTTPRequestContext, HTTPResponder) -> Void
    ) {
        on(.get, path, handler)
    }

    /// Adds a `POST` route answered at once on the loop thread.
    public mutating func post(
        _ path: String,
        _ handler: @escaping @Sendable (HTTPServerRequest, HTTPRequestContext) throws -> HTTPServerResponse
    ) {
        on(.post, path, handler)
    }

    /// Adds a `POST` route answered by async code.
    public mutating func post(
        _ path: String,
        _ handler: @escaping @Sendable (HTTPServerRequest, HTTPRequestContext) async throws -> HTTPServerResponse
    ) {
        on(.post, path, handler)
    }

    /// Adds a `POST` route answered through the responder.
    public mutating func post(
        _ path: String,
        _ handler: @escaping @Sendable (HTTPServerRequest, HTTPRequestContext, HTTPResponder) -> Void
    ) {
        on(.post, path, handler)
    }

    /// Adds a `PUT` route answered at once on the loop thread.
    public mutating func put(
        _ path: String,
        _ handler: @escaping @Sendable (HTTPServerRequest, HTTPRequestContext) throws -> HTTPServerResponse
    ) {
        on(.put, path, handler)
    }

    /// Adds a `PUT` route answered by async code.
    public mutating func put(
        _ path: String,
        _ handler: @escaping @Sendable (HTTPServerRequest, HTTPRequestContext) async throws -> HTTPServerResponse
    ) {
        on(.put, path, handler)
    }

    /// Adds a `PUT` route answered through the responder.
    public mutating func put(
        _ path: String,
        _ handler: @escaping @Sendable (HTTPServerRequest, HTTPRequestContext, HTTPResponder) -> Void
    ) {
        on(.put, path, handler)
    }

    /// Adds a `DELETE` route answered at once on the loop thread.
    public mutating func delete(
        _ path: String,
        _ handler: @escaping @Sendable (HTTPServerRequest, HTTPRequestContext) throws -> HTTPServerResponse
    ) {
        on(.delete, path, handler)
    }

    /// Adds a `DELETE` route answered by async code.
    public mutating func delete(
        _ path: String,
        _ handler: @escaping @Sendable (HTTPServerRequest, HTTPRequestContext) async throws -> HTTPServerResponse
    ) {
        on(.delete, path, handler)
    }

    /// Adds a `DELETE` route answered through the responder.
    public mutating func delete(
        _ path: String,
        _ handler: @escaping @Sendable (HTTPServerRequest, HTTPRequestContext, HTTPResponder) -> Void
    ) {
        on(.delete, path, handler)
    }

    /// Adds a `PATCH` route answered at once on the loop thread.
    public mutating func patch(
        _ path: String,
        _ handler: @escaping @Sendable (HTTPServerRequest, HTTPRequestContext) throws -> HTTPServerResponse
    ) {
        on(.patch, path, handler)
    }

    /// Adds a `PATCH` route answered by async code.
    public mutating func patch(
        _ path: String,
        _ handler: @escaping @Sendable (HTTPServerRequest, HTTPRequestContext) async throws -> HTTPServerResponse
    ) {
        on(.patch, path, handler)
    }

    /// Adds a `PATCH` route answered through the responder.
    public mutating func patch(
        _ path: String,
        _ handler: @escaping @Sendable (HTTPServerRequest, HTTPRequestContext, HTTPResponder) -> Void
    ) {
        on(.patch, path, handler)
    }
}
