import Foundation
import HTTPServer
import HTTPTypes
import JetstreamModel
import ScopeEngine

extension Gateway {
    /// The largest `?depth=` expansion answered; beyond it `400`, as the work grows with it.
    static let maxObjectExpansionBytes = 8 << 20

    /// One object by UUID: `GET …/objects/{uuid}?depth=N` reads it (references expanded N levels
    /// deep), `PATCH …/objects/{uuid}` merges a JSON merge patch into it as one change set.
    func addObjectRoutes(to router: inout Router) {
        let engine = self.engine
        let metrics = self.metrics

        router.get("/v1/scopes/{name}/objects/{uuid}", middleware: [gate(.read)]) { request, context in
            Self.answerOnCurrentCopy(of: context.parameters["name"] ?? "", engine: engine, context: context) {
                handle throws(Problem) in
                let uuid = try Self.objectUUID(context)
                let depth = try Self.integerQuery(request, "depth", fallback: 0, range: 0...64)!
                let state = handle.committedState
                let object: JSONValue?
                do throws(ScopeState.ExpansionError) {
                    object = try state.objectJSON(uuid, depth: depth, maxBytes: Self.maxObjectExpansionBytes)
                } catch {
                    throw Problem(
                        .badRequest,
                        detail: "the object expanded to depth \(depth) exceeds \(Self.maxObjectExpansionBytes) bytes; "
                            + "ask for a smaller depth")
                }
                guard let object else { throw Problem(ScopeError.objectNotFound(scope: handle.name, uuid: uuid)) }
                return Self.json(object.encoded(), version: state.version)
            }
        }

        router.patch(
            "/v1/scopes/{name}/objects/{uuid}",
            middleware: [gate(.write, passingGrantWhenRequestHas: IdempotencyRequest.headerName)],
            admitBody: refusesBeforeBody(
                mediaTypes: ["application/merge-patch+json", "application/json"], scopeMustExist: true)
        ) { request, context in
            let answer = Self.writeAnswer(to: context.responder, metrics: metrics)
            let prepared = Result {
                () throws(Problem) -> (ScopeHandle, MergePatch, EntityTag.Condition?, IdempotencyKey?) in
                let handle = try Problem.mapping { () throws(ScopeError) in
                    try engine.existingHandle(context.parameters["name"] ?? "")
                }
                let uuid = try Self.objectUUID(context)
                let ifMatch = try Self.ifMatch(of: request)
                let document = try Self.mergePatchBody(request)
                let idempotency = try IdempotencyRequest.key(
                    of: request, subject: context.values[AccessGrant.self]?.subject)
                return (handle, MergePatch(target: uuid, document: document), ifMatch, idempotency)
            }
            switch prepared {
            case .failure(let problem):
                metrics.countRejected(problem.kind)
                return problem.response
            case .success(let (handle, patch, ifMatch, idempotency)):
                engine.submit(
                    patch, to: handle, ifMatch: ifMatch, idempotency: idempotency,
                    origin: context.values[AccessGrant.self]?.changeOrigin ?? ChangeOrigin(), completion: answer)
                return .deferred
            }
        }
    }

    static func objectUUID(_ context: HTTPRequestContext) throws(Problem) -> UUID {
        let text = context.parameters["uuid"] ?? ""
        guard let uuid = UUID(wireString: text) else {
            throw Problem(.badRequest, detail: "'\(text.prefix(64))' is not a UUID")
        }
        return uuid
    }

    /// The JSON of a merge patch: `application/merge-patch+json` (RFC 7396) or `application/json`.
    static func mergePatchBody(_ request: HTTPServerRequest) throws(Problem) -> JSONValue {
        guard ["application/merge-patch+json", "application/json"].contains(mediaType(of: request)) else {
            let contentType = request.headerFields.value(of: .contentType) ?? ""
            throw Problem(
                .unsupportedMediaType,
                detail: (contentType.isEmpty ? "no Content-Type" : "Content-Type \(contentType) is not supported")
                    + ": send the patch as application/merge-patch+json (or application/json)")
        }
        return try jsonBody(request)
    }
}
