import Foundation
import JetstreamModel
import ScopeEngine
import Store
import Testing

/// Change-set identity: a writer's `Idempotency-Key` travels with its version (answer, live event,
/// catch-up from the store), and keys are per authenticated subject.
@Suite struct ChangeSetIdentityTests {
    private func key(in bytes: [UInt8]) throws -> String? {
        try JSONParser.parse(bytes)["idempotencyKey"]?.string
    }

    @Test("a keyed change set carries its key in the answer, the live event and the stored event")
    func keyTravelsWithTheVersion() async throws {
        let fixture = try EngineFixture()
        defer {
            fixture.close()
            fixture.removeFiles()
        }
        let handle = try await fixture.createCanvas()
        let live = fixture.subscribe(to: handle, from: .after(0))

        let keyed = await fixture.submitOnce(
            EngineFixture.addShape(UUID(), x: 1, to: handle), to: handle, key: #"k-"quoted"\1"#)
        guard case .accepted(let body, 1) = keyed else {
            Issue.record("expected version 1, got \(keyed)")
            return
        }
        #expect(try key(in: body) == #"k-"quoted"\1"#)
        let answer = try JSONParser.parse(body)
        #expect(answer["fragmentReplies"]?.array?.count == 2)
        #expect(answer["fragments"]?.array?.count == 2)

        let plain = await fixture.submit(EngineFixture.addShape(UUID(), x: 2, to: handle), to: handle)
        guard case .accepted(let plainBody, 2) = plain else {
            Issue.record("expected version 2, got \(plain)")
            return
        }
        #expect(try key(in: plainBody) == nil)

        #expect(await live.waitFor(count: 2))
        #expect(live.changesetVersions == [1, 2])
        #expect(try key(in: live.events[0].payload) == #"k-"quoted"\1"#)
        #expect(try key(in: live.events[1].payload) == nil)
        // The event is the answer without the replies: the same key, fragments and removals.
        #expect(try JSONParser.parse(live.events[0].payload)["fragments"] == answer["fragments"])

        // A subscriber catching up after a restart reads the logged events: the key is kept.
        fixture.close()
        let restarted = try EngineFixture(directory: fixture.directory)
        defer { restarted.close() }
        try await restarted.engine.recover()
        let reloaded = try #require(restarted.engine.handle(named: "canvas-1"))
        let catchingUp = restarted.subscribe(to: reloaded, from: .after(0))
        #expect(await catchingUp.waitFor(count: 2))
        #expect(catchingUp.changesetVersions == [1, 2])
        #expect(try key(in: catchingUp.events[0].payload) == #"k-"quoted"\1"#)
        #expect(try key(in: catchingUp.events[1].payload) == nil)
    }

    @Test("keys are per subject: another subject's key never replays or blocks someone else's outcome")
    func keysArePerSubject() async throws {
        let fixture = try EngineFixture()
        defer {
            fixture.close()
            fixture.removeFiles()
        }
        let handle = try await fixture.createCanvas()
        let adaChange = EngineFixture.addShape(UUID(), x: 1, to: handle)
        let ada = await fixture.submitOnce(adaChange, to: handle, key: "K", subject: "ada")
        #expect(ada.version == 1)

        // Bob's request under the same key is a first request of his own (another body, too).
        let bob = await fixture.submitOnce(rename(handle, "bob's"), to: handle, key: "K", subject: "bob")
        #expect(bob.version == 2)
        // So is an anonymous one.
        let anonymous = await fixture.submitOnce(rename(handle, "anyone's"), to: handle, key: "K")
        #expect(anonymous.version == 3)

        // Ada's retry replays Ada's outcome, and carries her key.
        let retry = await fixture.submitOnce(adaChange, to: handle, key: "K", subject: "ada")
        guard case .replayed(let record) = retry else {
            Issue.record("expected Ada's replay, got \(retry)")
            return
        }
        #expect(record.version == 1)
        #expect(try key(in: record.response) == "K")
        // Bob reusing his key for another body is refused, naming the key he sent.
        let reused = await fixture.submitOnce(rename(handle, "other"), to: handle, key: "K", subject: "bob")
        guard case .idempotencyKeyReused("K") = reused.error else {
            Issue.record("expected idempotencyKeyReused(K), got \(reused)")
            return
        }
        #expect(handle.version == 3)
    }

    private func rename(_ handle: ScopeHandle, _ name: String) -> [JSONValue] {
        EngineFixture.rename(handle, to: name)
    }
}
