import Foundation
import HTTPServer
import HTTPTypes
import JetstreamModel
import Store
import Synchronization
import Testing

@testable import Gateway
@testable import ScopeEngine

@Suite("Idempotency keys, readiness and metrics")
struct GatewayProductionTests {
    static func rename(_ handle: ScopeHandle, to name: String) -> [JSONValue] {
        [
            [
                "type": "change", "uuid": .string(handle.committedState.rootUUID.wireString), "clsName": "Canvas",
                "properties": ["name": .string(name)],
            ]
        ]
    }

    static func submitOnce(
        _ fixture: GatewayFixture, _ fragments: [JSONValue], to handle: ScopeHandle, key: String, body: String
    ) async -> SubmitOutcome {
        await withCheckedContinuation { continuation in
            fixture.engine.submitOnce(
                ChangeSet(json: fragments), to: handle, ifMatch: nil,
                idempotency: IdempotencyKey(key: key, body: Array(body.utf8))
            ) { continuation.resume(returning: $0) }
        }
    }

    @Test("a key in flight is refused with 409 until its outcome is durable, then replayed")
    func inFlightThenReplayed() async throws {
        let fixture = try GatewayFixture()
        defer {
            fixture.close()
            fixture.removeFiles()
        }
        let handle = try await fixture.createCanvas()
        let fragments = Self.rename(handle, to: "once")
        fixture.store.pauseCommits()
        let (firstOutcome, firstDone) = AsyncStream<SubmitOutcome>.makeStream()
        fixture.engine.submitOnce(
            ChangeSet(json: fragments), to: handle, ifMatch: nil,
            idempotency: IdempotencyKey(key: "k", body: Array("b".utf8))
        ) { outcome in
            firstDone.yield(outcome)
            firstDone.finish()
        }
        // The first request registered the key before returning; its commit is held by the pause.
        let second = await Self.submitOnce(fixture, fragments, to: handle, key: "k", body: "b")
        #expect(second.problem?.kind == .idempotencyKeyInFlight)
        fixture.store.resumeCommits()
        var first = firstOutcome.makeAsyncIterator()
        #expect(await first.next()?.version == 1)
        let third = await Self.submitOnce(fixture, fragments, to: handle, key: "k", body: "b")
        guard case .replayed(let record) = third else {
            Issue.record("expected a replay, got \(third)")
            return
        }
        #expect(record.status == 200 && record.version == 1)
        #expect(handle.committedState.version == 1)
        let reused = await Self.submitOnce(fixture, fragments, to: handle, key: "k", body: "other")
        #expect(reused.problem?.kind == .idempotencyKeyReused)
        #expect(handle.runtime.withLock { $0.idempotencyInFlight.isEmpty })
    }

    @Test("a rejection with a key is stored and replayed after a restart on the same store")
    func rejectionSurvivesRestart() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gateway-\(UUID().uuidString)")
        let fixture = try GatewayFixture(directory: directory)
        let handle = try await fixture.createCanvas()
        let bad: [JSONValue] = [
            [
                "type": "change", "uuid": .string(handle.committedState.rootUUID.wireString), "clsName": "Canvas",
                "properties": ["name": 7],
            ]
        ]
        let first = await Self.submitOnce(fixture, bad, to: handle, key: "r", body: "bad")
        #expect(first.problem?.kind == .invalidChangeSet)
        fixture.close()

        let restarted = try GatewayFixture(directory: directory)
        defer {
            restarted.close()
            restarted.removeFiles()
        }
        _ = try await restarted.engine.recover()
        let reloaded = try #require(restarted.engine.handle(named: "canvas-1"))
        let again = await Self.submitOnce(restarted, bad, to: reloaded, key: "r", body: "bad")
        guard case .replayed(let record) = again else {
            Issue.record("expected a replay, got \(again)")
            return
        }
        #expect(record.status == 422 && record.version == nil)
        #expect(record.response == first.problem?.response.body)
        let response = IdempotencyRequest.replay(record)
        #expect(response.status == .unprocessableContent)
        #expect(response.head.headerFields[IdempotencyRequest.replayedHeaderName] == "true")
    }

    @Test("the Idempotency-Key header: absent, valid, quoted, and refused shapes")
    func keyParsing() throws {
        func request(_ key: String?) -> HTTPServerRequest {
            var fields = HTTPFields()
            if let key { fields[IdempotencyRequest.headerName] = key }
            return HTTPServerRequest(
                head: HTTPRequest(method: .post, scheme: nil, authority: nil, path: "/", headerFields: fields),
                body: Array("{}".utf8))
        }
        #expect(try IdempotencyRequest.key(of: request(nil), subject: nil) == nil)
        let plain = try #require(try IdempotencyRequest.key(of: request("abc-123"), subject: nil))
        #expect(plain.key == "abc-123")
        #expect(plain.digest == Array("raw:{}".utf8))
        #expect(plain.storageKey == "abc-123")
        // Keys are per subject: the same key of two subjects is stored apart from the anonymous one.
        let ada = try #require(try IdempotencyRequest.key(of: request("abc-123"), subject: "ada"))
        let bob = try #require(try IdempotencyRequest.key(of: request("abc-123"), subject: "bob"))
        #expect(ada.key == "abc-123")
        #expect(ada.storageKey == "ada abc-123")
        #expect(Set([ada.storageKey, bob.storageKey, plain.storageKey]).count == 3)
        #expect(try IdempotencyRequest.key(of: request("\"quoted\""), subject: nil)?.key == "quoted")
        for bad in ["", "has space", String(repeating: "k", count: 256), "é"] {
            #expect(throws: Problem.self) { try IdempotencyRequest.key(of: request(bad), subject: "ada") }
        }
    }

    @Test("readiness: ready while serving, not ready once draining; draining is one-way")
    func readiness() async throws {
        let fixture = try GatewayFixture()
        defer {
            fixture.close()
            fixture.removeFiles()
        }
        #expect(await fixture.engine.readinessProblem() == nil)
        #expect(!fixture.engine.isDraining)
        fixture.engine.beginDrain()
        fixture.engine.beginDrain()
        #expect(fixture.engine.isDraining)
        #expect(await fixture.engine.readinessProblem()?.contains("draining") == true)
    }

    @Test("a store that fails makes the gateway not ready")
    func readinessWithClosedStore() async throws {
        let fixture = try GatewayFixture()
        defer { fixture.removeFiles() }
        fixture.close()
        #expect(await fixture.engine.readinessProblem()?.contains("store") == true)
    }

    @Test("requests are counted by route and status in the Prometheus exposition")
    func requestMetrics() {
        let metrics = GatewayMetrics()
        for _ in 0..<2 {
            metrics.recordRequest(route: "/v1/scopes/{name}", status: 200, duration: .milliseconds(3))
        }
        metrics.countRejected(.invalidChangeSet)
        let text = String(decoding: metrics.exposition(), as: UTF8.self)
        #expect(text.contains(#"jetstream_http_requests_total{route="/v1/scopes/{name}",status="200"} 2"#))
        #expect(text.contains(#"jetstream_http_request_duration_seconds_count{route="/v1/scopes/{name}"} 2"#))
        #expect(text.contains(#"jetstream_changesets_total{result="rejected",type="invalid-change-set"} 1"#))
    }

    @Test("durations convert to whole nanoseconds, saturating instead of trapping")
    func nanoseconds() {
        #expect(Duration.milliseconds(3).nanosecondsClamped == 3_000_000)
        #expect(Duration.seconds(Int64.max).nanosecondsClamped == .max)
        #expect(Duration.seconds(-1).nanosecondsClamped == 0)
    }
}
