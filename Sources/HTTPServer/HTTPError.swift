import HTTPTypes

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
