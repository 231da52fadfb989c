import HTTPTypes

/// The stable kinds of error the gateway answers with. Each is sent as an RFC 9457 problem whose
/// `type` is the relative URI `/problems/<rawValue>`; clients switch on it, never on `title`.
public enum ProblemKind: String, Sendable, CaseIterable {
    case badRequest = "bad-request"
    case invalidJSON = "invalid-json"
    case notFound = "not-found"
    case methodNotAllowed = "method-not-allowed"
    case requestTimeout = "request-timeout"
    case uriTooLong = "uri-too-long"
    case headersTooLarge = "headers-too-large"
    case expectationFailed = "expectation-failed"
    case notImplemented = "not-implemented"
    case httpVersionNotSupported = "http-version-not-supported"
    case scopeExists = "scope-exists"
    case invalidChangeSet = "invalid-change-set"
    case preconditionFailed = "precondition-failed"
    case idempotencyKeyReused = "idempotency-key-reused"
    case idempotencyKeyInFlight = "idempotency-key-in-flight"
    case idempotencyWindowPassed = "idempotency-window-passed"
    case historyGone = "history-gone"
    case versionNotFound = "version-not-found"
    case revertConflict = "revert-conflict"
    case unknownMethod = "unknown-method"
    case methodRejected = "method-rejected"
    case methodFailed = "method-failed"
    case methodTimeout = "method-timeout"
    case tooManyMembers = "too-many-members"
    case payloadTooLarge = "payload-too-large"
    case unsupportedMediaType = "unsupported-media-type"
    case notAcceptable = "not-acceptable"
    case slowConsumer = "slow-consumer"
    case notReady = "not-ready"
    case unauthorized = "unauthorized"
    case forbidden = "forbidden"
    case tokenExpired = "token-expired"
    case rateLimited = "rate-limited"
    case tooManyStreams = "too-many-streams"
    case tooManyFragments = "too-many-fragments"
    case storeUnavailable = "store-unavailable"
    /// The server holds as many request bodies or unsent responses as it allows (503 with
    /// `Retry-After`): nothing was done, retry shortly.
    case serverBusy = "server-busy"
    case `internal` = "internal"

    /// The `type` member: a relative URI, resolved against the gateway's own address.
    public var typeURI: String { "/problems/" + rawValue }

    /// The status this kind is answered with.
    public var status: HTTPResponse.Status {
        switch self {
        case .badRequest, .invalidJSON: .badRequest
        case .notFound: .notFound
        case .methodNotAllowed: .methodNotAllowed
        case .requestTimeout: .requestTimeout
        case .uriTooLong: .uriTooLong
        case .headersTooLarge: .requestHeaderFieldsTooLarge
        case .expectationFailed: .expectationFailed
        case .notImplemented: .notImplemented
        case .httpVersionNotSupported: HTTPResponse.Status(code: 505)
        case .scopeExists, .idempotencyKeyInFlight, .idempotencyWindowPassed: .conflict
        case .idempotencyKeyReused: .unprocessableContent
        case .invalidChangeSet: .unprocessableContent
        case .preconditionFailed: .preconditionFailed
        case .historyGone: .gone
        case .versionNotFound: .notFound
        case .revertConflict: .conflict
        case .unknownMethod: .notFound
        case .methodRejected: .unprocessableContent
        case .methodFailed: .badGateway
        case .methodTimeout: .gatewayTimeout
        case .payloadTooLarge: .contentTooLarge
        case .unsupportedMediaType: .unsupportedMediaType
        case .notAcceptable: .notAcceptable
        case .slowConsumer, .rateLimited, .tooManyStreams, .tooManyMembers: .tooManyRequests
        case .unauthorized, .tokenExpired: .unauthorized
        case .forbidden: .forbidden
        case .tooManyFragments: .contentTooLarge
        case .notReady, .storeUnavailable, .serverBusy: .serviceUnavailable
        case .internal: .internalServerError
        }
    }

    /// A short, fixed summary (RFC 9457 `title`).
    public var title: String {
        switch self {
        case .badRequest: "Bad request"
        case .invalidJSON: "The body is not valid JSON"
        case .notFound: "Not found"
        case .methodNotAllowed: "Method not allowed"
        case .requestTimeout: "The request was not received in time"
        case .uriTooLong: "The request target is too long"
        case .headersTooLarge: "The request headers are too large"
        case .expectationFailed: "Expectation not supported"
        case .notImplemented: "Not implemented"
        case .httpVersionNotSupported: "HTTP version not supported"
        case .scopeExists: "The scope already exists"
        case .invalidChangeSet: "Change set rejected"
        case .preconditionFailed: "The scope is not at the expected version"
        case .idempotencyKeyReused: "The idempotency key was used for another request"
        case .idempotencyKeyInFlight: "A request with this idempotency key is in flight"
        case .idempotencyWindowPassed: "Made before the idempotency window; it may have been applied"
        case .historyGone: "The requested history is no longer retained"
        case .versionNotFound: "No such version"
        case .revertConflict: "Later change sets build on this one"
        case .unknownMethod: "No such method"
        case .methodRejected: "The method refused the call"
        case .methodFailed: "The method failed"
        case .methodTimeout: "The method did not answer in time"
        case .tooManyMembers: "The scope's presence is full"
        case .payloadTooLarge: "The body is too large"
        case .unsupportedMediaType: "Unsupported media type"
        case .notAcceptable: "Not acceptable"
        case .slowConsumer: "Subscriber too slow"
        case .notReady: "Not ready"
        case .unauthorized: "Authentication required"
        case .forbidden: "Not allowed for this token"
        case .tokenExpired: "The token has expired"
        case .rateLimited: "Too many requests"
        case .tooManyStreams: "Too many event streams"
        case .tooManyFragments: "Too many fragments in one change set"
        case .storeUnavailable: "The store is unavailable"
        case .serverBusy: "The server is busy"
        case .internal: "Internal error"
        }
    }
}
