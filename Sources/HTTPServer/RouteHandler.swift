import HTTPTypes
import Logging

/// The three ways a route can answer.
enum RouteHandler: Sendable {
    /// Runs on the loop thread and returns at once (must not block).
    case immediate(@Sendable (HTTPServerRequest, HTTPRequestContext) throws -> HTTPServerResponse)
    /// Runs in a `Task`; the response goes back to the loop.
    case asynchronous(@Sendable (HTTPServerRequest, HTTPRequestContext) async throws -> HTTPServerResponse)
    /// Runs on the loop thread and answers through the responder, now or later from any thread.
    case responder(@Sendable (HTTPServerRequest, HTTPRequestContext, HTTPResponder) -> Void)

    func run(_ request: HTTPServerRequest, _ context: HTTPRequestContext) {
        let responder = context.responder
        switch self {
        case .immediate(let handler):
            do {
                let response = try handler(request, context)
                if !responder.hasResponded { responder.respond(response) }
            } catch {
                responder.respond(Self.response(for: error, context: context))
            }
        case .asynchronous(let handler):
            Task {
                do {
                    let response = try await handler(request, context)
                    if !responder.hasResponded { responder.respond(response) }
                } catch {
                    responder.respond(Self.response(for: error, context: context))
                }
            }
        case .responder(let handler):
            handler(request, context, responder)
        }
    }

    static func response(for error: any Error, context: HTTPRequestContext) -> HTTPServerResponse {
        if let error = error as? HTTPError {
            return context.responder.renderError(
                error.status, error.message.isEmpty ? error.status.reasonPhrase : error.message)
        }
        context.logger.error("handler failed", metadata: ["error": "\(error)"])
        return context.responder.renderError(.internalServerError, "the request could not be served")
    }
}
