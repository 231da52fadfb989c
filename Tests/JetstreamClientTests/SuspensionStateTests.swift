import Testing

@testable import JetstreamClient

/// Suspension and the network coming back in the shared stream's state machine
/// (``SharedStreamConnection``), step by step with a manual clock (each connection's lifetime is
/// given), and ``NetworkPathChanges``, which tells a network that came back from any path update.
@Suite("Suspension and network changes: the stream's state machine")
struct SuspensionStateTests {
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

    /// Drops the connection `times` times in a row (each after `lasted`), reconnecting after each.
    private func drop(_ shared: inout SharedStreamConnection, times: Int) -> [SharedStreamConnection.Decision] {
        (0..<times).map { _ in
            let decision = shared.ended(.stream(.dropped(needsFullState: false)), lasted: .milliseconds(100))
            _ = shared.connecting()
            return decision
        }
    }

    @Test("a live stream suspended: its end is no failure, no connection follows; resume reconnects from the same id")
    func suspendWhileLive() {
        var shared = twoLive()
        let before = shared.request
        shared.suspend()
        #expect(shared.isSuspended)
        // The client cancels the connection: the end it sees is its own (or a drop it caused).
        #expect(shared.ended(.changed, lasted: .seconds(2)) == .suspended)
        #expect(shared.ended(.stream(.dropped(needsFullState: false)), lasted: .seconds(2)) == .suspended)
        #expect(shared.request == before, "the scopes start where they were: \(shared.request)")
        shared.suspend()
        #expect(shared.isSuspended, "suspending twice is suspending")

        shared.resume()
        #expect(!shared.isSuspended)
        #expect(shared.status(of: "canvas-1") == .reconnecting(attempt: 0), "not live until a stream opens")
        #expect(shared.connecting() == .init(query: ["canvas-1", "canvas-2"], lastEventID: "m1"))
        shared.opened()
        #expect(shared.status(of: "canvas-2") == .live)
        shared.resume()
        #expect(shared.status(of: "canvas-2") == .live, "resuming a client not suspended changes nothing")
    }

    @Test("suspended in a backoff: the backoff starts over at resume; the drops before count for nothing")
    func backoffStartsOverAtResume() {
        var shared = twoLive()
        let decisions = drop(&shared, times: 3)
        #expect(decisions.last == .backOff(attempt: 3, refreshToken: false))
        #expect(shared.status(of: "canvas-1") == .reconnecting(attempt: 3))
        shared.suspend()
        shared.resume()
        #expect(shared.status(of: "canvas-1") == .reconnecting(attempt: 0))
        _ = shared.connecting()
        #expect(
            shared.ended(.stream(.dropped(needsFullState: false)), lasted: .milliseconds(100))
                == .backOff(attempt: 1, refreshToken: false), "the first failure after a resume waits the least")
        // After a resume the first at-once end is not 'again within a second' of one before.
        _ = shared.connecting()
        shared.opened()
        shared.suspend()
        shared.resume()
        _ = shared.connecting()
        #expect(shared.ended(.stream(.closing), lasted: .milliseconds(10)) == .reconnectNow(refreshToken: false))
    }

    @Test("ends taken in while suspended still place the scopes: a gap starts @V, a disagreement with the full state")
    func endsWhileSuspended() {
        var shared = twoLive()
        shared.suspend()
        #expect(shared.ended(.scope("canvas-1", .gap), lasted: .seconds(1)) == .suspended)
        shared.resume()
        #expect(shared.connecting() == .init(query: ["canvas-1@5", "canvas-2"], lastEventID: "m1"))

        var other = twoLive()
        other.suspend()
        #expect(other.ended(.scope("canvas-2", .inconsistent), lasted: .seconds(1)) == .suspended)
        other.resume()
        #expect(other.connecting() == .init(query: ["canvas-1@5", "canvas-2"], lastEventID: nil))
    }

    @Test("what stops every scope stops them while suspended too; a refused scope leaves")
    func stopsWhileSuspended() {
        var shared = twoLive()
        shared.suspend()
        #expect(
            shared.ended(.scope("canvas-2", .deleted), lasted: .seconds(1)) == .suspended,
            "the other scope waits for the resume")
        #expect(shared.members.map(\.name) == ["canvas-1"])
        #expect(shared.ended(.stream(.forbidden("no")), lasted: .seconds(1)) == .stop(.forbidden("no")))
    }

    @Test("scopes added or removed while suspended: the connection at resume carries the list then")
    func membersWhileSuspended() {
        var shared = twoLive()
        shared.suspend()
        #expect(shared.ended(.changed, lasted: .seconds(1)) == .suspended)
        shared.add("canvas-3", version: 2)
        shared.remove("canvas-2")
        shared.resume()
        #expect(shared.connecting() == .init(query: ["canvas-1", "canvas-3@2"], lastEventID: "m1"))
        #expect(shared.status(of: "canvas-3") == .reconnecting(attempt: 0))
    }

    @Test("the network back cuts a backoff short and starts it over; live, suspended or idle it does nothing")
    func networkBack() {
        var shared = twoLive()
        let whileLive = shared.networkBecameAvailable()
        #expect(!whileLive, "a live stream waits for nothing")
        #expect(shared.ended(.stream(.closing), lasted: .seconds(30)) == .reconnectNow(refreshToken: false))
        let whileAtOnce = shared.networkBecameAvailable()
        #expect(!whileAtOnce, "a reconnection at once waits for nothing")
        _ = shared.connecting()
        let decisions = drop(&shared, times: 4)
        #expect(decisions.last == .backOff(attempt: 4, refreshToken: false))
        let inBackoff = shared.networkBecameAvailable()
        #expect(inBackoff)
        #expect(shared.status(of: "canvas-1") == .reconnecting(attempt: 0))
        let again = shared.networkBecameAvailable()
        #expect(!again, "the wait already ended")
        #expect(
            shared.ended(.stream(.dropped(needsFullState: false)), lasted: .milliseconds(100))
                == .backOff(attempt: 1, refreshToken: false), "the backoff started over")

        shared.suspend()
        let whileSuspended = shared.networkBecameAvailable()
        #expect(!whileSuspended, "a suspended client waits for its resume, not the network")
        #expect(shared.status(of: "canvas-1") == .reconnecting(attempt: 1))

        var idle = SharedStreamConnection()
        let withNoScope = idle.networkBecameAvailable()
        #expect(!withNoScope)
        idle.add("canvas-1", version: 0)
        _ = idle.connecting()
        #expect(
            idle.ended(.stream(.dropped(needsFullState: false)), lasted: .zero)
                == .backOff(attempt: 1, refreshToken: false))
        let neverOpened = idle.networkBecameAvailable()
        #expect(neverOpened, "a stream that never opened waits out its backoff too")
    }

    @Test("StreamConnection.startOver: a stream that never opened stays connecting; else reconnecting(0)")
    func startOver() {
        var connection = StreamConnection()
        connection.startOver()
        #expect(connection.status == .connecting)
        connection.opened()
        #expect(
            connection.ended(.dropped(needsFullState: false), lasted: .seconds(1))
                == .backOff(attempt: 1, refreshToken: false))
        #expect(
            connection.ended(.dropped(needsFullState: false), lasted: .seconds(1))
                == .backOff(attempt: 2, refreshToken: false))
        connection.startOver()
        #expect(connection.status == .reconnecting(attempt: 0))
        #expect(
            connection.ended(.dropped(needsFullState: false), lasted: .seconds(1))
                == .backOff(attempt: 1, refreshToken: false))
    }

    @Test("network path updates: only satisfied after unsatisfied is the network coming back")
    func pathChanges() {
        var changes = NetworkPathChanges()
        // Baseline; another satisfied path (Wi-Fi to cellular); gone; still gone; back; still there.
        let answers = [true, true, false, false, true, true].map { changes.update(satisfied: $0) }
        #expect(answers == [false, false, false, false, true, false])

        var offline = NetworkPathChanges()
        let startingOffline = [false, true].map { offline.update(satisfied: $0) }
        #expect(startingOffline == [false, true], "starting offline, then online: back")
    }
}
