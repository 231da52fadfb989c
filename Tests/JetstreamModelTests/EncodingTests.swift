import Foundation
import JetstreamModel
import Testing

/// The streaming encoders the gateway uses write exactly what the JSON trees encode to.
@Suite("Streaming encoders")
struct EncodingTests {
    typealias F = Fixtures

    @Test("writeState matches stateJSON byte for byte")
    func writeState() throws {
        let (state, _, _) = try F.canvas(shapes: 3)
        var writer = JSONWriter()
        state.writeState(name: "canvas-\"1\"", to: &writer)
        #expect(writer.bytes == state.stateJSON(name: "canvas-\"1\"").encoded())
    }

    @Test("writeEvent writes version, normalised fragments and removed UUIDs")
    func writeEvent() throws {
        let (state, root, shapes) = try F.canvas(shapes: 3)
        let applied = try #require(
            state.applying([F.change(root, "Canvas", ["shapes": F.refs(shapes[2])])], schema: F.schema).applied)
        var writer = JSONWriter()
        applied.writeEvent(to: &writer)
        let event = try JSONParser.parse(writer.bytes)
        #expect(event["version"] == .number(JSONNumber(state.version + 1)))
        #expect(event["fragments"] == .array(applied.fragments.map(\.jsonValue)))
        #expect(event["removed"] == F.refs(shapes[0], shapes[1]))
        #expect(event.object?.keys == ["version", "fragments", "removed"])

        var keyed = JSONWriter()
        applied.writeEvent(to: &keyed, idempotencyKey: #"k"\1"#)
        let keyedEvent = try JSONParser.parse(keyed.bytes)
        #expect(keyedEvent.object?.keys == ["version", "idempotencyKey", "fragments", "removed"])
        #expect(keyedEvent["idempotencyKey"] == .string(#"k"\1"#))
        #expect(keyedEvent["fragments"] == event["fragments"])
    }

    @Test("a class's schema entry is its properties in long form")
    func classEntry() {
        let shape = Schema.demo.modelClass(named: "Shape")!
        #expect(
            shape.jsonValue.encodedString()
                == #"{"x":{"type":"Float"},"y":{"type":"Float"},"width":{"type":"Float","default":100.0,"min":0.0},"#
                + #""height":{"type":"Float","default":100.0,"min":0.0},"color":{"type":"Color?"},"#
                + #""label":{"type":"String","default":"","maxLength":200},"kind":{"enum":["rect","oval"],"default":"rect"}}"#
        )
    }
}
