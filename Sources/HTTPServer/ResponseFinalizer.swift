import Glibc
import HTTPTypes
import SocketLoop
import Synchronization

/// The one place a response is finished before any protocol encodes it (HTTP/1 and HTTP/2 both
/// call it): adds `Date` and `Server`. Content coding (gzip when the request accepts it) plugs in
/// here, so every protocol gets it; framing headers (`Content-Length`, `Connection`) are the
/// protocol encoder's business.
enum ResponseFinalizer {
    static func finalize(
        _ response: inout HTTPServerResponse, for request: HTTPServerRequest, core: ServerCore, date: DateCache
    ) {
        if !response.head.headerFields.contains(.date) {
            response.head.headerFields[.date] = date.current
        }
        if let serverName = core.configuration.serverName, !response.head.headerFields.contains(.server) {
            response.head.headerFields[.server] = serverName
        }
        if let responseHeaders = core.configuration.responseHeaders {
            responseHeaders(request, &response.head.headerFields)
        }
        ResponseCompression.apply(to: &response, for: request)
    }

    /// Per-request bodies at least this large are charged to
    /// ``HTTPServerConfiguration/maxUnsentBytes`` while unsent; smaller ones are bounded by the
    /// connection count (a socket's send buffer usually takes them at once).
    static let chargedBodySize = 16 * 1024

    /// Charges a large per-request body to the server's unsent-bytes budget
    /// (``HTTPServerConfiguration/maxUnsentBytes``) for as long as it exists: it becomes a
    /// ``SocketLoop/SharedBytes`` (the one copy either protocol writes) whose release returns the
    /// charge once the last byte is written or the connection dropped it. A body that does not fit
    /// is not kept: the response becomes 503 with `Retry-After`, and the refusal is logged and
    /// counted like one made before routing. Shared bodies (a cached state) are not charged; they
    /// exist once whoever reads them. `sendsBody` is false for HEAD and bodiless statuses.
    static func holdUnsent(
        _ response: inout HTTPServerResponse, sendsBody: Bool, core: ServerCore, connection: Connection
    ) {
        let count = response.body.count
        guard sendsBody, response.sharedBody == nil, count >= chargedBodySize else { return }
        let limit = core.configuration.maxUnsentBytes
        let total = core.unsentBytes.add(count, ordering: .relaxed).newValue
        if limit > 0, total > limit {
            core.unsentBytes.subtract(count, ordering: .relaxed)
            let reason = "unsent responses exceed --max-unsent-bytes; retry shortly"
            var busy = core.configuration.errorResponse(.serviceUnavailable, reason)
            busy.head.headerFields[.retryAfter] = "1"
            busy.head.headerFields[.date] = response.head.headerFields[.date]
            if let serverName = core.configuration.serverName { busy.head.headerFields[.server] = serverName }
            response = busy
            core.recordRejection(status: 503, reason: reason, bodyBytes: busy.bodyCount, connection: connection)
            return
        }
        response.sharedBody = SharedBytes(parts: [response.body]) { [core] in
            core.unsentBytes.subtract(count, ordering: .relaxed)
        }
        response.body = []
    }

    /// The same for the head of a streamed response (event streams).
    static func finalizeStreamHead(
        _ head: inout HTTPResponse, for request: HTTPServerRequest, core: ServerCore, date: DateCache
    ) {
        var response = HTTPServerResponse()
        response.head = head
        finalize(&response, for: request, core: core, date: date)
        head = response.head
    }
}

/// The `Date` header value (IMF-fixdate), formatted at most once per second per loop.
final class DateCache: @unchecked Sendable {
    // Used only on its own loop thread.
    private var second: time_t = -1
    private var value = ""

    var current: String {
        let now = time(nil)
        if now != second {
            second = now
            var parts = tm()
            var seconds = now
            gmtime_r(&seconds, &parts)
            var buffer = [CChar](repeating: 0, count: 64)
            let length = strftime(&buffer, buffer.count, "%a, %d %b %Y %H:%M:%S GMT", &parts)
            value = String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        return value
    }
}
