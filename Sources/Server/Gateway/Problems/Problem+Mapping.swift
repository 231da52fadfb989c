import HTTPServer
import HTTPTypes
import JetstreamModel
import ScopeEngine

extension Problem {
    /// The problem for an error the HTTP engine answers itself (malformed request, limits,
    /// timeouts, unknown route); install with ``HTTPServerConfiguration/errorResponse``.
    ///
    /// ```swift
    /// configuration.errorResponse = Problem.engineResponse
    /// ```
    public static func engineResponse(status: HTTPResponse.Status, reason: String) -> HTTPServerResponse {
        let kind: ProblemKind =
            switch status.code {
            case 404: .notFound
            case 405: .methodNotAllowed
            case 408: .requestTimeout
            case 413: .payloadTooLarge
            case 414: .uriTooLong
            case 415: .unsupportedMediaType
            case 417: .expectationFailed
            case 431: .headersTooLarge
            case 501: .notImplemented
            case 505: .httpVersionNotSupported
            // The engine answers 503 only at its bounds (request bodies, unsent responses).
            case 503: .serverBusy
            case 500...: .internal
            default: .badRequest
            }
        var response = Problem(kind, detail: reason).response
        // Keep the engine's status (e.g. a 400 variant) even where the kind maps to it loosely.
        response.head.status = status
        return response
    }

    /// `event: error` carrying the `slow-consumer` problem: the last event of a stream dropped for
    /// leaving more than `maxPendingBytes` unread; install with
    /// ``HTTPServerConfiguration/slowSubscriberEvent``. No `id`, so `Last-Event-ID` stays the last
    /// change set the client received.
    ///
    /// ```swift
    /// configuration.slowSubscriberEvent = Problem.slowSubscriberEvent(maxPendingBytes: 1 << 20)
    /// ```
    public static func slowSubscriberEvent(maxPendingBytes: Int) -> EncodedEvent {
        let problem = Problem(
            .slowConsumer,
            detail: "more than \(maxPendingBytes) bytes of events waited unread, so the stream ends; "
                + "reconnect with Last-Event-ID set to the last event id received to get the rest")
        return SSEFrame.error(problem)
    }

    /// The answer to an engine error: a stable `type`, the status, and what a client needs to
    /// fix it (per-fragment replies, the current version, the oldest version still retained).
    ///
    /// ```swift
    /// Problem(ScopeError.scopeNotFound("canvas-9")).response   // 404 not-found
    /// ```
    public init(_ error: ScopeError) {
        let detail = error.detail
        switch error {
        case .invalidName, .historyAhead:
            var extensions = JSONObject()
            if case .historyAhead(_, let current) = error { extensions["version"] = .number(JSONNumber(current)) }
            self.init(.badRequest, detail: detail, extensions: extensions)
        case .scopeNotFound, .noScopeRule:
            self.init(.notFound, detail: detail)
        case .scopeExists:
            self.init(.scopeExists, detail: detail)
        case .rootRejected(let reply):
            self.init(.invalidChangeSet, detail: detail, extensions: ["fragmentReplies": .array([reply.jsonValue])])
        case .changeSetRejected(let replies):
            self.init(
                .invalidChangeSet, detail: detail, extensions: ["fragmentReplies": .array(replies.map(\.jsonValue))])
        case .mergePatchRejected(let errors):
            self.init(.invalidChangeSet, detail: detail, extensions: ["errors": .array(errors.map(\.jsonValue))])
        case .objectNotFound:
            self.init(.notFound, detail: detail)
        case .emptyChangeSet:
            self.init(.invalidChangeSet, detail: detail, extensions: ["fragmentReplies": .array([])])
        case .tooManyFragments:
            self.init(.tooManyFragments, detail: detail)
        case .versionMismatch(let current):
            self.init(
                .preconditionFailed, detail: detail, extensions: ["version": .number(JSONNumber(current))],
                headers: [.eTag: EntityTag.header(for: current)])
        case .idempotencyKeyReused:
            self.init(.idempotencyKeyReused, detail: detail)
        case .idempotencyKeyInFlight:
            self.init(.idempotencyKeyInFlight, detail: detail, headers: [.retryAfter: "1"])
        case .idempotencyWindowPassed:
            self.init(.idempotencyWindowPassed, detail: detail)
        case .historyGone(_, _, let oldest, let current):
            self.init(
                .historyGone, detail: detail,
                extensions: [
                    "version": .number(JSONNumber(current)), "oldestVersion": .number(JSONNumber(oldest)),
                ])
        case .store:
            // Safe to retry (with the same Idempotency-Key): nothing was acknowledged.
            self.init(.storeUnavailable, detail: detail, headers: [.retryAfter: "1"])
        case .versionNotFound(_, _, let current):
            self.init(.versionNotFound, detail: detail, extensions: ["version": .number(JSONNumber(current))])
        case .versionGone(_, _, let oldest, let current):
            self.init(
                .historyGone, detail: detail,
                extensions: [
                    "version": .number(JSONNumber(current)), "oldestVersion": .number(JSONNumber(oldest)),
                ])
        case .revertConflict(_, _, let conflicts):
            let listed: [JSONValue] = conflicts.map { conflict in
                [
                    "uuid": .string(conflict.uuid.wireString),
                    "property": conflict.property.map(JSONValue.string) ?? .null,
                    "version": .number(JSONNumber(conflict.version)),
                ]
            }
            self.init(.revertConflict, detail: detail, extensions: ["conflicts": .array(listed)])
        case .revertOutdated:
            self.init(.serverBusy, detail: detail, headers: [.retryAfter: "1"])
        case .presenceNotYours:
            self.init(.forbidden, detail: detail)
        case .presenceNotFound:
            self.init(.notFound, detail: detail)
        case .tooManyPresenceMembers:
            self.init(.tooManyMembers, detail: detail, headers: [.retryAfter: "5"])
        case .unknownMethod:
            self.init(.unknownMethod, detail: detail)
        case .methodRejected(let method, let reason):
            self.init(
                .methodRejected, detail: detail, extensions: ["method": .string(method), "reason": .string(reason)])
        case .methodFailed(let method, _):
            self.init(.methodFailed, detail: detail, extensions: ["method": .string(method)])
        case .methodTimedOut(let method, _):
            self.init(.methodTimeout, detail: detail, extensions: ["method": .string(method)])
        case .methodOutdated(let method, _):
            self.init(.serverBusy, detail: detail, extensions: ["method": .string(method)], headers: [.retryAfter: "1"])
        }
    }
}
