import HTTPTypes
import Logging
import SocketLoop

/// What a handler knows besides the request: path parameters, a logger, its loop, and how to
/// answer with an event stream.
///
/// ```swift
/// router.get("/v1/scopes/{name}") { request, context in
///     .text("scope \(context.parameters["name"] ?? "")")
/// }
/// ```
public struct HTTPRequestContext: Sendable {
    /// Path parameters by name, percent-decoded (`{name}` in the route pattern).
    public internal(set) var parameters: [String: String]
    /// The pattern of the matched route (`/v1/scopes/{name}`): a small, fixed set, fit for metric labels.
    public internal(set) var route: String = ""
    /// Values middleware hands to the handlers after it (an access grant, a request id).
    public var values = RequestValues()
    public let logger: Logger
    /// The peer of the connection (`127.0.0.1:51234`, `[::1]:51234` or `unix`); behind a proxy,
    /// the proxy's address.
    public let remoteAddress: String
    /// The answer object; synchronous and async handlers answer by returning instead.
    public let responder: HTTPResponder

    init(parameters: [String: String] = [:], logger: Logger, remoteAddress: String, responder: HTTPResponder) {
        self.parameters = parameters
        self.logger = logger
        self.remoteAddress = remoteAddress
        self.responder = responder
    }

    /// The loop thread that owns the request's connection.
    public var loop: EventLoop { responder.loop }

    /// Answers with an event stream (see ``HTTPResponder/openEventStream(headers:)``). A handler
    /// that returns a response afterwards should return ``HTTPServerResponse/streamOpened``; the
    /// returned value is ignored.
    ///
    /// ```swift
    /// router.get("/events") { request, context in
    ///     let stream = context.openEventStream()
    ///     broadcaster.add(stream)
    ///     return .streamOpened
    /// }
    /// ```
    public func openEventStream(headers: HTTPFields = [:]) -> EventStream {
        responder.openEventStream(headers: headers)
    }

    /// Runs `body` in a task and answers with its response (or the error it throws); returns
    /// ``HTTPServerResponse/deferred`` for the handler to return.
    ///
    /// ```swift
    /// router.get("/v1/scopes/{name}") { request, context in
    ///     context.answerAsync { try await store.load(context.parameters["name"]!) }
    /// }
    /// ```
    public func answerAsync(
        _ body: @escaping @Sendable () async throws -> HTTPServerResponse
    ) -> HTTPServerResponse {
        let context = self
        Task {
            do {
                let response = try await body()
                if !response.isDeferred, !context.responder.hasResponded { context.responder.respond(response) }
            } catch {
                context.responder.respond(Router.response(for: error, context: context))
            }
        }
        return .deferred
    }
}

/// Typed values carried by a request's context, keyed by their type.
///
/// ```swift
/// context.values[AccessGrant.self] = grant      // in middleware
/// let grant = context.values[AccessGrant.self]  // in the handler
/// ```
public struct RequestValues: Sendable {
    private var storage: [ObjectIdentifier: any Sendable] = [:]

    public init() {}

    public subscript<Value: Sendable>(_ type: Value.Type) -> Value? {
        get { storage[ObjectIdentifier(type)] as? Value }
        set { storage[ObjectIdentifier(type)] = newValue }
    }
}
