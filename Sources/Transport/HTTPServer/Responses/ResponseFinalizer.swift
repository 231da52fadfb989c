import Glibc
import HTTPTypes
import SocketLoop

/// The one place a response is finished before any protocol encodes it (HTTP/1 and HTTP/2 both
/// call it): adds `Date` and `Server`. Content coding (gzip when the request accepts it) plugs in
/// here, so every protocol gets it; framing headers (`Content-Length`, `Connection`) are the
/// protocol encoder's business.
enum ResponseFinalizer {
    static func finalize(
        _ response: inout HTTPServerResponse, for request: HTTPServerRequest, core: ServerCore, date: DateCache
    ) {
        // Appended when absent: setting by name would search the fields a second time.
        if !response.head.headerFields.contains(.date) {
            response.head.headerFields.append(HTTPField(name: .date, value: date.current))
        }
        if let serverName = core.configuration.serverName, !response.head.headerFields.contains(.server) {
            response.head.headerFields.append(HTTPField(name: .server, value: serverName))
        }
        if let responseHeaders = core.configuration.responseHeaders {
            responseHeaders(request, &response.head.headerFields)
        }
        ResponseCompression.apply(to: &response, for: request)
    }

    /// Moves a body charged to the unsent-bytes budget (``HTTPResponder`` charged it) into the
    /// one ``SocketLoop/SharedBytes`` either protocol writes from, which keeps the charge until it
    /// is freed — once its last byte is written or the connection dropped it. Call it after
    /// ``finalize(_:for:core:date:)`` (a gzip'd body is smaller; the charge stays the larger size).
    /// A body that is not sent (HEAD, bodiless statuses) is left alone: the charge ends with the
    /// response.
    static func shareChargedBody(_ response: inout HTTPServerResponse, sendsBody: Bool) {
        guard sendsBody, let charge = response.unsentCharge, response.sharedBody == nil, !response.body.isEmpty
        else { return }
        response.sharedBody = SharedBytes(parts: [response.body]) { withExtendedLifetime(charge) {} }
        response.body = []
        response.unsentCharge = nil
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
