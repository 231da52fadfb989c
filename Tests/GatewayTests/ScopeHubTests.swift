import Foundation
import JetstreamModel
import Store
import Synchronization
import Testing

@testable import Gateway

@Suite("ScopeHub over a real SQLite store")
struct ScopeHubTests {
    @Test("a created scope starts at version 0 with its root; the name cannot be created twice")
    func create() async throws {
        let fixture = try GatewayFixture()
        defer {
            fixture.close()
            fixture.removeFiles()
        }
        let handle = try await fixture.createCanvas()
        #expect(handle.committedState.version == 0)
        #expect(handle.rootClass == "Canvas")
        await #expect(throws: Problem.self) { try await fixture.createCanvas() }
        do {
            _ = try await fixture.hub.create(name: "canvas-2", rootClassName: "Shape", rootUUID: nil, properties: [:])
            Issue.record("a Shape root was accepted for a canvas scope")
        } catch {
            #expect(error.kind == .invalidChangeSet)
        }
        do {
            _ = try await fixture.hub.create(name: "nomatch", rootClassName: "Canvas", rootUUID: nil, properties: [:])
            Issue.record("a name without a scope rule was accepted")
        } catch {
            #expect(error.kind == .notFound)
        }
    }

    @Test("an accepted change set becomes the next durable version; a rejected one changes nothing")
    func acceptAndReject() async throws {
        let fixture = try GatewayFixture()
        defer {
            fixture.close()
            fixture.removeFiles()
        }
        let handle = try await fixture.createCanvas()
        let accepted = await fixture.submit(GatewayFixture.addShape(UUID(), x: 1, to: handle), to: handle)
        #expect(accepted.version == 1)
        #expect(handle.committedState.count == 2)

        let before = handle.stateJSON().json
        let bad: [JSONValue] = [
            ["type": "add", "uuid": .string(UUID().wireString), "clsName": "Shape", "properties": ["x": "one"]]
        ]
        let rejected = await fixture.submit(bad, to: handle)
        #expect(rejected.problem?.kind == .invalidChangeSet)
        #expect(handle.stateJSON().json == before)
        #expect(handle.runtime.withLock { $0.tip.version } == 1)
    }

    @Test("If-Match must name the current version; 412 reports it")
    func ifMatch() async throws {
        let fixture = try GatewayFixture()
        defer {
            fixture.close()
            fixture.removeFiles()
        }
        let handle = try await fixture.createCanvas()
        let stale = await fixture.submit(
            GatewayFixture.addShape(UUID(), x: 1, to: handle), to: handle, ifMatch: .versions([7]))
        #expect(stale.problem?.kind == .preconditionFailed)
        #expect(stale.problem?.extensions["version"] == .number(JSONNumber(0)))
        let current = await fixture.submit(
            GatewayFixture.addShape(UUID(), x: 1, to: handle), to: handle, ifMatch: .versions([0]))
        #expect(current.version == 1)
    }

    @Test("concurrent writers of one scope get contiguous versions, none lost")
    func concurrentWriters() async throws {
        let fixture = try GatewayFixture()
        defer {
            fixture.close()
            fixture.removeFiles()
        }
        let handle = try await fixture.createCanvas()
        let rootUUID = handle.committedState.rootUUID.wireString
        let versions = await withTaskGroup(of: Int?.self) { group in
            for index in 0..<32 {
                group.addTask {
                    let change: [JSONValue] = [
                        [
                            "type": "change", "uuid": .string(rootUUID), "clsName": "Canvas",
                            "properties": ["name": .string("w\(index)")],
                        ]
                    ]
                    return await fixture.submit(change, to: handle).version
                }
            }
            var versions: [Int] = []
            for await version in group { if let version { versions.append(version) } }
            return versions
        }
        #expect(versions.sorted() == Array(1...32))
        #expect(handle.committedState.version == 32)
    }

    @Test("history comes from memory or from the store with the same bytes; too old is 410, ahead is 400")
    func history() async throws {
        var configuration = GatewayConfiguration(schema: .demo)
        configuration.resumeBufferSize = 2
        configuration.historyLimit = 3
        let fixture = try GatewayFixture(configuration: configuration)
        defer {
            fixture.close()
            fixture.removeFiles()
        }
        let handle = try await fixture.createCanvas()
        for index in 0..<5 {
            #expect(
                await fixture.submit(GatewayFixture.addShape(UUID(), x: Double(index), to: handle), to: handle).version
                    == index + 1)
        }
        let fromMemory = try await fixture.hub.history(of: handle, since: 3, limit: 10)
        let fromStore = try await fixture.hub.history(of: handle, since: 2, limit: 10)
        let memory = try JSONParser.parse(fromMemory)
        let store = try JSONParser.parse(fromStore)
        #expect(memory["version"] == .number(JSONNumber(5)))
        #expect(memory["changesets"]?.array?.count == 2)
        #expect(store["changesets"]?.array?.count == 3)
        #expect(store["changesets"]?.array?.suffix(2) == memory["changesets"]?.array?[...])
        let versions = store["changesets"]?.array?.compactMap { $0["version"] }
        #expect(versions == [.number(JSONNumber(3)), .number(JSONNumber(4)), .number(JSONNumber(5))])

        await #expect { try await fixture.hub.history(of: handle, since: 0, limit: 10) } throws: { error in
            (error as? Problem)?.kind == .historyGone
        }
        await #expect { try await fixture.hub.history(of: handle, since: 6, limit: 10) } throws: { error in
            (error as? Problem)?.kind == .badRequest
        }
        let empty = try JSONParser.parse(try await fixture.hub.history(of: handle, since: 5, limit: 10))
        #expect(empty["changesets"]?.array?.isEmpty == true)
    }

    @Test("a restart recovers every scope at its last version from snapshot + log tail")
    func recovery() async throws {
        var configuration = GatewayConfiguration(schema: .demo)
        configuration.snapshotInterval = 3
        let first = try GatewayFixture(configuration: configuration)
        defer { first.removeFiles() }
        let handle = try await first.createCanvas()
        let other = try await first.createCanvas("canvas-2")
        for index in 0..<7 {
            _ = await first.submit(GatewayFixture.addShape(UUID(), x: Double(index), to: handle), to: handle)
        }
        _ = await first.submit(GatewayFixture.addShape(UUID(), x: 9, to: other), to: other)
        let expected = handle.stateJSON().json
        let expectedOther = other.stateJSON().json
        first.close()

        let second = try GatewayFixture(configuration: configuration, directory: first.directory)
        defer { second.close() }
        let recovered = try await second.hub.recover()
        #expect(recovered.scopes == 2)
        let reloaded = try #require(second.hub.handle(named: "canvas-1"))
        #expect(reloaded.committedState.version == 7)
        #expect(reloaded.stateJSON().json == expected)
        #expect(try #require(second.hub.handle(named: "canvas-2")).stateJSON().json == expectedOther)
        // Recent change sets are resumable from memory right after the restart.
        let history = try JSONParser.parse(try await second.hub.history(of: reloaded, since: 5, limit: 10))
        #expect(history["changesets"]?.array?.count == 2)
    }

    @Test("a deleted name re-created continues its version numbering; old versions are too old")
    func deleteAndRecreate() async throws {
        let fixture = try GatewayFixture()
        defer {
            fixture.close()
            fixture.removeFiles()
        }
        let handle = try await fixture.createCanvas()
        _ = await fixture.submit(GatewayFixture.addShape(UUID(), x: 1, to: handle), to: handle)
        try await fixture.hub.delete(name: "canvas-1")
        #expect(fixture.hub.handle(named: "canvas-1") == nil)
        let late = await fixture.submit(GatewayFixture.addShape(UUID(), x: 2, to: handle), to: handle)
        #expect(late.problem?.kind == .notFound)

        let again = try await fixture.createCanvas()
        #expect(again.committedState.version == 2)
        await #expect { try await fixture.hub.history(of: again, since: 1, limit: 10) } throws: { error in
            (error as? Problem)?.kind == .historyGone
        }
    }
}
