import HTTPServer
import HTTPTypes

extension Gateway {
    func addEventRoutes(to router: inout Router) {
        let hub = self.hub
        let access = self.access
        router.get("/v1/scopes/{name}/events", gate(.read)) { request, context, responder, grant in
            let prepared = Result { () throws(Problem) -> ScopeHandle in
                if let accept = request.headerFields[.accept], !Self.acceptsEventStream(accept) {
                    throw Problem(.notAcceptable, detail: "this resource is text/event-stream; Accept is \(accept)")
                }
                return try hub.existingHandle(context.parameters["name"] ?? "")
            }
            switch prepared {
            case .failure(let problem):
                responder.respond(problem.response)
            case .success(let handle):
                let lastEventID =
                    request.headerFields[HTTPField.Name("Last-Event-ID")!] ?? request.queryValue("lastEventId")
                let client = access.client(of: request, peer: context.remoteAddress)
                if let refusal = access.admitStream(client: client) {
                    responder.respond(refusal.response)
                    return
                }
                let stream = responder.openEventStream()
                access.track(stream, client: client, grant: grant)
                hub.subscribe(stream, to: handle, start: ScopeHub.streamStart(lastEventID: lastEventID))
            }
        }
    }

    static func acceptsEventStream(_ accept: String) -> Bool {
        accept.split(separator: ",").contains { range in
            let mediaType = range.split(separator: ";").first.map { String($0).trimmingSpaces.lowercased() } ?? ""
            return mediaType == "text/event-stream" || mediaType == "text/*" || mediaType == "*/*"
        }
    }
}
