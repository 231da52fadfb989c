import CanvasModel
import Foundation
import Jetstream
import JetstreamJSON
import JetstreamModel
import Testing

@testable import JetstreamClient

/// One ``Client``, many scopes, one event stream — against the real gateway: the server counts one
/// open stream, a scope fetched or stopped re-opens it without losing or repeating a change set, a
/// deleted scope stops alone, and a scope fetched twice is one copy.
@Suite("Shared stream: many scopes of one client on one connection", .serialized)
@MainActor
struct SharedStreamLiveTests {
    /// A client of the live gateway with its own fault-injecting transport.
    private static func client(_ live: LiveHarness, transport: FaultyTransport) -> Client {
        var configuration = Client.Configuration()
        configuration.backoff = LiveHarness.quickBackoff
        return Client(url: live.gateway.url, transport: transport, configuration: configuration)
    }

    /// The distinct versions of `scope`'s changeset events on every stream `transport` received,
    /// sorted. (A version may come twice on the wire: the transport records what arrived, and the
    /// tail of a stream the client ended before reading it comes again on the next one — from the
    /// last id the client did read.)
    private static func changeSetVersions(of scope: String, in transport: FaultyTransport) -> [Int] {
        Set(
            transport.events(named: "changeset").filter { $0["scope"]?.string == scope }
                .compactMap { $0["version"]?.number?.int64Value.map { Int($0) } }
        ).sorted()
    }

    @Test("three scopes of one client: one connection (the server counts one stream); a deleted one stops alone")
    func threeScopesOneConnection() async throws {
        try await LiveHarness.run { live in
            let names = [live.scopeName, "\(live.scopeName)-b", "\(live.scopeName)-c"]
            for name in names { try await live.seed(labels: ["on \(name)"], scope: name) }
            let transport = FaultyTransport()
            let client = Self.client(live, transport: transport)
            let canvases = names.map { _ in Canvas() }
            var syncs: [ScopeSync] = []
            for (name, canvas) in zip(names, canvases) {
                syncs.append(try await client.fetch(Scope(name: name, root: canvas)))
            }
            try await Poll.until("all three are live (\(syncs.map(\.status)))") {
                syncs.allSatisfy { $0.status == .live }
            }
            try await Poll.until("one stream open, here and on the server") {
                let counted = try await live.api.metric("jetstream_sse_streams_open")
                return transport.openStreamCount == 1 && counted == 1
            }
            let last = try #require(transport.streamScopes.last)
            #expect(last.map(SharedEventStream.name(inQueryValue:)) == names, "\(transport.streamScopes)")
            #expect(transport.streamTargets.allSatisfy { $0.url.path.hasSuffix("/v1/events") })

            // Changes to each scope arrive through the one stream.
            for name in names {
                let writer = try await live.peer(scope: name)
                let shape = Shape()
                shape.label = "new on \(name)"
                writer.canvas.shapes.append(shape)
            }
            try await Poll.until("every scope shows its new shape") {
                canvases.allSatisfy { $0.shapes.count == 2 }
            }
            #expect(transport.openStreamCount == 1)

            // Deleting one scope stops its sync only; the stream goes on for the others.
            #expect(try await live.api.delete(names[2]) == 204)
            try await Poll.until("the deleted scope's sync stops") { syncs[2].status == .stopped(reason: .deleted) }
            let writer = try await live.peer(scope: names[0])
            writer.canvas.shapes.append(Shape())
            try await Poll.until("the first scope still gets changes") { canvases[0].shapes.count == 3 }
            #expect(syncs[0].status == .live && syncs[1].status == .live)
            // Each writer peer is a client of its own, with its own stream (the one on the deleted scope ended).
            let writers = live.peers.filter { $0.sync.status == .live }.count
            try await Poll.until("one stream for the client and one for each live writer, on the server") {
                let counted = try await live.api.metric("jetstream_sse_streams_open")
                return counted == Double(1 + writers)
            }
            for sync in syncs { await sync.stop() }
            try await Poll.until("no stream left open by the client") { transport.openStreamCount == 0 }
        }
    }

    @Test("scopes fetched and stopped while another scope is written: each of its change sets arrives once, in order")
    func fetchWhileWriting() async throws {
        try await LiveHarness.run { live in
            let others = ["\(live.scopeName)-b", "\(live.scopeName)-c"]
            try await live.seed(labels: ["first"])
            for name in others { try await live.seed(labels: [], scope: name) }
            let transport = FaultyTransport()
            let client = Self.client(live, transport: transport)
            let canvas = Canvas()
            let sync = try await client.fetch(Scope(name: live.scopeName, root: canvas))
            let fetchedAt = sync.version
            try await Poll.until("live") { sync.status == .live }
            var added: [String] = []
            canvas.observeCollectionAdd(canvas, key: \.shapes) { shape in added.append(shape.label) }

            let writer = try await live.peer()
            let writes = 30
            let writing = Task { @MainActor in
                for index in 0..<writes {
                    let shape = Shape()
                    shape.label = "w\(index)"
                    writer.scope.modify { writer.canvas.shapes.append(shape) }
                    try await Poll.until("write \(index) is confirmed") { writer.sync.pendingCount == 0 }
                }
            }
            // Meanwhile: fetch two more scopes, stop one, fetch it again — four re-openings.
            var extra: [ScopeSync] = []
            for name in others { extra.append(try await client.fetch(Scope(name: name, root: Canvas()))) }
            try await Poll.until("the new scopes are live") { extra.allSatisfy { $0.status == .live } }
            await extra[0].stop()
            extra[0] = try await client.fetch(Scope(name: others[0], root: Canvas()))
            try await writing.value
            try await live.waitUntilConverged([writer])

            let final = try await live.serverState().version
            try await Poll.until("the client reaches version \(final) (\(sync.version))") {
                sync.version == final && sync.status == .live
            }
            // One stream per list (at most 5: A; A+B; A+B+C; A+C; A+C+B), none for a gap.
            #expect((2...5).contains(transport.streamTargets.count), "\(transport.streamScopes)")
            #expect(
                Self.changeSetVersions(of: live.scopeName, in: transport) == Array(fetchedAt + 1...final),
                "every change set arrived:\n\(transport.streamedText)")
            #expect(added == (0..<writes).map { "w\($0)" }, "each applied once, in order")
            #expect(transport.eventCount("reset") == 0 && transport.eventCount("snapshot") == 0)
            #expect(canvas.shapes.map(\.label) == ["first"] + (0..<writes).map { "w\($0)" })
            await sync.stop()
            for sync in extra { await sync.stop() }
        }
    }

    @Test("a dropped shared stream resumes every scope from the last id: each change set once, in order")
    func droppedStreamResumesEveryScope() async throws {
        try await LiveHarness.run { live in
            let names = [live.scopeName, "\(live.scopeName)-b"]
            for name in names { try await live.seed(labels: [], scope: name) }
            let transport = FaultyTransport()
            let client = Self.client(live, transport: transport)
            var syncs: [ScopeSync] = []
            var added: [[UUID]] = [[], []]
            for (index, name) in names.enumerated() {
                let canvas = Canvas()
                syncs.append(try await client.fetch(Scope(name: name, root: canvas)))
                canvas.observeCollectionAdd(canvas, key: \.shapes) { shape in added[index].append(shape.uuid) }
            }
            let fetchedAt = syncs.map(\.version)
            try await Poll.until("both live") { syncs.allSatisfy { $0.status == .live } }
            let beforeCuts = transport.streamTargets.count
            let writers = [try await live.peer(scope: names[0]), try await live.peer(scope: names[1])]
            for round in 0..<3 {
                for writer in writers { writer.scope.modify { writer.canvas.shapes.append(Shape()) } }
                try await Poll.until("round \(round) is confirmed") { writers.allSatisfy { $0.sync.pendingCount == 0 } }
                // The client has read both sets (so it holds an id) before its stream drops.
                let versions = [
                    try await live.api.state(of: names[0]).version, try await live.api.state(of: names[1]).version,
                ]
                try await Poll.until("the client read round \(round): \(syncs.map(\.version)) of \(versions)") {
                    syncs.map(\.version) == versions
                }
                // The stream drops after every round and comes back from the last id.
                let streams = transport.streamTargets.count
                transport.cutStreams()
                try await Poll.until("the stream is back (\(syncs.map(\.status)))") {
                    transport.streamTargets.count > streams && syncs.allSatisfy { $0.status == .live }
                }
            }
            for (index, name) in names.enumerated() {
                let final = try await live.api.state(of: name).version
                try await Poll.until("\(name) reaches \(final)") { syncs[index].version == final }
                #expect(
                    Self.changeSetVersions(of: name, in: transport) == Array(fetchedAt[index] + 1...final),
                    "every change set of \(name) arrived")
                #expect(added[index] == writers[index].canvas.shapes.map(\.uuid), "each applied once, in order")
            }
            let reconnections = transport.streamTargets.dropFirst(beforeCuts)
            #expect(reconnections.count == 3, "one reconnection per cut, none for a gap")
            #expect(
                reconnections.allSatisfy { $0.lastEventID?.hasPrefix("m") == true },
                "every reconnection sends the last id: \(transport.streamTargets.map(\.lastEventID))")
            #expect(transport.eventCount("reset") == 0 && transport.eventCount("snapshot") == 0)
            for sync in syncs { await sync.stop() }
        }
    }

    @Test(
        "the same Scope fetched twice: one copy, one subscription; stopping one handle leaves the other live; another Scope object of the name: one subscription"
    )
    func sameScopeTwice() async throws {
        try await LiveHarness.run { live in
            let other = "\(live.scopeName)-b"
            try await live.seed(labels: ["a"])
            try await live.seed(labels: [], scope: other)
            let transport = FaultyTransport()
            let client = Self.client(live, transport: transport)
            let canvas = Canvas()
            let scope = Scope(name: live.scopeName, root: canvas)
            let first = try await client.fetch(scope)
            let second = try await client.fetch(scope)
            try await Poll.until("live") { first.status == .live && second.status == .live }
            #expect(first !== second && first.scope === second.scope)
            #expect(transport.streamTargets.count == 1, "the second fetch did not re-open the stream")
            #expect(
                !transport.requestLines.contains("GET /v1/scopes/\(live.scopeName)")
                    || transport.requestLines.filter {
                        $0 == "GET /v1/scopes/\(live.scopeName)"
                    }.count == 1, "the second fetch loaded nothing: \(transport.requestLines)")
            // The same name in another Scope object: a second copy on the same place of the stream.
            let copyCanvas = Canvas()
            let copy = try await client.fetch(Scope(name: live.scopeName, root: copyCanvas))
            try await Poll.until("the second copy is live") { copy.status == .live }
            #expect(copy.scope !== first.scope && copyCanvas.shapes.count == 1)

            let otherSync = try await client.fetch(Scope(name: other, root: Canvas()))
            try await Poll.until("the other scope is live") { otherSync.status == .live }
            #expect(
                transport.streamScopes.allSatisfy { scopes in
                    scopes.filter { SharedEventStream.name(inQueryValue: $0) == live.scopeName }.count == 1
                })

            var secondStatuses: [ScopeSync.Status] = []
            second.onStatusChange { secondStatuses.append($0) }
            await first.stop()
            #expect(first.status == .stopped(reason: .requested))
            #expect(second.status == .live)
            let writer = try await live.peer()
            writer.canvas.shapes.append(Shape())
            try await Poll.until("the copy still follows the scope") { canvas.shapes.count == 2 }
            try await Poll.until("so does the second copy") { copyCanvas.shapes.count == 2 }
            canvas.shapes[0].label = "through the second handle"
            try await Poll.until("the copy still sends") {
                writer.canvas.shapes[0].label == "through the second handle"
            }
            #expect(secondStatuses.isEmpty, "\(secondStatuses)")

            await second.stop()
            #expect(copy.status == .live, "the other copy still carries the scope")
            await copy.stop()
            try await Poll.until("the stream is re-opened without the scope (\(transport.streamScopes))") {
                transport.streamScopes.last == [other]
            }
            await otherSync.stop()
        }
    }
}
