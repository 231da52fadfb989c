import Foundation
import JetstreamJSON
import JetstreamModel

/// A local change set that was refused — by the server, or (``isLocal``) by the schema before it
/// was sent. Its effect is already gone from the scope when the handler sees it.
///
/// ```swift
/// sync.onRejected { rejection in
///     print(rejection.reasons)   // ["width: -5 is below min 0.0"]
/// }
/// ```
public struct Rejection: Error, Sendable, CustomStringConvertible {
    /// The HTTP status (422, 412, 409, 403, …); 422 for a local refusal.
    public let status: Int
    /// True when the client's own schema check refused the set; nothing was sent.
    public let isLocal: Bool
    /// The set's `Idempotency-Key` (nil for a local refusal).
    public let idempotencyKey: String?
    /// The fragments that were refused, as recorded.
    public let fragments: [SyncFragment]
    /// One reply per fragment: `.ok`, or the error that fragment got.
    public let replies: [FragmentReply]
    /// The server's problem `type` and `detail` (problem+json), when it answered one.
    public let problemType: String?
    public let detail: String?

    /// One readable line per failing fragment: "width: -5 is below min 0.0".
    public var reasons: [String] {
        let lines = replies.compactMap(\.error).map { error in
            (error.property.map { "\($0): " } ?? "") + error.message
        }
        return lines.isEmpty ? [detail ?? "HTTP \(status)"] : lines
    }

    public var description: String {
        "change set refused (\(status)\(isLocal ? ", checked locally" : "")): " + reasons.joined(separator: "; ")
    }

    init(local replies: [FragmentReply], fragments: [SyncFragment]) {
        status = 422
        isLocal = true
        idempotencyKey = nil
        self.fragments = fragments
        self.replies = replies
        problemType = "/problems/invalid-change-set"
        detail = "checked locally against the schema; nothing was sent"
    }

    /// A refusal from the server's problem+json body.
    init(status: Int, body: [UInt8], key: String, fragments: [SyncFragment]) {
        self.status = status
        isLocal = false
        idempotencyKey = key
        self.fragments = fragments
        let problem = try? JSONParser.parse(body)
        problemType = problem?["type"]?.string
        detail = problem?["detail"]?.string ?? problem?["title"]?.string
        replies = (problem?["fragmentReplies"]?.array ?? []).map(Self.reply(from:))
    }

    private static func reply(from json: JSONValue) -> FragmentReply {
        guard let error = json["error"], let type = error["type"]?.string else { return .ok }
        let kind = FragmentError.Kind(rawValue: type) ?? .malformedFragment
        return .error(FragmentError(kind, error["message"]?.string ?? type, property: error["property"]?.string))
    }
}
