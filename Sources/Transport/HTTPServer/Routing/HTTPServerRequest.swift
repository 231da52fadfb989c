import HTTPTypes

/// A complete request as handlers see it, whatever the protocol: the swift-http-types head and
/// the whole body.
///
/// ```swift
/// router.post("/echo") { request, context in
///     .text("\(request.method.rawValue) \(request.path) \(request.body.count) bytes")
/// }
/// ```
public struct HTTPServerRequest: Sendable {
    /// Method, path (the request target as sent) and header fields.
    public var head: HTTPRequest
    /// The decoded body (chunked framing removed).
    public var body: [UInt8]
    /// The protocol version as text: `HTTP/1.0`, `HTTP/1.1` or `HTTP/2`.
    public var version: String

    public init(head: HTTPRequest, body: [UInt8] = [], version: String = "HTTP/1.1") {
        self.head = head
        self.body = body
        self.version = version
    }

    public var method: HTTPRequest.Method { head.method }
    public var headerFields: HTTPFields { head.headerFields }

    /// The request target as sent, for example `/v1/scopes?after=a`.
    public var target: String { head.path ?? "/" }

    /// The path part of the target (no query), for example `/v1/scopes`.
    public var path: String {
        let target = self.target
        // UTF-8 scans: `?` is ASCII, and Character iteration is what a router pays per request.
        let pathPart = target.utf8.firstIndex(of: UInt8(ascii: "?")).map { String(target[..<$0]) } ?? target
        // Absolute-form (`http://host/path`) is routed by its path.
        if !pathPart.hasPrefix("/"), let schemeEnd = pathPart.firstRange(of: "://") {
            let rest = pathPart[schemeEnd.upperBound...]
            return rest.firstIndex(of: "/").map { String(rest[$0...]) } ?? "/"
        }
        return pathPart
    }

    /// The raw query string after `?`, if any.
    public var query: String? {
        let target = self.target
        guard let mark = target.utf8.firstIndex(of: UInt8(ascii: "?")) else { return nil }
        return String(target[target.utf8.index(after: mark)...])
    }

    /// The first value of query parameter `name`, percent-decoded (`+` as space).
    public func queryValue(_ name: String) -> String? {
        guard let query else { return nil }
        for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            if PercentDecoding.decode(String(parts[0]), plusAsSpace: true) == name {
                return parts.count > 1 ? PercentDecoding.decode(String(parts[1]), plusAsSpace: true) : ""
            }
        }
        return nil
    }

    /// Every value of query parameter `name`, in order, percent-decoded (`scope=a&scope=b`).
    public func queryValues(_ name: String) -> [String] {
        guard let query else { return [] }
        return query.split(separator: "&", omittingEmptySubsequences: true).compactMap { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard PercentDecoding.decode(String(parts[0]), plusAsSpace: true) == name else { return nil }
            return parts.count > 1 ? PercentDecoding.decode(String(parts[1]), plusAsSpace: true) : ""
        }
    }
}
