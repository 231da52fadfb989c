import HTTPServer
import HTTPTypes
import JetstreamModel
import ScopeEngine

extension Gateway {
    /// Presence (docs/presence.md): `PUT`, `DELETE` and `GET` of `…/presence`. Reading a scope is
    /// enough to be present in it; a member is changed only by the subject that made it.
    func addPresenceRoutes(to router: inout Router) {
        let engine = self.engine
        router.put("/v1/scopes/{name}/presence/{client}", middleware: [gate(.read, passingGrant: true)]) {
            request, context in
            Self.answer { () throws(Problem) in
                let handle = try Problem.mapping { () throws(ScopeError) in
                    try engine.existingHandle(context.parameters["name"] ?? "")
                }
                let client = try Self.presenceClient(context)
                let ttl = try Self.integerQuery(request, "ttl", fallback: 30, range: 1...300)!
                guard request.body.count <= Self.maxPresenceBytes else {
                    throw Problem(
                        .payloadTooLarge,
                        detail: "presence data is \(request.body.count) bytes; at most \(Self.maxPresenceBytes)")
                }
                let data = try Self.jsonObjectBody(request)
                try Problem.mapping { () throws(ScopeError) in
                    try engine.setPresence(
                        of: client, in: handle, subject: context.values[AccessGrant.self]?.subject,
                        data: .object(data), ttl: .seconds(ttl))
                }
                return HTTPServerResponse(status: .noContent)
            }
        }

        router.delete("/v1/scopes/{name}/presence/{client}", middleware: [gate(.read, passingGrant: true)]) {
            _, context in
            Self.answer { () throws(Problem) in
                let handle = try Problem.mapping { () throws(ScopeError) in
                    try engine.existingHandle(context.parameters["name"] ?? "")
                }
                let client = try Self.presenceClient(context)
                try Problem.mapping { () throws(ScopeError) in
                    try engine.removePresence(
                        of: client, in: handle, subject: context.values[AccessGrant.self]?.subject)
                }
                return HTTPServerResponse(status: .noContent)
            }
        }

        router.get("/v1/scopes/{name}/presence", middleware: [gate(.read)]) { _, context in
            Self.answer { () throws(Problem) in
                let handle = try Problem.mapping { () throws(ScopeError) in
                    try engine.existingHandle(context.parameters["name"] ?? "")
                }
                return Self.json(engine.presenceJSON(in: handle))
            }
        }
    }

    /// The largest presence body, in bytes.
    static let maxPresenceBytes = 4096

    /// The `{client}` of a presence path: 1–64 characters of `[A-Za-z0-9._~-]`, else `400`.
    static func presenceClient(_ context: HTTPRequestContext) throws(Problem) -> String {
        let client = context.parameters["client"] ?? ""
        guard ScopeName.isToken(client, maxLength: 64) else {
            throw Problem(
                .badRequest,
                detail: "client id '\(client.prefix(80))' must be 1–64 characters of A–Z, a–z, 0–9, '.', '_', '~', '-'")
        }
        return client
    }
}
