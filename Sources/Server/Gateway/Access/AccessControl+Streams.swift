import Foundation
import HTTPServer
import HTTPTypes
import JetstreamModel
import Synchronization

extension AccessControl {
    /// Seconds a client refused for too many streams is asked to wait.
    static let streamRetryAfter = 5

    /// Counts a new stream of `client`, or the 429 problem when a stream limit refuses it.
    func admitStream(client: String) -> Problem? {
        let refusal = streams.withLock { $0.open(client: client) }
        guard let refusal else { return nil }
        let detail =
            switch refusal {
            case .total: "the server has \(policy.maxStreams) open event streams, its limit"
            case .perClient: "this client has \(policy.maxStreamsPerClient) open event streams, its limit"
            }
        return Problem(.tooManyStreams, detail: detail, headers: [.retryAfter: String(Self.streamRetryAfter)])
    }

    /// Uncounts the stream when it ends, and ends it at the token's expiry (`auth-expired`) or at
    /// the rotation age (`closing`), whichever comes first.
    func track(_ stream: EventStream, client: String, grant: AccessGrant) {
        stream.onClose { self.streams.withLock { $0.close(client: client) } }
        let now = ContinuousClock.now
        if let expiry = grant.expiresAt {
            let remaining = expiry.timeIntervalSinceNow
            let problem = Problem(
                .tokenExpired, detail: "the token expired; reconnect with a fresh token and Last-Event-ID")
            deadlines.schedule(
                stream, at: now + .milliseconds(Int64(max(0, remaining) * 1000)),
                finalEvent: SSEFrame.frame(
                    name: "auth-expired", id: nil, json: JSONValue.object(problem.jsonObject).encoded()))
        }
        if let maxAge = policy.streamMaxAge {
            deadlines.schedule(
                stream, at: now + maxAge,
                finalEvent: SSEFrame.frame(name: "closing", id: nil, json: Array(#"{"reason":"rotation"}"#.utf8)))
        }
    }
}
