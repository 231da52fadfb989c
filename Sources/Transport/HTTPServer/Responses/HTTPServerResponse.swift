import HTTPTypes
import SocketLoop

/// A complete response: the swift-http-types head and the body. The engine adds the framing
/// (`Content-Length`, `Connection`) and `Date`; see `ResponseFinalizer`.
///
/// ```swift
/// HTTPServerResponse(status: .created, headerFields: [.location: "/v1/scopes/a"], body: [])
/// HTTPServerResponse.json(#"{"ok":true}"#)
/// ```
public struct HTTPServerResponse: Sendable {
    public var head: HTTPResponse
    public var body: [UInt8]
    /// A body made once and shared by every response that sends it (a scope's encoded state):
    /// when set, it is the body and ``body`` is ignored. HTTP/1.1 writes it to each connection
    /// without copying it, so a thousand clients that do not read a large state cost one copy of
    /// it, not a thousand. The engine does not compress it (make it compressed if it should be).
    ///
    /// ```swift
    /// var response = HTTPServerResponse.json([])
    /// response.sharedBody = cachedState      // a SharedBytes kept with the state's version
    /// ```
    public var sharedBody: SharedBytes?
    /// This body's share of the unsent-bytes budget (``HTTPServerConfiguration/maxUnsentBytes``),
    /// taken when the handler answered; freed with the buffer the body is written from.
    var unsentCharge: UnsentResponseBudget.Charge?
    /// Whether this is ``deferred``: the handler answers later through its responder.
    public private(set) var isDeferred = false

    public init(status: HTTPResponse.Status = .ok, headerFields: HTTPFields = [:], body: [UInt8] = []) {
        head = HTTPResponse(status: status, headerFields: headerFields)
        self.body = body
    }

    public var status: HTTPResponse.Status { head.status }

    /// The size of the body that is sent (``sharedBody`` when set).
    public var bodyCount: Int { sharedBody?.count ?? body.count }

    /// A `text/plain; charset=utf-8` response.
    public static func text(_ text: String, status: HTTPResponse.Status = .ok) -> HTTPServerResponse {
        HTTPServerResponse(
            status: status, headerFields: [.contentType: "text/plain; charset=utf-8"], body: Array(text.utf8))
    }

    /// An `application/json` response from encoded JSON text.
    public static func json(_ json: String, status: HTTPResponse.Status = .ok) -> HTTPServerResponse {
        .json(Array(json.utf8), status: status)
    }

    /// An `application/json` response from encoded JSON bytes.
    public static func json(_ json: [UInt8], status: HTTPResponse.Status = .ok) -> HTTPServerResponse {
        HTTPServerResponse(status: status, headerFields: [.contentType: "application/json"], body: json)
    }

    /// What a handler returns after opening an event stream with
    /// ``HTTPRequestContext/openEventStream(headers:)``: ignored, because the stream answered.
    public static var streamOpened: HTTPServerResponse { HTTPServerResponse(status: .ok) }

    /// What a handler or middleware returns when it answers later, through
    /// `context.responder`, from async code or another thread.
    public static var deferred: HTTPServerResponse {
        var response = HTTPServerResponse(status: .ok)
        response.isDeferred = true
        return response
    }
}

/// An error a handler throws to answer with a status and a plain-text message.
///
/// ```swift
/// guard let n = Int(text) else { throw HTTPError(.badRequest, "n must be an integer") }
/// ```
public struct HTTPError: Error, Sendable {
    public var status: HTTPResponse.Status
    public var message: String

    public init(_ status: HTTPResponse.Status, _ message: String = "") {
        self.status = status
        self.message = message
    }

    /// The response sent for this error.
    public var response: HTTPServerResponse {
        .text((message.isEmpty ? status.reasonPhrase : message) + "\n", status: status)
    }
}
