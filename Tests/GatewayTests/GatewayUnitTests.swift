import Foundation
import HTTPServer
import HTTPTypes
import JetstreamModel
import Testing

@testable import Gateway
@testable import ScopeEngine

@Suite("Gateway helpers")
struct GatewayUnitTests {
    @Test("the served OpenAPI document is the repository's openapi.yaml")
    func openAPIIsEmbedded() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let onDisk = try String(contentsOf: root.appendingPathComponent("openapi.yaml"), encoding: .utf8)
        let bundled = try String(
            contentsOf: root.appendingPathComponent("Sources/Server/Gateway/Resources/openapi.yaml"), encoding: .utf8)
        #expect(
            bundled == onDisk, "copy openapi.yaml to Sources/Server/Gateway/Resources/openapi.yaml after editing it")
        #expect(Gateway.openAPIDocument == Array(onDisk.utf8), "the binary embeds the bundled document")
    }

    @Test("entity tags: strong and weak, lists, star, malformed")
    func entityTags() {
        #expect(EntityTag.parse(#""42""#, allowWeak: false) == .versions([42]))
        #expect(EntityTag.parse(#" "1", "2" "#, allowWeak: false) == .versions([1, 2]))
        #expect(EntityTag.parse("*", allowWeak: false) == .any)
        #expect(EntityTag.parse(#"W/"3""#, allowWeak: true) == .versions([3]))
        #expect(EntityTag.parse(#"W/"3""#, allowWeak: false) == EntityTag.Condition.none)
        #expect(EntityTag.parse(#""abc""#, allowWeak: false) == EntityTag.Condition.none)
        #expect(EntityTag.parse("42", allowWeak: false) == nil)
        #expect(EntityTag.header(for: 7) == #""7""#)
        // A comma is an etagc: inside quotes it does not split the list.
        #expect(EntityTag.parse(#""a,b""#, allowWeak: true) == EntityTag.Condition.none)
        #expect(EntityTag.parse(#""a,b", "5""#, allowWeak: true) == .versions([5]))
        #expect(EntityTag.parse(#""5" x"#, allowWeak: true) == nil)
        #expect(EntityTag.parse(#""5"#, allowWeak: true) == nil)
    }

    @Test("scope names: 1–128 of [A-Za-z0-9._~-]")
    func scopeNames() {
        #expect(ScopeName.isValid("canvas-1"))
        #expect(ScopeName.isValid("a.b_c~d"))
        #expect(ScopeName.isValid(String(repeating: "x", count: 128)))
        #expect(!ScopeName.isValid(""))
        #expect(!ScopeName.isValid(String(repeating: "x", count: 129)))
        #expect(!ScopeName.isValid("a/b"))
        #expect(!ScopeName.isValid("é"))
    }

    @Test("resume points: none → snapshot, a version → after it, anything else → reset")
    func streamStart() {
        #expect(ResumePoint(lastEventID: nil) == .fresh)
        #expect(ResumePoint(lastEventID: "") == .fresh)
        #expect(ResumePoint(lastEventID: "41") == .after(41))
        #expect(ResumePoint(lastEventID: " 41 ") == .after(41))
        #expect(ResumePoint(lastEventID: "x1") == .unknown)
        #expect(ResumePoint(lastEventID: "-1") == .unknown)
    }

    @Test("a change set is encoded once: stored payload, SSE event and 200 body share its bytes")
    func changeSetEncoding() throws {
        let state = try ScopeState.create(rootClass: #require(Schema.demo.modelClass(named: "Canvas")), schema: .demo)
        let shape = try #require(UUID(wireString: "5F0C61D2-0B45-4F5E-9E8B-6F1B7D2C3A10"))
        let fragments = [
            SyncFragment(type: .add, uuid: shape, clsName: "Shape", properties: ["x": 1, "y": 2]),
            SyncFragment(
                type: .change, uuid: state.rootUUID, clsName: "Canvas",
                properties: ["shapes": [.string(shape.wireString)]]),
        ]
        guard case .accepted(let applied) = state.applying(fragments, schema: .demo) else {
            Issue.record("the change set was rejected")
            return
        }
        let payload = ChangeSetPayload(applied)
        let text = String(decoding: payload.bytes, as: UTF8.self)
        #expect(
            text.hasPrefix(#"{"version":1,"fragments":[{"type":"add","uuid":"5f0c61d2-0b45-4f5e-9e8b-6f1b7d2c3a10""#))
        #expect(
            String(decoding: SSEFrame.frame(payload.event).payloadBytes, as: UTF8.self)
                == "event: changeset\nid: 1\ndata: \(text)\n\n")
        // Framed once: the same event yields the same frame object.
        let event = payload.event
        #expect(SSEFrame.frame(event) === SSEFrame.frame(event))
        let stored = try JSONParser.parse(payload.bytes)
        let body = try JSONParser.parse(payload.acceptedResponse(fragmentCount: 2))
        #expect(body["version"] == .number(JSONNumber(1)))
        #expect(body["fragmentReplies"] == [[:], [:]])
        #expect(body["fragments"] == stored["fragments"])
        #expect(body["removed"] == stored["removed"])
        #expect(body.object?.keys == ["version", "fragmentReplies", "fragments", "removed"])
    }

    @Test("engine errors become problem+json with a stable type")
    func engineProblems() throws {
        let response = Problem.engineResponse(status: .contentTooLarge, reason: "request body too large")
        #expect(response.status == .contentTooLarge)
        #expect(response.head.headerFields[.contentType] == "application/problem+json")
        let body = try JSONParser.parse(response.body)
        #expect(body["type"] == "/problems/payload-too-large")
        #expect(body["detail"] == "request body too large")
    }
}
