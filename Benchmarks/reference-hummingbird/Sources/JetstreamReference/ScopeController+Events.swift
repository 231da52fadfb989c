import HTTPTypes
import Hummingbird
import ServiceLifecycle

extension ScopeController {
    /// `GET /v1/scopes/{name}/events`: retry, then a snapshot, a reset or the missed change sets,
    /// then live change sets until the client goes away, it falls too far behind, or the server
    /// shuts down.
    @Sendable func events(request: Request, context: BasicRequestContext) async throws -> Response {
        let scope = try scope(for: context)
        let lastEventID = request.headers[.lastEventID] ?? request.uri.queryParameters.get("lastEventId")
        let subscription = await scope.subscribe(lastEventID: lastEventID)
        let headers: HTTPFields = [
            .contentType: "text/event-stream", .cacheControl: "no-cache", .xAccelBuffering: "no",
        ]
        return Response(
            status: .ok, headers: headers,
            body: ResponseBody { writer in
                defer { subscription.cancel() }
                try await request.body.consumeWithInboundCloseHandler { _ in
                    try await writer.write(subscription.initial)
                    for try await frame in subscription.events.cancelOnGracefulShutdown() {
                        try await writer.write(frame)
                    }
                } onInboundClosed: {
                    // The client closed its side: end the stream so the loop above returns.
                    subscription.cancel()
                }
                try await writer.finish(nil)
            })
    }
}
