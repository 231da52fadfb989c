import HTTPServer
import HTTPTypes
import JetstreamJSON
import JetstreamModel
import ScopeEngine

extension Gateway {
    /// `POST /v1/scopes/{name}/methods/{method}` with `{"args": …}`: a registered server method
    /// run on the scope's latest state, its fragments applied as one change set
    /// (``ScopeEngine/call(_:args:claims:on:ifMatch:idempotency:origin:completion:)``;
    /// docs/methods.md).
    func addMethodRoutes(to router: inout Router) {
        let engine = self.engine
        let metrics = self.metrics
        let methods = self.methods
        let hooks = self.methodHooks

        router.post(
            "/v1/scopes/{name}/methods/{method}",
            middleware: [gate(.write, passingGrantWhenRequestHas: IdempotencyRequest.headerName)],
            admitBody: refusesBeforeBody(mediaTypes: ["application/json"], scopeMustExist: true)
        ) { request, context in
            let answer = Self.writeAnswer(to: context.responder, metrics: metrics)
            return Self.answerAsync(context) { () async throws(Problem) in
                let handle = try await Self.currentHandle(context, engine)
                let name = context.parameters["method"] ?? ""
                guard methods[name] != nil || hooks[name] != nil else { throw Problem(ScopeError.unknownMethod(name)) }
                let ifMatch = try Self.ifMatch(of: request)
                let body = request.body.isEmpty ? JSONObject() : try Self.jsonObjectBody(request)
                if let unknown = body.keys.first(where: { $0 != "args" }) {
                    throw Problem(
                        .badRequest,
                        detail: #"a method call's body is {"args": …} (any JSON); unknown member '"#
                            + "\(unknown.prefix(64))'")
                }
                let subject = context.values[AccessGrant.self]?.subject
                let idempotency = try IdempotencyRequest.key(of: request, subject: subject)
                let started = ContinuousClock.now
                let recorded: @Sendable (SubmitOutcome) -> Void = { outcome in
                    metrics.recordMethodCall(name, outcome: outcome, duration: ContinuousClock.now - started)
                    answer(outcome)
                }
                let args = body["args"] ?? .null
                let grant = context.values[AccessGrant.self]
                let origin = grant?.changeOrigin ?? ChangeOrigin()
                let claims = grant?.claims
                if let method = methods[name] {
                    engine.call(
                        method, args: args, claims: claims, on: handle, ifMatch: ifMatch, idempotency: idempotency,
                        origin: origin,
                        completion: recorded)
                } else if let hook = hooks[name] {
                    engine.call(
                        name, planning: { call in await hook.plan(call) }, args: args, claims: claims, on: handle,
                        ifMatch: ifMatch,
                        idempotency: idempotency, origin: origin, completion: recorded)
                }
                return .deferred
            }
        }
    }
}
