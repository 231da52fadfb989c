import Foundation
import JetstreamJSON
import JetstreamModel
import Testing

@testable import JetstreamClient

/// `Tests/Fixtures/sync-traces.json`: scripted traces of the sync protocol (local changes,
/// answers, events, gaps, resets, 401s, network errors) with the view, pending list, requests,
/// notifications and status each step must leave. The JavaScript client's tests run the same file
/// (Clients/js/test/traces.test.mjs), so both clients follow one protocol (docs/sync-protocol.md).
/// Here each step drives the pure parts `ScopeSync` is made of — `SyncEngine`, `StreamConnection`,
/// `SendRetry` — the way `ScopeSync` drives them.
@Suite("Shared sync traces (Swift client ⇄ JavaScript client)")
struct SharedSyncTraceTests {
    struct Trace: Sendable, CustomTestStringConvertible {
        let name: String
        let clientID: String
        let state: JSONValue
        let steps: [JSONValue]
        var testDescription: String { name }
    }

    static let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/sync-traces.json")

    static let file = Result { () throws -> (schema: Schema, scope: String, traces: [Trace]) in
        let document = try JSONParser.parse(Array(try Data(contentsOf: path)))
        let schema = try Schema.parse(tree: try #require(document["schema"], "the file has no schema"))
        let traces = try #require(document["traces"]?.array, "the file has no traces").map { entry in
            Trace(
                name: try #require(entry["name"]?.string), clientID: try #require(entry["clientId"]?.string),
                state: try #require(entry["state"]), steps: try #require(entry["steps"]?.array))
        }
        return (schema, try #require(document["scope"]?.string), traces)
    }

    @Test("the file: unique names, every step kind, every decision")
    func fileShape() throws {
        let file = try Self.file.get()
        #expect(file.schema.rootClass(forScope: file.scope) != nil)
        #expect(Set(file.traces.map(\.name)).count == file.traces.count, "trace names are unique")
        let kinds = Set(file.traces.flatMap { $0.steps.compactMap { $0["do"]?.string } })
        #expect(kinds == ["local", "send", "answer", "connect", "opened", "event", "streamEnded"])
    }

    @Test("each trace", arguments: try Self.file.get().traces)
    func run(_ trace: Trace) throws {
        let file = try Self.file.get()
        var runner = try TraceRunner(trace: trace, schema: file.schema, scope: file.scope)
        for (index, step) in trace.steps.enumerated() {
            let outcome = try runner.perform(step)
            if let expect = step["expect"] {
                runner.check(expect, after: outcome, step: "step \(index + 1) (\(step["do"]?.string ?? "?"))")
            }
        }
    }
}

/// What one step of a trace did, beside the state it left.
struct TraceStepOutcome {
    var localRejected = false
    var request: PendingChangeSet?
    var sendNext: SendRetry.Next?
    var decision: StreamConnection.Decision?
    var notified: [String]?
}

/// Drives the sync's pure parts through a trace, the way `ScopeSync` drives them on I/O.
struct TraceRunner {
    let schema: Schema
    let scope: String
    var engine: SyncEngine
    var connection = StreamConnection()
    var sendRetry = SendRetry()
    var inFlight: String?
    var clock = Duration.zero
    var connectionStart = Duration.zero

    init(trace: SharedSyncTraceTests.Trace, schema: Schema, scope: String) throws {
        self.schema = schema
        self.scope = scope
        let state = try Client.state(from: trace.state.encoded(), schema: schema)
        engine = SyncEngine(state: state, schema: schema, clientID: trace.clientID)
    }

    mutating func perform(_ step: JSONValue) throws -> TraceStepOutcome {
        clock += .milliseconds(step["advance"]?.number?.int64Value ?? 0)
        var outcome = TraceStepOutcome()
        switch try #require(step["do"]?.string) {
        case "local":
            let fragments = try Self.fragments(try #require(step["fragments"]))
            if case .failure = engine.local(fragments) { outcome.localRejected = true }
        case "send":
            outcome.request = engine.nextToSend()
            if let request = outcome.request { inFlight = request.key }
        case "answer":
            let key = try #require(inFlight, "an answer with no set in flight")
            let answer: SendRetry.Answer
            if step["networkError"] == .bool(true) {
                answer = .networkError
            } else {
                let status = Int(try #require(step["status"]?.number?.int64Value))
                answer = .status(status, retryAfter: step["retryAfter"]?.number?.int64Value.map { Int($0) })
            }
            let next = sendRetry.answered(answer, problemType: step["body"]?["type"]?.string)
            outcome.sendNext = next
            switch next {
            case .next:
                let version = Int(try #require(step["body"]?["version"]?.number?.int64Value))
                outcome.notified = Self.uuids(engine.accepted(key: key, version: version))
            case .rejected:
                outcome.notified = Self.uuids(engine.rejected(key: key))
            case .resendWithNewToken, .backOff, .retryAfter:
                engine.retry(key: key)
            }
        case "connect":
            connectionStart = clock
        case "opened":
            connection.opened()
        case "event":
            let type = try #require(step["type"]?.string)
            var end: StreamConnection.End?
            switch type {
            case "changeset":
                let data = try #require(step["data"])
                let result = engine.event(
                    version: Int(try #require(data["version"]?.number?.int64Value)),
                    fragments: try Self.fragments(try #require(data["fragments"])),
                    removed: (data["removed"]?.array ?? []).compactMap { $0.string.flatMap(UUID.init(wireString:)) },
                    idempotencyKey: data["idempotencyKey"]?.string)
                if case .applied(let update) = result { outcome.notified = Self.uuids(update) }
                end = result.streamEnd
            case "snapshot", "reset":
                engine.reset(to: try Client.state(from: try #require(step["data"]).encoded(), schema: schema))
                sendRetry.startOver()
            default:
                end = StreamConnection.End(eventType: type)
            }
            if let end { outcome.decision = connection.ended(end, lasted: clock - connectionStart) }
        case "streamEnded":
            let end: StreamConnection.End
            if step["cause"]?.string == "http" {
                let status = Int(try #require(step["status"]?.number?.int64Value))
                end = try #require(StreamConnection.End(openingStatus: status, scope: scope))
            } else {
                end = .dropped(needsFullState: false)
            }
            outcome.decision = connection.ended(end, lasted: clock - connectionStart)
        case let other:
            Issue.record("unknown step \(other)")
        }
        return outcome
    }

    func check(_ expect: JSONValue, after outcome: TraceStepOutcome, step: String) {
        let comment = Comment(rawValue: step)
        if let version = expect["version"]?.number?.int64Value {
            #expect(engine.version == Int(version), comment)
        }
        if let view = expect["view"]?.object {
            #expect(Self.objects(engine.view) == Self.canonical(.object(view)), comment)
        }
        if let pending = expect["pending"]?.array {
            #expect(
                Self.canonical("[" + engine.pending.map(Self.describe).joined(separator: ",") + "]")
                    == Self.canonical(.array(pending)), comment)
        }
        if let rejected = expect["localRejected"] {
            #expect(outcome.localRejected == (rejected == .bool(true)), comment)
        }
        if let request = expect["request"] {
            if request == .null {
                #expect(outcome.request == nil, comment)
            } else {
                #expect(outcome.request?.key == request["key"]?.string, comment)
                #expect(
                    outcome.request.map { $0.fragments.map { $0.jsonValue.encodedString() } }
                        == request["fragments"]?.array?.compactMap {
                            try? SyncFragment(json: $0).jsonValue.encodedString()
                        },
                    comment)
            }
        }
        if let send = expect["send"] {
            #expect(outcome.sendNext.map { Self.canonical(Self.describe($0)) } == Self.canonical(send), comment)
        }
        if let stream = expect["stream"] {
            #expect(Self.canonical(describe(outcome.decision)) == Self.canonical(stream), comment)
        }
        if let status = expect["status"]?.string {
            #expect(Self.name(of: connection.status) == status, comment)
        }
        if let attempt = expect["attempt"]?.number?.int64Value {
            #expect(connection.status == .reconnecting(attempt: Int(attempt)), comment)
        }
        if let notified = expect["notified"] {
            #expect(outcome.notified == notified.array?.compactMap(\.string), comment)
        }
    }

    // MARK: Descriptions in the fixture's terms

    static func fragments(_ json: JSONValue) throws -> [SyncFragment] {
        try #require(json.array).map { try SyncFragment(json: $0) }
    }

    static func uuids(_ update: ViewUpdate) -> [String]? {
        guard case .fragments(let fragments) = update else { return nil }
        return Set(fragments.map(\.uuid.wireString)).sorted()
    }

    static func describe(_ set: PendingChangeSet) -> String {
        switch set.status {
        case .queued: #"{"key":"\#(set.key)","status":"queued"}"#
        case .inFlight: #"{"key":"\#(set.key)","status":"inflight"}"#
        case .accepted(let version): #"{"key":"\#(set.key)","status":"accepted","version":\#(version)}"#
        }
    }

    static func describe(_ next: SendRetry.Next) -> String {
        switch next {
        case .next: #""next""#
        case .rejected: #""rejected""#
        case .resendWithNewToken: #""resend-with-new-token""#
        case .backOff(let attempt): #"{"backoff":\#(attempt)}"#
        case .retryAfter(let seconds): #"{"retryAfter":\#(seconds)}"#
        }
    }

    func describe(_ decision: StreamConnection.Decision?) -> String {
        let lastEventID = connection.lastEventID(confirmed: engine.version).map(String.init) ?? "null"
        switch decision {
        case nil: return #""continue""#
        case .stop(.deleted): return #"{"stop":"deleted"}"#
        case .stop(.forbidden): return #"{"stop":"forbidden"}"#
        case .stop(.requested): return #"{"stop":"requested"}"#
        case .stop(.schemaMismatch): return #"{"stop":"schema-mismatch"}"#
        case .reconnectNow(let refresh):
            return #"{"lastEventId":\#(lastEventID),"reconnect":"now"\#(refresh ? #","refreshToken":true"# : "")}"#
        case .backOff(let attempt, let refresh):
            return
                #"{"lastEventId":\#(lastEventID),"reconnect":{"backoff":\#(attempt)}\#(refresh ? #","refreshToken":true"# : "")}"#
        }
    }

    static func name(of status: ScopeSync.Status) -> String {
        switch status {
        case .connecting: "connecting"
        case .live: "live"
        case .reconnecting: "reconnecting"
        case .suspended: "suspended"
        case .stopped: "stopped"
        }
    }

    /// The view as uuid → {clsName, properties}, with keys sorted and numbers as doubles, so that
    /// it compares with the fixture by value.
    static func objects(_ state: ScopeState) -> String {
        var objects = JSONObject()
        for fragment in state.exportFragments() {
            objects.appendUnchecked(
                key: fragment.uuid.wireString,
                value: ["clsName": .string(fragment.clsName), "properties": .object(fragment.properties)])
        }
        return canonical(.object(objects))
    }

    /// A JSON text with keys sorted and numbers as doubles, to compare by value.
    static func canonical(_ value: JSONValue) -> String { normalized(value).encodedString() }

    static func canonical(_ text: String) -> String {
        (try? JSONParser.parse(Array(text.utf8))).map(canonical) ?? "unparsable: \(text)"
    }

    static func normalized(_ value: JSONValue) -> JSONValue {
        switch value {
        case .number(let number):
            return .number(JSONNumber(text: String(number.doubleValue)) ?? number)
        case .array(let elements):
            return .array(elements.map(normalized))
        case .object(let object):
            var sorted = JSONObject()
            for member in object.sorted(by: { $0.key < $1.key }) {
                sorted.appendUnchecked(key: member.key, value: normalized(member.value))
            }
            return .object(sorted)
        default:
            return value
        }
    }
}
