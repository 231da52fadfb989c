import Foundation
import JetstreamModel
import Testing

@Suite("Sync fragments")
struct SyncFragmentTests {
    @Test("parses the wire format; UUIDs in any case come out lowercase")
    func parse() throws {
        let json = try JSONParser.parse(
            #"{"type":"add","uuid":"5F0C61D2-0B45-4F5E-9E8B-6F1B7D2C3A10","clsName":"Shape","properties":{"x":10}}"#)
        let fragment = try SyncFragment(json: json)
        #expect(fragment.type == .add)
        #expect(fragment.clsName == "Shape")
        #expect(fragment.properties["x"] == 10)
        #expect(
            fragment.jsonValue.encodedString()
                == #"{"type":"add","uuid":"5f0c61d2-0b45-4f5e-9e8b-6f1b7d2c3a10","clsName":"Shape","properties":{"x":10}}"#
        )
        var writer = JSONWriter()
        fragment.write(to: &writer)
        #expect(writer.bytes == fragment.jsonValue.encoded())
    }

    @Test("a missing properties object is an empty one")
    func missingProperties() throws {
        let fragment = try SyncFragment(
            json: ["type": "change", "uuid": "5f0c61d2-0b45-4f5e-9e8b-6f1b7d2c3a10", "clsName": "Canvas"])
        #expect(fragment.properties.isEmpty)
    }

    @Test(
        "38: malformed fragments are errors (missing type, remove, no clsName, bad uuid, bad properties)",
        arguments: [
            #"{"uuid":"5f0c61d2-0b45-4f5e-9e8b-6f1b7d2c3a10","clsName":"A"}"#,
            #"{"type":"remove","clsName":"A"}"#,
            #"{"type":"add","uuid":"5f0c61d2-0b45-4f5e-9e8b-6f1b7d2c3a10"}"#,
            #"{"type":"add","uuid":"not-a-uuid","clsName":"A"}"#,
            #"{"type":"add","uuid":"{5f0c61d2-0b45-4f5e-9e8b-6f1b7d2c3a10}","clsName":"A"}"#,
            #"{"type":"add","uuid":"5f0c61d2-0b45-4f5e-9e8b-6f1b7d2c3a10","clsName":"A","properties":null}"#,
            #"{"type":"add","uuid":"5f0c61d2-0b45-4f5e-9e8b-6f1b7d2c3a10","clsName":"A","extra":1}"#,
            #"{"type":"add","uuid":"5f0c61d2-0b45-4f5e-9e8b-6f1b7d2c3a10","clsName":""}"#,
            #"["add"]"#,
        ])
    func malformed(text: String) throws {
        let json = try JSONParser.parse(text)
        #expect {
            try SyncFragment(json: json)
        } throws: { error in
            (error as? FragmentError)?.kind == .malformedFragment
        }
    }

    @Test("UUID wire strings: canonical form only, any case")
    func uuids() {
        let uuid = UUID()
        #expect(uuid.wireString == uuid.uuidString.lowercased())
        #expect(UUID(wireString: uuid.uuidString) == uuid)
        #expect(UUID(wireString: uuid.wireString) == uuid)
        #expect(UUID(wireString: String(uuid.wireString.dropLast())) == nil)
        #expect(UUID(wireString: uuid.wireString.replacingOccurrences(of: "-", with: "")) == nil)
        #expect(UUID(wireString: "g" + uuid.wireString.dropFirst()) == nil)
    }

    @Test("a fragment reply is {} or {error:{type,message,property}}")
    func replies() {
        #expect(FragmentReply.ok.jsonValue.encodedString() == "{}")
        let reply = FragmentReply.error(FragmentError(.typeMismatch, "expected a number", property: "x"))
        #expect(
            reply.jsonValue.encodedString()
                == #"{"error":{"type":"type-mismatch","message":"expected a number","property":"x"}}"#)
        #expect(FragmentError.Kind.allCases.count == 16)
    }
}
