import HTTPServer
import HTTPTypes
import JetstreamModel

extension Problem {
    /// The problem for an error the HTTP engine answers itself (malformed request, limits,
    /// timeouts, unknown route); install with ``HTTPServerConfiguration/errorResponse``.
    ///
    /// ```swift
    /// configuration.errorResponse = Problem.engineResponse
    /// ```
    public static func engineResponse(status: HTTPResponse.Status, reason: String) -> HTTPServerResponse {
        let kind: ProblemKind =
            switch status.code {
            case 404: .notFound
            case 405: .methodNotAllowed
            case 408: .requestTimeout
            case 413: .payloadTooLarge
            case 414: .uriTooLong
            case 415: .unsupportedMediaType
            case 417: .expectationFailed
            case 431: .headersTooLarge
            case 501: .notImplemented
            case 505: .httpVersionNotSupported
            case 500...: .internal
            default: .badRequest
            }
        var response = Problem(kind, detail: reason).response
        // Keep the engine's status (e.g. a 400 variant) even where the kind maps to it loosely.
        response.head.status = status
        return response
    }

    /// `event: error` carrying the `slow-consumer` problem: the last event of a stream dropped for
    /// leaving more than `maxPendingBytes` unread; install with
    /// ``HTTPServerConfiguration/slowSubscriberEvent``. No `id`, so `Last-Event-ID` stays the last
    /// change set the client received.
    ///
    /// ```swift
    /// configuration.slowSubscriberEvent = Problem.slowSubscriberEvent(maxPendingBytes: 1 << 20)
    /// ```
    public static func slowSubscriberEvent(maxPendingBytes: Int) -> EncodedEvent {
        let problem = Problem(
            .slowConsumer,
            detail: "more than \(maxPendingBytes) bytes of events waited unread, so the stream ends; "
                + "reconnect with Last-Event-ID set to the last event id received to get the rest")
        return ScopeEvents.event("error", id: nil, json: JSONValue.object(problem.jsonObject).encoded())
    }
}
