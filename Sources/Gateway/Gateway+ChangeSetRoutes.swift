import HTTPServer
import HTTPTypes
import JetstreamModel

extension Gateway {
    func addChangeSetRoutes(to router: inout Router) {
        let hub = self.hub
        let maxFragments = access.policy.maxFragments
        router.post("/v1/scopes/{name}/changesets", gate(.write)) { request, context, responder, _ in
            let prepared = Result {
                () throws(Problem) -> (ScopeHandle, ChangeSet, EntityTag.Condition?, IdempotencyRequest?) in
                let handle = try hub.existingHandle(context.parameters["name"] ?? "")
                var ifMatch: EntityTag.Condition?
                if let header = request.headerFields[.ifMatch] {
                    guard let condition = EntityTag.parse(header, allowWeak: false) else {
                        throw Problem(.badRequest, detail: "If-Match \(header) is not a list of entity tags")
                    }
                    ifMatch = condition
                }
                let body = try Self.jsonObjectBody(request)
                guard let fragments = body["fragments"]?.array else {
                    throw Problem(
                        .badRequest, detail: #"the body must be {"fragments":[…]}, an object with a fragments array"#)
                }
                guard !fragments.isEmpty else {
                    throw Problem(
                        .invalidChangeSet, detail: "a change set needs at least one fragment",
                        extensions: ["fragmentReplies": .array([])])
                }
                guard fragments.count <= maxFragments else {
                    throw Problem(
                        .tooManyFragments,
                        detail: "the change set has \(fragments.count) fragments; at most \(maxFragments) are accepted")
                }
                return (handle, ChangeSet(json: fragments), ifMatch, try IdempotencyRequest(request))
            }
            switch prepared {
            case .failure(let problem):
                hub.metrics.countRejected(problem.kind)
                responder.respond(problem.response)
            case .success(let (handle, changeSet, ifMatch, idempotency)):
                let answer: @Sendable (SubmitOutcome) -> Void = { outcome in
                    hub.metrics.count(outcome)
                    switch outcome {
                    case .accepted(let body, let version):
                        responder.respond(Self.json(body, version: version))
                    case .failed(let problem):
                        responder.respond(problem.response)
                    case .replayed(let record):
                        responder.respond(IdempotencyRequest.replay(record))
                    }
                }
                if let idempotency {
                    hub.submitOnce(
                        changeSet, to: handle, ifMatch: ifMatch, idempotency: idempotency, completion: answer)
                } else {
                    hub.submit(changeSet, to: handle, ifMatch: ifMatch, completion: answer)
                }
            }
        }

        router.get("/v1/scopes/{name}/changesets", gate(.read)) { request, context in
            await Self.answerAsync { () async throws(Problem) in
                let handle = try hub.existingHandle(context.parameters["name"] ?? "")
                guard request.queryValue("since") != nil else {
                    throw Problem(.badRequest, detail: "query parameter since=VERSION is required")
                }
                let since = try Self.integerQuery(request, "since", fallback: nil, range: 0...Int.max)!
                let limit = try Self.integerQuery(
                    request, "limit", fallback: min(1000, hub.configuration.maxHistoryPage),
                    range: 1...hub.configuration.maxHistoryPage)!
                return Self.json(try await hub.history(of: handle, since: since, limit: limit))
            }
        }
    }
}
