import Foundation
import JetstreamModel
import Store
import Synchronization
import Testing

@testable import ScopeEngine

@Suite("ScopeEngine over a real SQLite store")
struct ScopeEngineTests {
    @Test("a created scope starts at version 0 with its root; the name cannot be created twice")
    func create() async throws {
        let fixture = try EngineFixture()
        defer {
            fixture.close()
            fixture.removeFiles()
        }
        let handle = try await fixture.createCanvas()
        #expect(handle.committedState.version == 0)
        #expect(handle.rootClass == "Canvas")
        do {
            _ = try await fixture.createCanvas()
            Issue.record("a second scope of the same name was created")
        } catch {
            guard case .scopeExists("canvas-1") = error as? ScopeError else {
                Issue.record("expected scopeExists, got \(error)")
                return
            }
        }
        do {
            _ = try await fixture.engine.create(
                name: "canvas-2", rootClassName: "Shape", rootUUID: nil, properties: [:])
            Issue.record("a Shape root was accepted for a canvas scope")
        } catch {
            guard case .rootRejected = error else {
                Issue.record("expected rootRejected, got \(error)")
                return
            }
        }
        #expect(fixture.engine.handle(named: "canvas-2") == nil)
        do {
            _ = try await fixture.engine.create(
                name: "nomatch", rootClassName: "Canvas", rootUUID: nil, properties: [:])
            Issue.record("a name without a scope rule was accepted")
        } catch {
            guard case .noScopeRule("nomatch") = error else {
                Issue.record("expected noScopeRule, got \(error)")
                return
            }
        }
    }

    @Test("an accepted change set becomes the next durable version; a rejected one changes nothing")
    func acceptAndReject() async throws {
        let fixture = try EngineFixture()
        defer {
            fixture.close()
            fixture.removeFiles()
        }
        let handle = try await fixture.createCanvas()
        let accepted = await fixture.submit(EngineFixture.addShape(UUID(), x: 1, to: handle), to: handle)
        #expect(accepted.version == 1)
        #expect(handle.committedState.count == 2)

        let before = handle.encodedState().json
        let bad: [JSONValue] = [
            ["type": "add", "uuid": .string(UUID().wireString), "clsName": "Shape", "properties": ["x": "one"]]
        ]
        let rejected = await fixture.submit(bad, to: handle)
        guard case .changeSetRejected(let replies) = rejected.error else {
            Issue.record("expected changeSetRejected, got \(rejected)")
            return
        }
        #expect(replies.count == 1)
        #expect(replies.first?.error != nil)
        #expect(handle.encodedState().json == before)
        #expect(handle.runtime.withLock { $0.tip.version } == 1)
    }

    @Test("If-Match must name the current version; a mismatch reports it")
    func ifMatch() async throws {
        let fixture = try EngineFixture()
        defer {
            fixture.close()
            fixture.removeFiles()
        }
        let handle = try await fixture.createCanvas()
        let stale = await fixture.submit(
            EngineFixture.addShape(UUID(), x: 1, to: handle), to: handle, ifMatch: .versions([7]))
        guard case .versionMismatch(current: 0) = stale.error else {
            Issue.record("expected versionMismatch(current: 0), got \(stale)")
            return
        }
        let current = await fixture.submit(
            EngineFixture.addShape(UUID(), x: 1, to: handle), to: handle, ifMatch: .versions([0]))
        #expect(current.version == 1)
    }

    @Test("concurrent writers of one scope get contiguous versions, none lost")
    func concurrentWriters() async throws {
        let fixture = try EngineFixture()
        defer {
            fixture.close()
            fixture.removeFiles()
        }
        let handle = try await fixture.createCanvas()
        let versions = await withTaskGroup(of: Int?.self) { group in
            for index in 0..<32 {
                group.addTask {
                    await fixture.submit(EngineFixture.rename(handle, to: "w\(index)"), to: handle).version
                }
            }
            var versions: [Int] = []
            for await version in group { if let version { versions.append(version) } }
            return versions
        }
        #expect(versions.sorted() == Array(1...32))
        #expect(handle.committedState.version == 32)
    }

    @Test("history comes from memory or from the store with the same bytes; too old is gone, ahead is refused")
    func history() async throws {
        var configuration = ScopeEngineConfiguration(schema: .demo)
        configuration.resumeBufferSize = 2
        configuration.historyLimit = 3
        let fixture = try EngineFixture(configuration: configuration)
        defer {
            fixture.close()
            fixture.removeFiles()
        }
        let handle = try await fixture.createCanvas()
        for index in 0..<5 {
            #expect(
                await fixture.submit(EngineFixture.addShape(UUID(), x: Double(index), to: handle), to: handle).version
                    == index + 1)
        }
        let fromMemory = try await fixture.engine.history(of: handle, since: 3, limit: 10)
        let fromStore = try await fixture.engine.history(of: handle, since: 2, limit: 10)
        let memory = try JSONParser.parse(fromMemory)
        let store = try JSONParser.parse(fromStore)
        #expect(memory["version"] == .number(JSONNumber(5)))
        #expect(memory["changesets"]?.array?.count == 2)
        #expect(store["changesets"]?.array?.count == 3)
        #expect(store["changesets"]?.array?.suffix(2) == memory["changesets"]?.array?[...])
        let versions = store["changesets"]?.array?.compactMap { $0["version"] }
        #expect(versions == [.number(JSONNumber(3)), .number(JSONNumber(4)), .number(JSONNumber(5))])

        do {
            _ = try await fixture.engine.history(of: handle, since: 0, limit: 10)
            Issue.record("history after 0 was served though only 3 change sets are retained")
        } catch {
            guard case .historyGone(scope: "canvas-1", since: 0, oldest: 2, current: 5) = error else {
                Issue.record("expected historyGone, got \(error)")
                return
            }
        }
        do {
            _ = try await fixture.engine.history(of: handle, since: 6, limit: 10)
            Issue.record("history after a version ahead of the scope was served")
        } catch {
            guard case .historyAhead(since: 6, current: 5) = error else {
                Issue.record("expected historyAhead, got \(error)")
                return
            }
        }
        let empty = try JSONParser.parse(try await fixture.engine.history(of: handle, since: 5, limit: 10))
        #expect(empty["changesets"]?.array?.isEmpty == true)

        // A page's size is known before it is encoded (the gateway refuses one too large to send).
        for since in [2, 3, 4, 5] {
            let page = try await fixture.engine.historyPage(of: handle, since: since, limit: 10)
            let encoded = page.encoded()
            #expect(page.byteCount == encoded.count)
            #expect(encoded == (since == 2 ? fromStore : since == 3 ? fromMemory : encoded))
            #expect(page.payloads.count == 5 - since)
        }
    }

    @Test("a restart recovers every scope at its last version from snapshot + log tail")
    func recovery() async throws {
        var configuration = ScopeEngineConfiguration(schema: .demo)
        configuration.snapshotInterval = 3
        let first = try EngineFixture(configuration: configuration)
        defer { first.removeFiles() }
        let handle = try await first.createCanvas()
        let other = try await first.createCanvas("canvas-2")
        for index in 0..<7 {
            _ = await first.submit(EngineFixture.addShape(UUID(), x: Double(index), to: handle), to: handle)
        }
        _ = await first.submit(EngineFixture.addShape(UUID(), x: 9, to: other), to: other)
        let expected = handle.encodedState().json
        let expectedOther = other.encodedState().json
        first.close()

        let second = try EngineFixture(configuration: configuration, directory: first.directory)
        defer { second.close() }
        let recovered = try await second.engine.recover()
        #expect(recovered.scopes == 2)
        let reloaded = try #require(second.engine.handle(named: "canvas-1"))
        #expect(reloaded.committedState.version == 7)
        #expect(reloaded.encodedState().json == expected)
        #expect(try #require(second.engine.handle(named: "canvas-2")).encodedState().json == expectedOther)
        // Recent change sets are resumable from memory right after the restart.
        let history = try JSONParser.parse(try await second.engine.history(of: reloaded, since: 5, limit: 10))
        #expect(history["changesets"]?.array?.count == 2)
    }

    @Test("a deleted name re-created continues its version numbering; old versions are too old")
    func deleteAndRecreate() async throws {
        let fixture = try EngineFixture()
        defer {
            fixture.close()
            fixture.removeFiles()
        }
        let handle = try await fixture.createCanvas()
        _ = await fixture.submit(EngineFixture.addShape(UUID(), x: 1, to: handle), to: handle)
        try await fixture.engine.delete(name: "canvas-1")
        #expect(fixture.engine.handle(named: "canvas-1") == nil)
        let late = await fixture.submit(EngineFixture.addShape(UUID(), x: 2, to: handle), to: handle)
        guard case .scopeNotFound("canvas-1") = late.error else {
            Issue.record("expected scopeNotFound, got \(late)")
            return
        }

        let again = try await fixture.createCanvas()
        #expect(again.committedState.version == 2)
        do {
            _ = try await fixture.engine.history(of: again, since: 1, limit: 10)
            Issue.record("history of the deleted incarnation was served")
        } catch {
            guard case .historyGone = error else {
                Issue.record("expected historyGone, got \(error)")
                return
            }
        }
    }
}
