import CanvasModel
import Foundation
import Jetstream
import JetstreamClient
import JetstreamModel
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The root of a `memo-*` scope: a class the demo schema lacks, which these tests' schemas add.
final class Memo: ModelObject {
    @Synced var text = ""
}

/// A sync follows a schema change on the server: the gateway is restarted on the same data
/// directory with another `--schema`, the stream resumes across the change with `event: reset`,
/// and the sync reads `GET /v1/schema` again (with `If-None-Match`) before it applies it. Classes
/// that still fit: applied, live. Classes that no longer fit: stopped with `schemaMismatch`, the
/// last state kept, the scope no longer on the stream.
@Suite("A sync follows a schema change on the server", .serialized)
@MainActor
struct SchemaChangeLiveTests {
    private static let labelLine = "    label:  { type: String, maxLength: 200, default: \"\" }\n"

    /// The demo schema's YAML, without `Shape.label` unless `label`, and with the `Memo` class and
    /// the `memo-*` scope rule when `memo`.
    private static func schemaYAML(label: Bool = true, memo: Bool) -> String {
        var yaml = Schema.demoYAML
        if !label { yaml = yaml.replacingOccurrences(of: labelLine, with: "") }
        if memo {
            yaml = yaml.replacingOccurrences(of: "scopes:\n", with: "  Memo:\n    text: String\nscopes:\n")
            yaml += "\n  \"memo-*\": { root: Memo }\n"
        }
        return yaml
    }

    /// The `ETag` the server sends with `GET /v1/schema` (nil when it sends none).
    private static func schemaTag(_ live: LiveHarness) async throws -> String? {
        let request = URLRequest(url: live.gateway.url.appending(path: "/v1/schema"))
        return try await URLSessionTransport().data(for: request).1.value(forHTTPHeaderField: "ETag")
    }

    private static func isStopped(_ status: ScopeSync.Status) -> Bool {
        if case .stopped = status { return true }
        return false
    }

    @Test("a class added: the reset after the restart is applied under the new schema and the sync stays live")
    func addedClass() async throws {
        #expect(Self.schemaYAML(label: false, memo: false) != Schema.demoYAML, "the label line is the demo's")
        try await LiveHarness.run { live in
            try await live.seed(labels: ["a"])
            let ada = try await live.peer()
            try await Poll.until("ada is live") { ada.sync.status == .live }
            let firstTag = try await Self.schemaTag(live)
            #expect(firstTag != nil, "the server names its schema with an ETag")

            let path = try live.gateway.writeFile("with-memo.yaml", Self.schemaYAML(memo: true))
            try await live.gateway.restart(arguments: ["--schema", path])
            try await Poll.until(
                "ada's stream resumes with a reset, for which she reads the schema again (\(ada.summary))\n"
                    + ada.transport.streamedText
            ) {
                let reads = ada.transport.exchanges("GET /v1/schema")
                return ada.transport.eventCount("reset") == 1 && reads.count == 2 && reads[1].status != nil
            }
            let reads = ada.transport.exchanges("GET /v1/schema")
            #expect(reads.map(\.status) == [200, 200], "the reset's read gets the new schema")
            #expect(reads.map { $0.headers["If-None-Match"] } == [nil, firstTag], "with the tag of the first read")
            #expect(try await Self.schemaTag(live) != firstTag, "the new schema has another tag")

            // She stays live and in step with a client that came after the change.
            let bob = try await live.peer()
            let shape = Shape()
            shape.label = "b"
            bob.scope.modify { bob.canvas.shapes.append(shape) }
            ada.scope.modify { ada.canvas.shapes[0].label = "a2" }
            try await live.waitUntilConverged([ada, bob])
            #expect(ada.canvas.shapes.map(\.label) == ["a2", "b"])
            #expect(!ada.statuses.contains(where: Self.isStopped), "never stopped: \(ada.statuses)")
            #expect(ada.rejections.isEmpty && bob.rejections.isEmpty)
        }
    }

    @Test(
        "Shape.label removed: the canvas syncs stop with schemaMismatch naming it, keep their state and leave the stream; a memo scope on the same stream goes on"
    )
    func removedProperty() async throws {
        let initial = FileManager.default.temporaryDirectory.appendingPathComponent("schema-\(UUID()).yaml")
        try Self.schemaYAML(memo: true).write(to: initial, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: initial) }
        try await LiveHarness.run(["--schema", initial.path]) { live in
            try await live.seed(labels: ["a"])
            // One client follows the canvas and a memo scope on its one stream; `alone` the canvas only.
            let transport = FaultyTransport()
            var configuration = Client.Configuration()
            configuration.backoff = LiveHarness.quickBackoff
            let client = Client(url: live.gateway.url, transport: transport, configuration: configuration)
            let canvas = Canvas()
            let canvasSync = try await client.fetch(Scope(name: live.scopeName, root: canvas))
            var statuses: [ScopeSync.Status] = []
            canvasSync.onStatusChange { statuses.append($0) }
            let memoName = "memo-\(UUID().uuidString.lowercased())"
            let memo = Memo()
            memo.text = "first"
            let memoSync = try await client.fetch(Scope(name: memoName, root: memo), createIfMissing: true)
            let alone = try await live.peer()
            try await Poll.until("all live") {
                canvasSync.status == .live && memoSync.status == .live && alone.sync.status == .live
            }
            let version = canvasSync.version

            let path = try live.gateway.writeFile("without-label.yaml", Self.schemaYAML(label: false, memo: true))
            try await live.gateway.restart(arguments: ["--schema", path])
            let mismatch = ScopeSync.Status.stopped(
                reason: .schemaMismatch(["Shape.label is not in the server's schema"]))
            try await Poll.until(
                "the canvas syncs stop on the mismatch (\(canvasSync.status), \(alone.sync.status))\n"
                    + transport.streamedText + "\n" + live.gateway.log().suffix(2000)
            ) {
                canvasSync.status == mismatch && alone.sync.status == mismatch
            }
            #expect(statuses.last == mismatch && alone.statuses.last == mismatch, "onStatusChange told them")
            #expect(canvas.shapes.map(\.label) == ["a"] && canvasSync.version == version, "the reset was not applied")
            #expect(alone.canvas.shapes.map(\.label) == ["a"] && alone.sync.version == version)

            // `alone` had no other scope: its stream closes and is not opened again.
            try await Poll.until("alone's stream closes") { alone.transport.openStreamCount == 0 }
            let aloneStreams = alone.transport.streamRequests.count

            // The memo scope took its own reset under the new schema and goes on.
            try await Poll.until("the memo sync is live after its reset (\(memoSync.status))") {
                transport.eventCount("reset") == 2 && memoSync.status == .live
            }
            let posted = try await live.api.post(
                [SyncFragment(type: .change, uuid: memo.uuid, clsName: "Memo", properties: ["text": "from the api"])],
                to: memoName)
            #expect(posted == 200)
            try await Poll.until("the memo sync gets the change (\(memo.text))") { memo.text == "from the api" }

            // A reconnection of the shared stream no longer asks for the canvas.
            let streams = transport.streamTargets.count
            transport.cutStreams()
            try await Poll.until("the shared stream is open again (\(transport.streamScopes))") {
                transport.streamTargets.count > streams && memoSync.status == .live
                    && transport.openStreamCount == 1
            }
            #expect(
                transport.streamScopes.dropFirst(streams).allSatisfy { scopes in
                    scopes.map { $0.split(separator: "@").first.map(String.init) ?? $0 } == [memoName]
                }, "\(transport.streamScopes)")
            #expect(alone.transport.streamRequests.count == aloneStreams, "alone never reconnected")
            #expect(canvasSync.status == mismatch)
            await memoSync.stop()
            await canvasSync.stop()
        }
    }
}
