import HTTPServer
import HTTPTypes

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
}
