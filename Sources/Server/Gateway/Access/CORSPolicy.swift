import HTTPTypes

/// Which browser origins may call the API (`--cors-origin`, `--cors-credentials`) and the
/// decisions for preflight and actual requests. Off (no CORS headers) when no origin is listed.
/// `*` admits every origin but never together with credentials.
///
/// ```swift
/// var cors = CORSPolicy(allowedOrigins: ["https://app.example"], allowCredentials: true)
/// cors.allowOriginValue(for: "https://app.example")   // "https://app.example"
/// ```
public struct CORSPolicy: Sendable {
    public var allowedOrigins: [String]
    public var allowCredentials: Bool
    public var allowedMethods = ["GET", "HEAD", "PUT", "POST", "PATCH", "DELETE", "OPTIONS"]
    public var allowedHeaders = [
        "Authorization", "Content-Type", "If-Match", "If-None-Match", "Idempotency-Key", "Idempotency-Key-Created",
        "Last-Event-ID",
    ]
    public var exposedHeaders = ["ETag", "Location", "Idempotent-Replayed", "Retry-After", "WWW-Authenticate"]
    /// Seconds a browser may cache a preflight answer.
    public var maxAge = 600

    public init(allowedOrigins: [String] = [], allowCredentials: Bool = false) {
        self.allowedOrigins = allowedOrigins
        self.allowCredentials = allowCredentials
    }

    public struct InvalidPolicy: Error, CustomStringConvertible {
        public let description: String
    }

    public var isEnabled: Bool { !allowedOrigins.isEmpty }

    /// Refuses `*` with credentials: a browser would send cookies to every site's scripts.
    public func validate() throws(InvalidPolicy) {
        if allowCredentials, allowedOrigins.contains("*") {
            throw InvalidPolicy(description: "--cors-origin '*' cannot be combined with --cors-credentials")
        }
        if allowCredentials, allowedOrigins.isEmpty {
            throw InvalidPolicy(description: "--cors-credentials needs at least one --cors-origin")
        }
    }

    /// The `Access-Control-Allow-Origin` value for a request from `origin`, nil when refused.
    public func allowOriginValue(for origin: String) -> String? {
        if allowedOrigins.contains(origin) { return origin }
        if allowedOrigins.contains("*"), !allowCredentials { return "*" }
        return nil
    }

    public enum PreflightDecision: Equatable, Sendable {
        case allowed
        case refused(String)
    }

    /// Whether a preflight from `origin` asking for `method` and `requestHeaders` is admitted.
    public func preflight(origin: String, method: String, requestHeaders: String?) -> PreflightDecision {
        guard allowOriginValue(for: origin) != nil else { return .refused("origin \(origin) is not allowed") }
        guard allowedMethods.contains(method.uppercased()) else { return .refused("method \(method) is not allowed") }
        let allowed = Set(allowedHeaders.map { $0.lowercased() })
        for header in (requestHeaders ?? "").split(separator: ",") {
            let name = String(header).trimmingSpaces.lowercased()
            if !name.isEmpty, !allowed.contains(name) { return .refused("request header \(name) is not allowed") }
        }
        return .allowed
    }

    /// Adds the CORS fields of an actual (or preflight) response to a request from `origin`.
    public func apply(origin: String?, to fields: inout HTTPFields) {
        guard isEnabled else { return }
        fields.append(HTTPField(name: .vary, value: "Origin"))
        guard let origin, let value = allowOriginValue(for: origin) else { return }
        fields[ServerHeaders.allowOrigin] = value
        if allowCredentials { fields[ServerHeaders.allowCredentials] = "true" }
        fields[ServerHeaders.exposeHeaders] = exposedHeaders.joined(separator: ", ")
    }
}
