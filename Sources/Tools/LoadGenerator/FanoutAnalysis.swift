/// Joins what the subscribers saw with what the writers sent, after every loop has stopped.
struct FanoutAnalysis {
    let scopes: [ScopeFixture]
    let layout: StreamScopes
    let subscribers: Int
    let posts: [WriterGroup.Post]
    let groups: [SubscriberGroup]

    func fill(_ result: inout FanoutResult, writerErrors: [String: Int], expected: Int) {
        // When each accepted (scope, version) was sent.
        var sentAt = Array(repeating: [Int: UInt64](), count: scopes.count)
        for post in posts {
            result.sent += post.sent > 0 ? 1 : 0
            if post.status == 200, let version = post.version, post.answered >= post.sent {
                result.accepted += 1
                sentAt[post.scope][version] = post.sent
                result.postLatency.record(nanoseconds: post.answered - post.sent)
            }
        }
        result.failed = writerErrors
        result.expected = expected

        // The last version each stream got of each scope it carries.
        var lastVersion = Array(repeating: 0, count: subscribers * layout.width)
        var unique = 0
        var firstSend = UInt64.max
        for post in posts where post.sent > 0 { firstSend = min(firstSend, post.sent) }
        var lastArrival: UInt64 = 0
        for group in groups {
            for delivery in group.deliveries {
                let subscriber = Int(delivery.subscriber)
                let scope = Int(delivery.scope)
                let stream = subscriber * layout.width + layout.slot(of: scope, for: subscriber)
                let version = Int(delivery.version)
                guard let sent = sentAt[scope][version] else {
                    result.otherEvents["changeset not sent by this run", default: 0] += 1
                    continue
                }
                if version == lastVersion[stream] {
                    result.duplicate += 1
                    continue
                }
                if version < lastVersion[stream] {
                    result.outOfOrder += 1
                    continue
                }
                lastVersion[stream] = version
                unique += 1
                lastArrival = max(lastArrival, delivery.arrival)
                result.latency.record(nanoseconds: delivery.arrival > sent ? delivery.arrival - sent : 0)
            }
            for (type, count) in group.otherEvents { result.otherEvents[type, default: 0] += count }
            for (reason, count) in group.errors { result.streamErrors[reason, default: 0] += count }
        }
        result.received = unique
        result.missing = max(0, expected - unique)
        if firstSend != .max && lastArrival > firstSend {
            result.durationSeconds = Double(lastArrival - firstSend) / 1e9
        }
    }
}
