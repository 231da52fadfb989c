import HTTPServer
import HTTPTypes
import ScopeEngine

extension Gateway {
    func addEventRoutes(to router: inout Router) {
        let engine = self.engine
        let access = self.access
        let retry = SSEFrame.retry(milliseconds: retryMilliseconds)
        router.get("/v1/scopes/{name}/events", middleware: [gate(.read, passingGrant: true)]) { request, context in
            let prepared = Result { () throws(Problem) -> ScopeHandle in
                if let accept = request.headerFields[.accept], !Self.acceptsEventStream(accept) {
                    throw Problem(.notAcceptable, detail: "this resource is text/event-stream; Accept is \(accept)")
                }
                if let refusal = Self.outageRefusal(engine) { throw refusal }
                return try Problem.mapping { () throws(ScopeError) in
                    try engine.existingHandle(context.parameters["name"] ?? "")
                }
            }
            switch prepared {
            case .failure(let problem):
                return problem.response
            case .success(let handle):
                let lastEventID =
                    request.headerFields[Self.lastEventID] ?? request.queryValue("lastEventId")
                let client = access.client(of: request, peer: context.remoteAddress)
                if let refusal = access.admitStream(client: client) { return refusal.response }
                let stream = context.openEventStream()
                let grant = context.values[AccessGrant.self] ?? access.policy.auth.anonymousGrant
                access.track(stream, client: client, grant: grant)
                stream.sendEncoded(retry)
                engine.subscribe(StreamSubscriber(stream), to: handle, from: ResumePoint(lastEventID: lastEventID))
                return .streamOpened
            }
        }
    }

    static let lastEventID = HTTPField.Name("Last-Event-ID")!

    /// A node whose shared store stopped answering opens no stream: it could not publish a new
    /// version. The 503 sends the client elsewhere (the shipped proxy passes the request to the
    /// next node) or makes it back off.
    static func outageRefusal(_ engine: ScopeEngine) -> Problem? {
        guard let reason = engine.storeUnavailability else { return nil }
        return Problem(.storeUnavailable, detail: reason, headers: [.retryAfter: "1"])
    }

    static func acceptsEventStream(_ accept: String) -> Bool {
        accept.split(separator: ",").contains { range in
            let mediaType = range.split(separator: ";").first.map { String($0).trimmingSpaces.lowercased() } ?? ""
            return mediaType == "text/event-stream" || mediaType == "text/*" || mediaType == "*/*"
        }
    }
}
