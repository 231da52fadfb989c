/// Which scopes each subscriber's stream carries. Single-scope streams (`perStream` nil) follow
/// scope `subscriber % count` on `GET /v1/scopes/{name}/events`, as `fanout` always has; a
/// many-scope stream follows `perStream` consecutive scopes from `subscriber × perStream`
/// (wrapping) on one `GET /v1/events?scope=…`, so with `perStream` = `count` every stream carries
/// every scope, and the subscribers of a scope stay evenly spread.
///
/// ```swift
/// let layout = StreamScopes(count: 10, perStream: 4)
/// layout.scopes(of: 3)   // [2, 3, 4, 5]
/// ```
public struct StreamScopes: Sendable {
    /// Scopes in the run.
    public let count: Int
    /// Scopes on one `GET /v1/events` stream, or nil for one `GET /v1/scopes/{name}/events` each.
    public let perStream: Int?

    public init(count: Int, perStream: Int?) {
        precondition(count >= 1 && (perStream ?? 1) >= 1 && (perStream ?? 1) <= count)
        self.count = count
        self.perStream = perStream
    }

    /// Scopes one stream carries.
    public var width: Int { perStream ?? 1 }

    /// The scope in position `slot` (0 ..< ``width``) of `subscriber`'s stream.
    public func scope(of subscriber: Int, slot: Int) -> Int {
        (subscriber * width + slot) % count
    }

    /// The position of `scope` in `subscriber`'s stream; meaningful only for a scope it carries.
    public func slot(of scope: Int, for subscriber: Int) -> Int {
        ((scope - subscriber * width) % count + count) % count
    }

    public func scopes(of subscriber: Int) -> [Int] {
        (0..<width).map { scope(of: subscriber, slot: $0) }
    }

    /// How many of `subscribers` streams carry each scope.
    public func subscribersPerScope(_ subscribers: Int) -> [Int] {
        var counts = Array(repeating: 0, count: count)
        if width == 1 || width == count {
            // Every scope of a full stream, or one scope a stream: no need to walk them all.
            for scope in 0..<count {
                counts[scope] =
                    width == count ? subscribers : stride(from: scope, to: subscribers, by: count).underestimatedCount
            }
            return counts
        }
        for subscriber in 0..<subscribers {
            for slot in 0..<width { counts[scope(of: subscriber, slot: slot)] += 1 }
        }
        return counts
    }
}
