import CanvasModel
import Foundation
import Jetstream
import JetstreamJSON
import JetstreamModel
import Testing

@testable import JetstreamClient

/// ``SchemaRecheck``: what a sync does with a `reset` once it has read `GET /v1/schema` again —
/// the answer decides, against the schema the app's classes form (`CanvasModel`'s, the demo's).
@Suite("Schema recheck on a reset")
@MainActor
struct SchemaRecheckTests {
    private static func modelSchema() throws -> Schema {
        try Client.modelSchema(of: Scope(name: "canvas-1", root: Canvas()))
    }

    private static func decide(_ answer: Client.Answer?, current: Schema = .demo) throws -> SchemaRecheck {
        SchemaRecheck(
            answer: answer, current: current, model: try modelSchema(), scope: "canvas-1", rootClass: "Canvas")
    }

    private static func served(_ schema: Schema, entityTag: String? = nil) -> Client.Answer {
        Client.Answer(
            status: 200, body: Array(schema.jsonValue.encodedString().utf8), retryAfter: nil, entityTag: entityTag)
    }

    /// The demo schema with `Shape`'s `label` written as `replacement` (nil: removed).
    private static func demo(label replacement: String?) throws -> Schema {
        let line = "    label:  { type: String, maxLength: 200, default: \"\" }\n"
        #expect(Schema.demoYAML.contains(line))
        return try Schema.parse(
            yaml: Schema.demoYAML.replacingOccurrences(of: line, with: replacement.map { "    label: \($0)\n" } ?? ""),
            file: "changed.yaml")
    }

    @Test("304 and a 200 with the schema the sync has: unchanged")
    func unchanged() throws {
        #expect(try Self.decide(Client.Answer(status: 304, body: [], retryAfter: nil)) == .unchanged)
        #expect(try Self.decide(Self.served(.demo, entityTag: "\"a1\"")) == .unchanged)
    }

    @Test("a new class: the classes still fit, the schema and its ETag are taken")
    func addedClass() throws {
        let added = try Schema.demo(adding: "models:\n  Note: { text: String }\n")
        #expect(try Self.decide(Self.served(added, entityTag: "\"b2\"")) == .changed(added, entityTag: "\"b2\""))
    }

    @Test("a property the app never declared, removed: still fits (the app's classes are compared, not the old schema)")
    func removedPropertyTheAppLacks() throws {
        let before = try Schema.demo(adding: "models:\n  Shape: { z: Float }\n")
        #expect(try Self.decide(Self.served(.demo), current: before) == .changed(.demo, entityTag: nil))
    }

    @Test("a removed or retyped property of the app's classes, or another root: a mismatch naming it")
    func mismatch() throws {
        #expect(
            try Self.decide(Self.served(try Self.demo(label: nil)))
                == .mismatch(["Shape.label is not in the server's schema"]))
        #expect(
            try Self.decide(Self.served(try Self.demo(label: "Int")))
                == .mismatch(["Shape.label is String here, Int on the server"]))
        let otherRoot = try Schema.demo(
            adding: "models:\n  Board: { title: String }\nscopes:\n  \"canvas-*\": { root: Board }\n")
        #expect(
            try Self.decide(Self.served(otherRoot))
                == .mismatch(["scope canvas-1 has a Board root on the server, a Canvas here"]))
    }

    @Test("no answer, another status or a body that is no schema: unreadable (the stream resumes later)")
    func unreadable() throws {
        for answer in [
            nil, Client.Answer(status: 503, body: [], retryAfter: nil),
            Client.Answer(status: 200, body: Array("{\"models\": 1}".utf8), retryAfter: nil),
        ] {
            guard case .unreadable = try Self.decide(answer) else {
                Issue.record("\(String(describing: answer)) gave \(try Self.decide(answer))")
                continue
            }
        }
    }
}
