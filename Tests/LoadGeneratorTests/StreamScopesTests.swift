import Testing

@testable import LoadGenerator

/// Which scopes a subscriber's stream carries, and what the load generator reads from event data.
@Suite("StreamScopes and EventDataScanner")
struct StreamScopesTests {
    @Test("one scope a stream follows subscriber % count, as fan-out always has")
    func singleScope() {
        let layout = StreamScopes(count: 3, perStream: nil)
        #expect((0..<7).map { layout.scopes(of: $0) } == [[0], [1], [2], [0], [1], [2], [0]])
        #expect(layout.subscribersPerScope(7) == [3, 2, 2])
    }

    @Test("K scopes a stream: consecutive from i·K, wrapping, distinct; slots invert scopes")
    func manyScopes() {
        let layout = StreamScopes(count: 4, perStream: 3)
        #expect(layout.scopes(of: 0) == [0, 1, 2])
        #expect(layout.scopes(of: 1) == [3, 0, 1])
        #expect(layout.scopes(of: 5) == [3, 0, 1])
        for subscriber in 0..<20 {
            let scopes = layout.scopes(of: subscriber)
            #expect(Set(scopes).count == 3)
            for (slot, scope) in scopes.enumerated() { #expect(layout.slot(of: scope, for: subscriber) == slot) }
        }
        #expect(layout.subscribersPerScope(12) == [9, 9, 9, 9])
        #expect(StreamScopes(count: 10, perStream: 10).subscribersPerScope(1000) == Array(repeating: 1000, count: 10))
        let counts = StreamScopes(count: 5, perStream: 2).subscribersPerScope(7)
        #expect(counts.reduce(0, +) == 14)
    }

    @Test("a many-scope event's scope and version are read from its data")
    func scopeAndVersion() {
        let data = Array(#"{"scope":"canvas-7","version":42,"at":"…","fragments":[]}"#.utf8)
        #expect(
            EventDataScanner.string(after: EventDataScanner.scopeKey, in: data).map { Array($0) }
                == Array("canvas-7".utf8))
        #expect(EventDataScanner.integer(after: EventDataScanner.versionKey, in: data) == 42)
        #expect(EventDataScanner.integer(after: EventDataScanner.versionKey, in: Array(#"{"scope":"a"}"#.utf8)) == nil)
        #expect(
            EventDataScanner.string(after: EventDataScanner.scopeKey, in: Array(#"{"scope":"unterminated"#.utf8)) == nil
        )
    }

    @Test("the presence bench's mark is found in presence data and in a change set; anything else is no mark")
    func marks() {
        let presence = Array(
            #"{"scope":"c","client":"bench-3","state":"update","data":{"x":1,"mark":"pb-77-3-12"}}"#.utf8)
        #expect(EventDataScanner.mark(in: presence).map { [$0.run, $0.member, $0.sequence] } == [77, 3, 12])
        let changeSet = Array(#"{"version":9,"fragments":[{"properties":{"name":"pb-1-0-0"}}]}"#.utf8)
        #expect(EventDataScanner.mark(in: changeSet).map { [$0.run, $0.member, $0.sequence] } == [1, 0, 0])
        for other in [#"{"name":"pb-1-2"}"#, #"{"name":"pb-1-2-x"}"#, #"{"name":"pb-"}"#, #"{"state":"leave"}"#] {
            #expect(EventDataScanner.mark(in: Array(other.utf8)) == nil)
        }
    }
}
