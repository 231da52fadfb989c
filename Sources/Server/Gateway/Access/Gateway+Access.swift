import Foundation
import HTTPServer
import HTTPTypes

extension Gateway {
    /// What a route needs: read or write on the scope in its `{name}`, or only a client (the
    /// scope list, which filters by what the grant may read).
    enum Requirement: Sendable {
        case read, write, anyClient
    }

    /// The middleware a route's requirement puts in front of it (`middleware: [gate(.read)]`).
    /// `passingGrant`: the route reads the grant from `context.values[AccessGrant.self]` (setting
    /// it costs an allocation per request, so only routes that need it ask for it).
    func gate(_ requirement: Requirement, passingGrant: Bool = false) -> AccessMiddleware {
        AccessMiddleware(access: access, requirement: requirement, passesGrant: passingGrant ? .always : .never)
    }

    /// Like ``gate(_:passingGrant:)``, passing the grant only to requests that carry `header` or
    /// whose grant names a subject (the write routes need the grant for an `Idempotency-Key`, and
    /// the subject to record with the change set; an anonymous write skips the copy).
    func gate(_ requirement: Requirement, passingGrantWhenRequestHas header: HTTPField.Name) -> AccessMiddleware {
        AccessMiddleware(access: access, requirement: requirement, passesGrant: .whenRequestHas(header))
    }

    /// When the access middleware stores the grant in `context.values`.
    enum GrantPassing: Sendable {
        case never, always
        case whenRequestHas(HTTPField.Name)

        func applies(to request: HTTPServerRequest, grant: AccessGrant) -> Bool {
            switch self {
            case .never: false
            case .always: true
            case .whenRequestHas(let name): grant.subject != nil || request.headerFields.value(of: name) != nil
            }
        }
    }

    /// Authenticates, rate-limits and authorizes a request, then runs the route with its grant in
    /// `context.values[AccessGrant.self]`; answers 401, 403 or 429 otherwise. A token seen before
    /// is checked at once on the loop; a new one is verified in a task first.
    struct AccessMiddleware: RouterMiddleware {
        let access: AccessControl
        let requirement: Requirement
        let passesGrant: GrantPassing

        func handle(
            _ request: HTTPServerRequest, context: HTTPRequestContext, next: @escaping RouteHandler
        ) throws -> HTTPServerResponse {
            let access = self.access
            let requirement = self.requirement
            let passesGrant = self.passesGrant
            // Resolved only when a rate limit needs it: forwarded-header parsing per request costs.
            let client: @Sendable () -> String = { access.client(of: request, peer: context.remoteAddress) }
            let proceed: @Sendable (Result<AccessGrant, Problem>) throws -> HTTPServerResponse = { result in
                switch result.flatMap({ Gateway.admit($0, requirement, request, context, client, access) }) {
                case .success(let grant):
                    guard passesGrant.applies(to: request, grant: grant) else { return try next(request, context) }
                    var context = context
                    context.values[AccessGrant.self] = grant
                    return try next(request, context)
                case .failure(let problem):
                    // Bad tokens count against the client's address too, so guessing is rate-limited.
                    if problem.kind == .unauthorized,
                        let limited = Gateway.rateLimited(access, key: "addr:" + client())
                    {
                        return limited.response
                    }
                    return problem.response
                }
            }
            let anonymous = access.policy.auth.anonymousGrant
            switch RequestToken.find(in: request) {
            case .malformed(let reason):
                return try proceed(.failure(Gateway.unauthorized(invalidToken: reason)))
            case .none:
                return try proceed(.success(anonymous))
            case .token(let token):
                guard let verifier = access.verifier else { return try proceed(.success(anonymous)) }
                if let cached = verifier.cachedGrant(for: token) {
                    return try proceed(Gateway.grant(cached, anonymous: anonymous))
                }
                return context.answerAsync {
                    try proceed(Gateway.grant(await verifier.verify(token), anonymous: anonymous))
                }
            }
        }
    }

    fileprivate static func grant(
        _ verified: Result<AccessGrant, TokenVerifier.Failure>, anonymous: AccessGrant
    )
        -> Result<AccessGrant, Problem>
    {
        switch verified {
        case .success(let grant): .success(grant.adding(anonymous: anonymous))
        case .failure(.expired): .failure(unauthorized(invalidToken: "the token has expired", kind: .tokenExpired))
        case .failure(let failure): .failure(unauthorized(invalidToken: failure.description))
        }
    }

    fileprivate static func admit(
        _ grant: AccessGrant, _ requirement: Requirement, _ request: HTTPServerRequest, _ context: HTTPRequestContext,
        _ client: () -> String, _ access: AccessControl
    ) -> Result<AccessGrant, Problem> {
        if let limited = rateLimited(access, key: grant.subject.map { "sub:" + $0 } ?? "addr:" + client()) {
            return .failure(limited)
        }
        let permission: AccessGrant.Permission
        switch requirement {
        case .anyClient: return .success(grant)
        case .read: permission = .read
        case .write: permission = .write
        }
        let scope = context.parameters["name"] ?? ""
        guard grant.allows(permission, scope: scope) else {
            guard grant.isAuthenticated else {
                return .failure(
                    Problem(
                        .unauthorized, detail: "\(permission.rawValue) access to scope '\(scope)' needs a bearer token",
                        headers: [ServerHeaders.wwwAuthenticate: #"Bearer realm="jetstream""#]))
            }
            return .failure(
                Problem(
                    .forbidden, detail: "the token may not \(permission.rawValue) scope '\(scope)'",
                    headers: [
                        ServerHeaders.wwwAuthenticate: #"Bearer realm="jetstream", error="insufficient_scope""#
                    ]))
        }
        return .success(grant)
    }

    /// The 429 problem when `key` has no request left this second, nil when it may go on.
    fileprivate static func rateLimited(_ access: AccessControl, key: @autoclosure () -> String) -> Problem? {
        guard let limiter = access.rateLimiter, case .limited(let seconds) = limiter.take(key()) else { return nil }
        return Problem(
            .rateLimited, detail: "more than \(access.policy.rateLimit) requests a second; retry later",
            headers: [.retryAfter: String(seconds)])
    }

    static func unauthorized(invalidToken reason: String, kind: ProblemKind = .unauthorized) -> Problem {
        // By scalar: `replacingOccurrences` compares Characters, and a quote followed by a
        // combining mark is one Character, so it would stay and end the quoted string early.
        let quoted = String(String.UnicodeScalarView(reason.unicodeScalars.map { $0 == "\"" ? "'" : $0 }))
        return Problem(
            kind, detail: reason,
            headers: [
                ServerHeaders.wwwAuthenticate:
                    #"Bearer realm="jetstream", error="invalid_token", error_description="\#(quoted)""#
            ])
    }
}
