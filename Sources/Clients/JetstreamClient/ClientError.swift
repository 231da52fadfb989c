import JetstreamJSON

/// Why ``Client/fetch(_:createIfMissing:isolation:)`` could not start syncing.
public enum ClientError: Error, Sendable, CustomStringConvertible {
    /// The gateway has no scope of that name (and `createIfMissing` was not given).
    case notFound(String)
    /// `401`: no valid token.
    case unauthorized(String)
    /// `403`: the token does not allow this scope.
    case forbidden(String)
    /// Another status the client cannot go on from.
    case refused(status: Int, detail: String)
    /// The model classes and the server's schema disagree; one line per difference.
    case schemaMismatch([String])
    /// The server's state, or the local one, is not valid for the schema.
    case invalidState(String)
    /// No answer from the gateway.
    case unreachable(String)
    /// The client's storage (``ClientStorage``) failed: a file could not be written, or another
    /// sync holds the scope's stored copy.
    case storage(String)

    static func refused(status: Int, problem body: [UInt8]) -> ClientError {
        let problem = try? JSONParser.parse(body)
        let detail = problem?["detail"]?.string ?? problem?["title"]?.string ?? "HTTP \(status)"
        switch status {
        case 401: return .unauthorized(detail)
        case 403: return .forbidden(detail)
        case 404: return .notFound(detail)
        default: return .refused(status: status, detail: detail)
        }
    }

    public var description: String {
        switch self {
        case .notFound(let detail): "not found: \(detail)"
        case .unauthorized(let detail): "unauthorized: \(detail)"
        case .forbidden(let detail): "forbidden: \(detail)"
        case .refused(let status, let detail): "refused (\(status)): \(detail)"
        case .schemaMismatch(let problems):
            "the model does not match the server's schema: " + problems.joined(separator: "; ")
        case .invalidState(let detail): "invalid state: \(detail)"
        case .unreachable(let detail): "unreachable: \(detail)"
        case .storage(let detail): "storage: \(detail)"
        }
    }
}
