import CLibPQ
import Store

#if canImport(Glibc)
import Glibc
#endif

/// Where the database is: the connection string as given (a `postgres://` URI or `key=value`
/// pairs, anything libpq takes) and, when it names a host by name, that host's address resolved
/// once at start — every later (re)connection passes it as `hostaddr`, so no thread ever blocks in
/// DNS while the gateway runs.
///
/// ```swift
/// let target = try PGTarget("postgres://jetstream@db.internal:5432/jetstream")
/// target.hostaddr   // "10.0.0.12"
/// ```
public struct PGTarget: Sendable, CustomStringConvertible {
    public let conninfo: String
    public let hostaddr: String?
    /// The target without its password, for logs and errors.
    public let description: String

    public init(_ conninfo: String) throws(StoreError) {
        var error: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(conninfo, &error) else {
            let message = error.map { String(cString: $0).trimmingTrailingWhitespace() } ?? "unparsable"
            error.map { PQfreemem($0) }
            throw .invalidArgument("database URL: \(message)")
        }
        defer { PQconninfoFree(options) }
        var values: [String: String] = [:]
        var option = options
        while let keyword = option.pointee.keyword {
            if let value = option.pointee.val { values[String(cString: keyword)] = String(cString: value) }
            option += 1
        }
        self.conninfo = conninfo
        let host = values["host"] ?? ""
        description =
            "host=\(host.isEmpty ? "(default)" : host) port=\(values["port"] ?? "5432") dbname=\(values["dbname"] ?? values["user"] ?? "")"
        if values["hostaddr"] == nil, !host.isEmpty, !host.contains(","), !host.hasPrefix("/"), !host.hasPrefix("@"),
            !Self.isNumericAddress(host)
        {
            hostaddr = try Self.resolve(host)
        } else {
            hostaddr = nil
        }
    }

    static func isNumericAddress(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }

    /// The first address of `host` (blocking DNS, at start only).
    static func resolve(_ host: String) throws(StoreError) -> String {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        guard status == 0, let first = list else {
            throw .invalidArgument("database host '\(host)' does not resolve: \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(list) }
        var buffer = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        guard
            getnameinfo(
                first.pointee.ai_addr, first.pointee.ai_addrlen, &buffer, socklen_t(buffer.count), nil, 0,
                NI_NUMERICHOST) == 0
        else { throw .invalidArgument("database host '\(host)' has no usable address") }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
