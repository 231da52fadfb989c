/// Open event streams, in total and per client, against `--max-streams` and
/// `--max-streams-per-client`; a value, so it is tested without sockets.
///
/// ```swift
/// var counter = StreamCounter(maxTotal: 10_000, maxPerClient: 100)
/// if counter.open(client: "203.0.113.9") == nil { /* stream admitted; close(client:) when it ends */ }
/// ```
public struct StreamCounter: Sendable {
    public enum Refusal: Equatable, Sendable {
        case total, perClient
    }

    public let maxTotal: Int
    public let maxPerClient: Int
    public private(set) var total = 0
    private var perClient: [String: Int] = [:]

    public init(maxTotal: Int, maxPerClient: Int) {
        self.maxTotal = maxTotal
        self.maxPerClient = maxPerClient
    }

    /// Admits a stream for `client`, or says which limit refuses it.
    public mutating func open(client: String) -> Refusal? {
        if total >= maxTotal { return .total }
        let current = perClient[client, default: 0]
        if current >= maxPerClient { return .perClient }
        perClient[client] = current + 1
        total += 1
        return nil
    }

    public mutating func close(client: String) {
        guard let current = perClient[client] else { return }
        perClient[client] = current > 1 ? current - 1 : nil
        total -= 1
    }

    public func count(for client: String) -> Int { perClient[client, default: 0] }
}
