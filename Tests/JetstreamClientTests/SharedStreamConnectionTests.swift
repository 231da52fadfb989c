import Testing

@testable import JetstreamClient

/// ``SharedStreamConnection``, the one stream of all a client's scopes, step by step with a manual
/// clock (each connection's lifetime is given): what each request asks for, where each scope starts,
/// and what each end decides.
@Suite("Shared stream connection: many scopes, one connection")
struct SharedStreamConnectionTests {
    /// Two scopes fetched at 4 and 9, connected, opened, with one changeset of canvas-1 (id m1).
    private func twoLive() -> SharedStreamConnection {
        var shared = SharedStreamConnection()
        shared.add("canvas-1", version: 4)
        shared.add("canvas-2", version: 9)
        _ = shared.connecting()
        shared.opened()
        shared.delivered("canvas-1", version: 5, isState: false, eventID: "m1")
        return shared
    }

    @Test("scopes fetched start after the version their GET gave; without any id there is no Last-Event-ID")
    func firstRequest() {
        var shared = SharedStreamConnection()
        let result1 = shared.add("canvas-1", version: 4)
        #expect(result1)
        let result2 = shared.add("canvas-2", version: 0)
        #expect(result2)
        let result3 = shared.add("canvas-1", version: 4)
        #expect(!result3, "a scope already there is not added twice")
        #expect(shared.connecting() == .init(query: ["canvas-1@4", "canvas-2@0"], lastEventID: nil))
        #expect(shared.status(of: "canvas-1") == .connecting)
        shared.opened()
        #expect(shared.status(of: "canvas-1") == .live && shared.status(of: "canvas-2") == .live)
    }

    @Test("once an id arrived, every scope of that connection resumes from it; a scope fetched later starts @V")
    func resumesFromTheLastID() {
        var shared = twoLive()
        #expect(shared.request == .init(query: ["canvas-1", "canvas-2"], lastEventID: "m1"))
        let result4 = shared.add("canvas-3", version: 2)
        #expect(result4, "the stream must be re-opened to carry it")
        #expect(shared.status(of: "canvas-3") == .connecting, "not live before a connection carries it")
        #expect(shared.status(of: "canvas-1") == .live)
        #expect(shared.ended(.changed, lasted: .milliseconds(10)) == .reconnectNow(refreshToken: false))
        #expect(shared.status(of: "canvas-1") == .live, "a re-opening the client chose is not a reconnection")
        #expect(shared.connecting() == .init(query: ["canvas-1", "canvas-2", "canvas-3@2"], lastEventID: "m1"))
        // The connection drops before any id: canvas-3 still starts @2.
        #expect(
            shared.ended(.stream(.dropped(needsFullState: false)), lasted: .seconds(1))
                == .backOff(attempt: 1, refreshToken: false))
        #expect(shared.status(of: "canvas-3") == .reconnecting(attempt: 1))
        #expect(shared.connecting() == .init(query: ["canvas-1", "canvas-2", "canvas-3@2"], lastEventID: "m1"))
        shared.opened()
        shared.delivered("canvas-2", version: 10, isState: false, eventID: "m2")
        #expect(shared.request == .init(query: ["canvas-1", "canvas-2", "canvas-3"], lastEventID: "m2"))
    }

    @Test("a second copy of a carried scope: behind the stream, it re-opens from the copy's version; else nothing")
    func secondCopy() {
        var shared = twoLive()
        let ahead = shared.add("canvas-1", version: 7)
        #expect(!ahead, "a copy ahead of the stream ignores the events it already has")
        let behind = shared.add("canvas-2", version: 3)
        #expect(behind)
        #expect(shared.ended(.changed, lasted: .seconds(1)) == .reconnectNow(refreshToken: false))
        #expect(shared.connecting() == .init(query: ["canvas-1", "canvas-2@3"], lastEventID: "m1"))
    }

    @Test("removing a carried scope re-opens without it; the last one leaves the stream idle")
    func removing() {
        var shared = twoLive()
        let result5 = shared.remove("canvas-2")
        #expect(result5)
        #expect(shared.ended(.changed, lasted: .seconds(5)) == .reconnectNow(refreshToken: false))
        #expect(shared.connecting() == .init(query: ["canvas-1"], lastEventID: "m1"))
        let result6 = shared.remove("canvas-9")
        #expect(!result6, "a scope not carried needs no re-opening")
        let result7 = shared.remove("canvas-1")
        #expect(result7)
        #expect(shared.isEmpty)
        #expect(shared.ended(.changed, lasted: .seconds(5)) == .idle)
    }

    @Test("a gap in one scope reconnects at once with that scope @ its confirmed version, the others from the id")
    func gapInOneScope() {
        var shared = twoLive()
        shared.delivered("canvas-2", version: 11, isState: false, eventID: "m2")
        #expect(shared.ended(.scope("canvas-2", .gap), lasted: .seconds(3)) == .reconnectNow(refreshToken: false))
        #expect(shared.connecting() == .init(query: ["canvas-1", "canvas-2@11"], lastEventID: "m2"))
    }

    @Test("an inconsistent scope asks for its full state: no Last-Event-ID, every other scope at its exact version")
    func fullStateForOneScope() {
        var shared = twoLive()
        #expect(
            shared.ended(.scope("canvas-2", .inconsistent), lasted: .seconds(3)) == .reconnectNow(refreshToken: false))
        #expect(shared.connecting() == .init(query: ["canvas-1@5", "canvas-2"], lastEventID: nil))
        shared.opened()
        // An id of the other scope does not give canvas-2 a position: it still waits for its snapshot.
        shared.delivered("canvas-1", version: 6, isState: false, eventID: "m3")
        #expect(shared.request == .init(query: ["canvas-1@6", "canvas-2"], lastEventID: nil))
        shared.delivered("canvas-2", version: 12, isState: true, eventID: "m4")
        #expect(shared.request == .init(query: ["canvas-1", "canvas-2"], lastEventID: "m4"))
    }

    @Test("an unreadable event of one scope backs off and asks for that scope's full state")
    func unreadableEvent() {
        var shared = twoLive()
        #expect(
            shared.ended(.scope("canvas-1", .dropped(needsFullState: true)), lasted: .seconds(3))
                == .backOff(attempt: 1, refreshToken: false))
        #expect(shared.request == .init(query: ["canvas-1", "canvas-2@9"], lastEventID: nil))
    }

    @Test("closing reconnects at once; at once again within a second backs off; a healthy minute starts over")
    func atOnceGuardAndBackoff() {
        var shared = twoLive()
        #expect(shared.ended(.stream(.closing), lasted: .seconds(30)) == .reconnectNow(refreshToken: false))
        #expect(shared.status(of: "canvas-1") == .reconnecting(attempt: 0))
        _ = shared.connecting()
        #expect(
            shared.ended(.stream(.closing), lasted: .milliseconds(200)) == .backOff(attempt: 1, refreshToken: false))
        _ = shared.connecting()
        #expect(
            shared.ended(.stream(.dropped(needsFullState: false)), lasted: .seconds(2))
                == .backOff(attempt: 2, refreshToken: false))
        _ = shared.connecting()
        shared.opened()
        #expect(shared.status(of: "canvas-2") == .live)
        #expect(
            shared.ended(.stream(.dropped(needsFullState: false)), lasted: .seconds(61))
                == .backOff(attempt: 1, refreshToken: false))
    }

    @Test("auth-expired and 401 ask for a new token and reconnect at once")
    func unauthorized() {
        var shared = twoLive()
        #expect(shared.ended(.stream(.unauthorized), lasted: .seconds(10)) == .reconnectNow(refreshToken: true))
        _ = shared.connecting()
        #expect(
            shared.ended(try! #require(SharedStreamConnection.End(openingStatus: 401, scope: nil)), lasted: .zero)
                == .backOff(attempt: 1, refreshToken: true))
    }

    @Test("a 404 or 403 naming one scope stops that scope only; a 403 naming none stops them all")
    func refusals() {
        var shared = twoLive()
        let gone = SharedStreamConnection.End(openingStatus: 404, scope: "canvas-2")
        #expect(gone == .scope("canvas-2", .deleted))
        #expect(shared.ended(gone!, lasted: .zero) == .reconnectNow(refreshToken: false))
        #expect(shared.members.map(\.name) == ["canvas-1"])
        let forbidden = SharedStreamConnection.End(openingStatus: 403, scope: "canvas-1")!
        #expect(shared.ended(forbidden, lasted: .zero) == .idle)

        var all = twoLive()
        let refused = SharedStreamConnection.End(openingStatus: 403, scope: nil)!
        guard case .stop(.forbidden) = all.ended(refused, lasted: .zero) else {
            Issue.record("a 403 naming no scope stops every scope")
            return
        }
        #expect(SharedStreamConnection.End(openingStatus: 200, scope: nil) == nil)
        #expect(SharedStreamConnection.End(openingStatus: 503, scope: nil) == .stream(.dropped(needsFullState: false)))
        #expect(SharedStreamConnection.End(openingStatus: 404, scope: nil) == .stream(.dropped(needsFullState: false)))
    }

    @Test("deleted ends one scope; the others stay")
    func deletedEvent() {
        var shared = twoLive()
        shared.deleted("canvas-1")
        #expect(shared.members.map(\.name) == ["canvas-2"])
        #expect(shared.status(of: "canvas-2") == .live)
        #expect(shared.request == .init(query: ["canvas-2"], lastEventID: "m1"))
    }

    @Test("the scope name of a query value")
    func names() {
        #expect(SharedEventStream.name(inQueryValue: "canvas-1@4") == "canvas-1")
        #expect(SharedEventStream.name(inQueryValue: "canvas-1") == "canvas-1")
    }
}
