import Foundation
import JetstreamModel
import PropertyBased
import Testing

/// Properties over random change sets (see ``ChangeSetGenerator``).
@Suite("Change-set properties")
struct ChangeSetPropertyTests {
    typealias F = Fixtures

    /// Up to 6 change sets of up to 10 ops each.
    static let scripts = Gen.int(in: 1...1_000_000).array(of: 1...10).array(of: 1...6)

    static func freshCanvas() -> ScopeState {
        ScopeState(rootUUID: F.uuid(1), rootClass: F.modelClass("Canvas"))
    }

    /// What a client receives: the fragments encoded to JSON bytes and parsed back.
    static func overTheWire(_ fragments: [SyncFragment]) throws -> [SyncFragment] {
        let bytes = JSONValue.array(fragments.map(\.jsonValue)).encoded()
        return try JSONParser.parse(bytes).array!.map { try SyncFragment(json: $0) }
    }

    @Test("export then import into an empty scope gives an equal state, byte for byte")
    func exportImportRoundTrip() async {
        await propertyCheck(count: 150, input: Self.scripts) { script in
            var state = Self.freshCanvas()
            for codes in script {
                let (fragments, _) = ChangeSetGenerator.changeSet(for: state, codes: codes)
                if case .accepted(let applied) = state.applying(fragments, schema: F.schema) { state = applied.state }
                let exported = try Self.overTheWire(state.exportFragments())
                let imported = try ScopeState(
                    importing: exported, rootUUID: state.rootUUID, version: state.version, schema: F.schema)
                #expect(imported == state)
                let encoded = state.stateJSON(name: "c").encoded()
                #expect(imported.stateJSON(name: "c").encoded() == encoded)
                var writer = JSONWriter()
                state.writeState(name: "c", to: &writer)
                #expect(writer.bytes == encoded)
                // Incremental reachability left nothing behind: every object is reachable from the root.
                #expect(state.preOrderUUIDs().count == state.count)
            }
        }
    }

    @Test("a client applying the normalised fragments of accepted sets ends in the server's state")
    func clientFollowsServer() async {
        await propertyCheck(count: 150, input: Self.scripts) { script in
            var server = Self.freshCanvas()
            var client = Self.freshCanvas()
            for codes in script {
                let (fragments, _) = ChangeSetGenerator.changeSet(for: server, codes: codes)
                guard case .accepted(let applied) = server.applying(fragments, schema: F.schema) else { continue }
                server = applied.state
                let received = try Self.overTheWire(applied.fragments)
                let mirrored = try #require(client.applying(received, schema: F.schema).applied)
                client = mirrored.state
                #expect(client == server)
                #expect(mirrored.removed == applied.removed)
                #expect(mirrored.fragments == applied.fragments)
            }
        }
    }

    @Test("a rejected set leaves the state byte for byte unchanged; a set with a bad value is rejected")
    func rejectedLeavesStateUnchanged() async {
        await propertyCheck(count: 150, input: Self.scripts) { script in
            var state = Self.freshCanvas()
            for codes in script {
                let (fragments, invalid) = ChangeSetGenerator.changeSet(for: state, codes: codes)
                let before = state.stateJSON(name: "c").encoded()
                let copy = state
                switch state.applying(fragments, schema: F.schema) {
                case .accepted(let applied):
                    #expect(!invalid)
                    #expect(applied.state.version == state.version + 1)
                    state = applied.state
                case .rejected(let replies):
                    #expect(replies.count == fragments.count)
                    #expect(replies.contains { $0.error != nil })
                    #expect(state.stateJSON(name: "c").encoded() == before)
                    #expect(state == copy)
                }
            }
        }
    }
}
