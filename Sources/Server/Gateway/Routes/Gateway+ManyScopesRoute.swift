import HTTPServer
import HTTPTypes
import JetstreamModel
import ScopeEngine

extension Gateway {
    /// `GET /v1/events?scope=a&scope=b[&scope=NAME@V]`: one event stream for several scopes
    /// (``ManyScopesStream``), resumed from one opaque `Last-Event-ID` (``ManyScopesEventID``).
    func addManyScopesRoute(to router: inout Router) {
        let engine = self.engine
        let access = self.access
        let retry = SSEFrame.retry(milliseconds: retryMilliseconds)
        router.get("/v1/events", middleware: [gate(.anyClient, passingGrant: true)]) { request, context in
            let grant = context.values[AccessGrant.self] ?? access.policy.auth.anonymousGrant
            let prepared = Result { () throws(Problem) -> [(handle: ScopeHandle, point: ResumePoint)] in
                if let accept = request.headerFields[.accept], !Self.acceptsEventStream(accept) {
                    throw Problem(.notAcceptable, detail: "this resource is text/event-stream; Accept is \(accept)")
                }
                if let refusal = Self.outageRefusal(engine) { throw refusal }
                let asked = try Self.scopesAsked(in: request, limit: access.policy.maxScopesPerStream)
                let lastEventID = request.headerFields[Self.lastEventID] ?? request.queryValue("lastEventId")
                let positions = lastEventID.flatMap(ManyScopesEventID.decode) ?? [:]
                return try asked.map { name, after throws(Problem) in
                    if let refusal = Self.readRefusal(grant, scope: name) { throw refusal }
                    guard let handle = engine.handle(named: name) else {
                        throw Problem(
                            .notFound, detail: "no scope named '\(name)'", extensions: ["scope": .string(name)])
                    }
                    let point: ResumePoint =
                        after.map { .after($0) }
                        ?? positions[ManyScopesEventID.key(of: name)].map { .after($0) } ?? .fresh
                    return (handle, point)
                }
            }
            switch prepared {
            case .failure(let problem):
                return problem.response
            case .success(let scopes):
                let client = access.client(of: request, peer: context.remoteAddress)
                if let refusal = access.admitStream(client: client) { return refusal.response }
                let stream = context.openEventStream()
                access.track(stream, client: client, grant: grant)
                stream.sendEncoded(retry)
                let many = ManyScopesStream(
                    stream: stream, names: scopes.map(\.handle.name),
                    resumedAt: scopes.map { scope in
                        if case .after(let version) = scope.point { return version } else { return nil }
                    })
                let members = many.members
                stream.onClose {
                    // Not under any scope's lock: the close may come from a write made under one.
                    Task {
                        for (member, scope) in zip(members, scopes) { engine.unsubscribe(member, from: scope.handle) }
                        many.release()
                    }
                }
                Self.subscribeInOrder(
                    zip(members, scopes).map { ($0, $1.handle, $1.point) }[...], engine: engine, then: many.start)
                return .streamOpened
            }
        }
    }

    /// Subscribes each member to its scope, the next one only once the one before is registered
    /// (a copy behind the shared store catches up first, later), then runs `then`: the snapshots
    /// go out in the order the scopes were asked for.
    static func subscribeInOrder(
        _ pending: ArraySlice<(ManyScopesStream.Member, ScopeHandle, ResumePoint)>, engine: ScopeEngine,
        then: @escaping @Sendable () -> Void
    ) {
        guard let (member, handle, point) = pending.first else { return then() }
        engine.subscribe(member, to: handle, from: point) {
            subscribeInOrder(pending.dropFirst(), engine: engine, then: then)
        }
    }

    /// The distinct scopes of `scope=` parameters, in order, each with the version a `NAME@V`
    /// asks to start after: `400` without one, beyond `limit`, or for a name or version that is
    /// not one (each problem naming the scope).
    static func scopesAsked(in request: HTTPServerRequest, limit: Int) throws(Problem) -> [(String, Int?)] {
        var asked: [(String, Int?)] = []
        var seen: Set<String> = []
        for value in request.queryValues("scope") {
            let parts = value.split(separator: "@", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(parts[0])
            do throws(ScopeError) {
                try ScopeName.validate(name)
            } catch {
                throw Problem(
                    .badRequest, detail: error.detail, extensions: ["scope": .string(String(name.prefix(140)))])
            }
            var after: Int?
            if parts.count == 2 {
                guard let version = Int(parts[1]), version >= 0 else {
                    throw Problem(
                        .badRequest,
                        detail: "scope=\(name)@\(parts[1].prefix(32)): the version after @ is not a version",
                        extensions: ["scope": .string(name)])
                }
                after = version
            }
            guard seen.insert(name).inserted else { continue }
            asked.append((name, after))
        }
        guard !asked.isEmpty else {
            throw Problem(.badRequest, detail: "name at least one scope: GET /v1/events?scope=NAME&scope=…")
        }
        guard asked.count <= limit else {
            throw Problem(
                .badRequest,
                detail: "\(asked.count) scopes asked; one stream carries at most \(limit) (--max-scopes-per-stream)")
        }
        return asked
    }

    /// The `401` or `403` for reading `scope` with `grant`, naming the scope; nil when allowed.
    static func readRefusal(_ grant: AccessGrant, scope: String) -> Problem? {
        guard !grant.allows(.read, scope: scope) else { return nil }
        guard grant.isAuthenticated else {
            return Problem(
                .unauthorized, detail: "read access to scope '\(scope)' needs a bearer token",
                extensions: ["scope": .string(scope)],
                headers: [ServerHeaders.wwwAuthenticate: #"Bearer realm="jetstream""#])
        }
        return Problem(
            .forbidden, detail: "the token may not read scope '\(scope)'", extensions: ["scope": .string(scope)],
            headers: [ServerHeaders.wwwAuthenticate: #"Bearer realm="jetstream", error="insufficient_scope""#])
    }
}
