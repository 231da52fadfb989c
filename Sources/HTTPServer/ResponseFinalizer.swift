import HTTPTypes

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
