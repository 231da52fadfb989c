import Foundation
import HTTPServer
import HTTPTypes
import JetstreamModel
import ScopeEngine

extension Gateway {
    /// The past of a scope: an object's history, the difference between two versions, restore and
    /// revert (a read at a version is `GET /v1/scopes/{name}?version=N`, in the scope routes).
    func addPastRoutes(to router: inout Router) {
        let engine = self.engine
        let metrics = self.metrics

        router.get("/v1/scopes/{name}/objects/{uuid}/history", middleware: [gate(.read)]) { request, context in
            Self.answerAsync(context) { () async throws(Problem) in
                let handle = try await Self.currentHandle(context, engine)
                let uuid = try Self.objectUUID(context)
                let limit = try Self.integerQuery(request, "limit", fallback: 100, range: 1...1000)!
                let before = try Self.integerQuery(request, "before", fallback: nil, range: 1...Int.max)
                do throws(ScopeError) {
                    return Self.json(try await engine.history(of: uuid, in: handle, before: before, limit: limit))
                } catch {
                    throw Problem(error)
                }
            }
        }

        router.get("/v1/scopes/{name}/diff", middleware: [gate(.read)]) { request, context in
            Self.answerAsync(context) { () async throws(Problem) in
                let handle = try await Self.currentHandle(context, engine)
                guard let from = try Self.integerQuery(request, "from", fallback: nil, range: 0...Int.max),
                    let to = try Self.integerQuery(request, "to", fallback: nil, range: 0...Int.max)
                else { throw Problem(.badRequest, detail: "query parameters from=VERSION and to=VERSION are required") }
                do throws(ScopeError) {
                    return Self.json(try await engine.difference(of: handle, from: from, to: to))
                } catch {
                    throw Problem(error)
                }
            }
        }

        router.post(
            "/v1/scopes/{name}/restore",
            middleware: [gate(.write, passingGrantWhenRequestHas: IdempotencyRequest.headerName)],
            admitBody: refusesBeforeBody(mediaTypes: ["application/json"], scopeMustExist: true)
        ) { request, context in
            let answer = Self.writeAnswer(to: context.responder, metrics: metrics)
            return Self.answerAsync(context) { () async throws(Problem) in
                let handle = try await Self.currentHandle(context, engine)
                let ifMatch = try Self.ifMatch(of: request)
                let body = try Self.jsonObjectBody(request)
                guard let version = body["version"]?.number?.int64Value.map(Int.init), version >= 0, body.count == 1
                else {
                    throw Problem(.badRequest, detail: #"the body must be {"version":N}, N a version of the scope"#)
                }
                let subject = context.values[AccessGrant.self]?.subject
                let idempotency = try IdempotencyRequest.key(of: request, subject: subject)
                engine.restore(
                    handle, to: version, ifMatch: ifMatch, idempotency: idempotency,
                    origin: ChangeOrigin(subject: subject), completion: answer)
                return .deferred
            }
        }

        router.post(
            "/v1/scopes/{name}/changesets/{version}/revert",
            middleware: [gate(.write, passingGrantWhenRequestHas: IdempotencyRequest.headerName)]
        ) { request, context in
            let answer = Self.writeAnswer(to: context.responder, metrics: metrics)
            return Self.answerAsync(context) { () async throws(Problem) in
                let handle = try await Self.currentHandle(context, engine)
                let text = context.parameters["version"] ?? ""
                guard let version = Int(text) else {
                    throw Problem(.badRequest, detail: "'\(text.prefix(32))' is not a change-set version")
                }
                guard version > 0 else {
                    // Version 0 is a creation, never a change set: nothing to revert.
                    throw Problem(
                        ScopeError.versionNotFound(scope: handle.name, version: version, current: handle.version))
                }
                guard request.body.isEmpty || (try? JSONParser.parse(request.body))?.object?.isEmpty == true else {
                    throw Problem(.badRequest, detail: "a revert takes no body (or {})")
                }
                let ifMatch = try Self.ifMatch(of: request)
                let subject = context.values[AccessGrant.self]?.subject
                let idempotency = try IdempotencyRequest.key(of: request, subject: subject)
                engine.revert(
                    handle, changeSet: version, ifMatch: ifMatch, idempotency: idempotency,
                    origin: ChangeOrigin(subject: subject), completion: answer)
                return .deferred
            }
        }
    }

    /// The scope the route names, its copy brought up to the store's latest (``ScopeEngine/current(_:)``).
    static func currentHandle(_ context: HTTPRequestContext, _ engine: ScopeEngine) async throws(Problem) -> ScopeHandle
    {
        let name = context.parameters["name"] ?? ""
        let found = try Problem.mapping { () throws(ScopeError) in try engine.existingHandle(name) }
        guard let handle = await engine.current(found) else { throw Problem(ScopeError.scopeNotFound(name)) }
        return handle
    }
}
