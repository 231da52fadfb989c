import HTTPServer
import HTTPTypes
import JetstreamModel
import ScopeEngine

extension Gateway {
    func addChangeSetRoutes(to router: inout Router) {
        let engine = self.engine
        let metrics = self.metrics
        router.post(
            "/v1/scopes/{name}/changesets",
            middleware: [gate(.write, passingGrantWhenRequestHas: IdempotencyRequest.headerName)],
            admitBody: refusesBeforeBody(mediaTypes: ["application/json"], scopeMustExist: true)
        ) { request, context in
            let answer = Self.writeAnswer(to: context.responder, metrics: metrics)
            let prepared = Result {
                () throws(Problem) -> (ScopeHandle, ChangeSet, EntityTag.Condition?, IdempotencyKey?) in
                let handle = try Problem.mapping { () throws(ScopeError) in
                    try engine.existingHandle(context.parameters["name"] ?? "")
                }
                let ifMatch = try Self.ifMatch(of: request)
                let body = try Self.jsonObjectBody(request)
                guard let fragments = body["fragments"]?.array else {
                    throw Problem(
                        .badRequest, detail: #"the body must be {"fragments":[…]}, an object with a fragments array"#)
                }
                let idempotency = try IdempotencyRequest.key(
                    of: request, subject: context.values[AccessGrant.self]?.subject)
                return (handle, ChangeSet(json: fragments), ifMatch, idempotency)
            }
            switch prepared {
            case .failure(let problem):
                metrics.countRejected(problem.kind)
                return problem.response
            case .success(let (handle, changeSet, ifMatch, idempotency)):
                let origin = context.values[AccessGrant.self]?.changeOrigin ?? ChangeOrigin()
                if let idempotency {
                    engine.submitOnce(
                        changeSet, to: handle, ifMatch: ifMatch, idempotency: idempotency, origin: origin,
                        completion: answer)
                } else {
                    engine.submit(changeSet, to: handle, ifMatch: ifMatch, origin: origin, completion: answer)
                }
                return .deferred
            }
        }

        router.get("/v1/scopes/{name}/changesets", middleware: [gate(.read)]) { request, context in
            Self.answerAsync(context) { () async throws(Problem) in
                let name = context.parameters["name"] ?? ""
                let found = try Problem.mapping { () throws(ScopeError) in try engine.existingHandle(name) }
                guard let handle = await engine.current(found) else { throw Problem(ScopeError.scopeNotFound(name)) }
                guard request.queryValue("since") != nil else {
                    throw Problem(.badRequest, detail: "query parameter since=VERSION is required")
                }
                let maxPage = engine.configuration.maxHistoryPage
                let since = try Self.integerQuery(request, "since", fallback: nil, range: 0...Int.max)!
                let limit = try Self.integerQuery(request, "limit", fallback: min(1000, maxPage), range: 1...maxPage)!
                let page: HistoryPage
                do throws(ScopeError) {
                    page = try await engine.historyPage(of: handle, since: since, limit: limit)
                } catch {
                    throw Problem(error)
                }
                // Refused before it is built when it cannot be sent now (the server's own answer).
                if let busy = context.responder.refusalForUnsentBudget(bodyOf: page.byteCount) { return busy }
                return Self.json(page.encoded())
            }
        }
    }
}

extension Gateway {
    /// How a write (a change set or a merge patch) is answered once the engine decides it:
    /// `200` with the version's body and `ETag`, the mapped problem, or the stored first outcome.
    static func writeAnswer(
        to responder: HTTPResponder, metrics: GatewayMetrics
    ) -> @Sendable (SubmitOutcome) -> Void {
        { outcome in
            switch outcome {
            case .accepted(let body, let version):
                metrics.countAccepted()
                responder.respond(json(body, version: version))
            case .rejected(let error):
                let problem = Problem(error)
                metrics.countRejected(problem.kind)
                responder.respond(problem.response)
            case .replayed(let record):
                responder.respond(IdempotencyRequest.replay(record))
            }
        }
    }

    /// The `If-Match` precondition of a write: nil without one, `400` when it is not a list of
    /// strong entity tags.
    static func ifMatch(of request: HTTPServerRequest) throws(Problem) -> EntityTag.Condition? {
        guard let header = request.headerFields.value(of: .ifMatch) else { return nil }
        guard let condition = EntityTag.parse(header, allowWeak: false) else {
            throw Problem(.badRequest, detail: "If-Match \(header) is not a list of entity tags")
        }
        return condition
    }
}
