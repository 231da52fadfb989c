import Foundation
import JetstreamModel
import Synchronization
import Testing

@testable import ScopeEngine

/// A subscription that comes to register only after its subscriber is gone (a stream closed
/// while a cold copy caught up) is not made: nothing would ever remove it.
@Suite struct SubscriberLifetimeTests {
    final class Departed: ScopeSubscriber {
        let received = Mutex(0)
        func receive(_ event: ScopeEvent) { received.withLock { $0 += 1 } }
        func end() {}
        var hasLeft: Bool { true }
    }

    @Test("a subscriber that has left is not registered and receives nothing")
    func aDepartedSubscriberIsNotRegistered() async throws {
        let fixture = try EngineFixture()
        defer {
            fixture.close()
            fixture.removeFiles()
        }
        let handle = try await fixture.createCanvas()
        let departed = Departed()
        fixture.engine.subscribe(departed, to: handle, from: .fresh)
        #expect(handle.subscriberCount == 0)
        _ = await fixture.submit(EngineFixture.rename(handle, to: "after"), to: handle)
        #expect(departed.received.withLock { $0 } == 0)
        // One that has not left is, as before.
        let recorder = fixture.subscribe(to: handle, from: .fresh)
        #expect(handle.subscriberCount == 1)
        #expect(await recorder.waitFor(count: 1))
    }
}
