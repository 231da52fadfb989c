import JetstreamJSON
import Testing

@testable import JetstreamClient

/// The pure parts of presence: the roster of the others (from `presence` events) and this client's
/// own announcements (generations, refresh at half the ttl) with a manual clock.
@Suite("Presence: the roster and own announcements")
struct PresenceStateTests {
    private func event(_ client: String, _ state: String, _ data: JSONValue? = nil, subject: String? = nil) -> JSONValue
    {
        var object: JSONObject = ["scope": "canvas-1", "client": .string(client)]
        object.appendUnchecked(key: "subject", value: subject.map(JSONValue.string) ?? .null)
        object.appendUnchecked(key: "state", value: .string(state))
        if let data { object.appendUnchecked(key: "data", value: data) }
        return .object(object)
    }

    @Test("join, update and leave; this client's own events are left out")
    func roster() {
        var roster = PresenceRoster(ownClient: "me")
        let changed1 = roster.apply(event("ada", "join", ["x": 1], subject: "ada@example"))
        #expect(changed1)
        let changed2 = roster.apply(event("bob", "join", ["x": 2]))
        #expect(changed2)
        let changed3 = roster.apply(event("me", "join", ["x": 3]))
        #expect(!changed3, "self is excluded")
        #expect(roster.members.map(\.client) == ["ada", "bob"])
        #expect(roster.members[0].subject == "ada@example" && roster.members[1].subject == nil)
        let changed4 = roster.apply(event("ada", "update", ["x": 10]))
        #expect(changed4)
        #expect(roster.members[0].data == ["x": 10])
        let changed5 = roster.apply(event("ada", "update", ["x": 10]))
        #expect(!changed5, "the same data again changes nothing")
        let changed6 = roster.apply(event("ada", "leave"))
        #expect(changed6)
        let changed7 = roster.apply(event("ada", "leave"))
        #expect(!changed7, "a leave of someone unknown changes nothing")
        #expect(roster.members.map(\.client) == ["bob"])
        let changed8 = roster.clear()
        #expect(changed8)
        let changed9 = roster.clear()
        #expect(!changed9)
        #expect(roster.members.isEmpty)
    }

    @Test("each set is sent once; a refresh is due half the ttl after an accepted PUT was sent")
    func refreshAtHalfTheTTL() {
        let ttl = Duration.seconds(30)
        var own = OwnPresence()
        #expect(own.next(at: .zero, ttl: ttl) == nil, "nothing set, nothing sent")
        let first = own.set(["x": 1])
        let second = own.set(["x": 2])
        #expect(first == 1 && second == 2)
        let put = try! #require(own.next(at: .zero, ttl: ttl))
        #expect(put.generation == 2 && put.data == ["x": 2], "only the newest data is sent")
        // Sent at 1 s, answered at 3 s: the server's ttl started between the two, so the refresh
        // counts from the send.
        own.answered(2, accepted: true, sentAt: .seconds(1), at: .seconds(3))
        #expect(own.next(at: .seconds(15), ttl: ttl) == nil)
        #expect(!own.isRefreshDue(at: .seconds(15), ttl: ttl))
        #expect(own.untilRefresh(at: .seconds(15), ttl: ttl) == .seconds(1))
        #expect(own.isRefreshDue(at: .seconds(16), ttl: ttl))
        #expect(own.next(at: .seconds(16), ttl: ttl)?.generation == 2, "a refresh sends the same data")
        own.answered(2, accepted: true, sentAt: .seconds(16), at: .seconds(16))
        #expect(!own.isRefreshDue(at: .seconds(30), ttl: ttl))
        #expect(own.isRefreshDue(at: .seconds(31), ttl: ttl))
    }

    @Test("a failed PUT is tried again after an eighth of the ttl (at least a second), not in a loop")
    func retryAfterFailure() {
        var own = OwnPresence()
        _ = own.set(["x": 1])
        own.answered(1, accepted: false, sentAt: .seconds(1), at: .seconds(2))
        #expect(own.next(at: .seconds(2), ttl: .seconds(4)) == nil, "answered: no loop")
        #expect(own.next(at: .seconds(2.9), ttl: .seconds(4)) == nil)
        #expect(own.next(at: .seconds(3), ttl: .seconds(4))?.generation == 1)
        own.answered(1, accepted: false, sentAt: .seconds(3), at: .seconds(3))
        #expect(own.next(at: .seconds(6), ttl: .seconds(40)) == nil)
        #expect(own.next(at: .seconds(8), ttl: .seconds(40)) != nil)
    }

    @Test("leave: a DELETE is due only when a PUT was answered; nothing is sent after it")
    func leave() {
        var own = OwnPresence()
        let neverAnnounced = own.leave()
        #expect(!neverAnnounced)
        _ = own.set(["x": 1])
        let notAnswered = own.leave()
        #expect(!notAnswered, "set but not answered yet")
        _ = own.set(["x": 1])
        own.answered(2, accepted: true, sentAt: .zero, at: .zero)
        let announced = own.leave()
        #expect(announced)
        #expect(own.next(at: .seconds(100), ttl: .seconds(30)) == nil)
    }
}
