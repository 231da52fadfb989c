import HTTPServer
import HTTPTypes

/// Where a request's bearer token comes from: `Authorization: Bearer …`, else `?access_token=…`,
/// else the `jetstream_token` cookie (an `EventSource` can send neither headers nor, cross-site,
/// anything but cookies).
enum RequestToken {
    static let cookieName = "jetstream_token"

    enum Found: Equatable {
        case none
        case token(String)
        /// An `Authorization` header that is not a bearer token.
        case malformed(String)
    }

    static func find(in request: HTTPServerRequest) -> Found {
        if let authorization = request.headerFields.value(of: .authorization) {
            let parts = authorization.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
            guard parts.count == 2, parts[0].lowercased() == "bearer" else {
                return .malformed("the Authorization header must be 'Bearer <token>'")
            }
            return .token(String(parts[1]).trimmingSpaces)
        }
        if let query = request.queryValue("access_token"), !query.isEmpty { return .token(query) }
        if let token = cookie(named: cookieName, in: request.headerFields) { return .token(token) }
        return .none
    }

    static func cookie(named name: String, in fields: HTTPFields) -> String? {
        for header in fields[values: .cookie] {
            for pair in header.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                if parts.count == 2, String(parts[0]).trimmingSpaces == name {
                    let value = String(parts[1]).trimmingSpaces
                    if !value.isEmpty { return value }
                }
            }
        }
        return nil
    }
}
