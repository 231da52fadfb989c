import Foundation
import JetstreamModel
import Testing

/// The schema file's evolution keys (`renamedFrom`, `onInvalid`), what the schema refuses of them,
/// and the schema's fingerprint.
@Suite("Schema evolution keys")
struct SchemaEvolutionKeysTests {
    static let yaml = """
        models:
          Board:
            cards: [Card]
            pinned: { type: Card?, onInvalid: remove-object }
          Card:
            score: { type: Int8, renamedFrom: points }
            rank:  { type: Int16, min: 0, max: 10, onInvalid: clamp }
            note:  { type: String?, maxLength: 20, onInvalid: "null" }
            size:  { type: Float, default: 1, min: 0, onInvalid: default, renamedFrom: width }
        scopes:
          "board-*": { root: Board }
        """

    /// The error `yaml` is refused with (recorded as an issue when it is accepted).
    private func refusal(_ yaml: String) -> SchemaError? {
        do {
            _ = try Schema.parse(yaml: yaml, file: "evolution.yaml")
            Issue.record("expected the schema to be refused:\n\(yaml)")
            return nil
        } catch {
            return error
        }
    }

    @Test("renamedFrom and onInvalid are read from the long form")
    func parsesTheKeys() throws {
        let schema = try Schema.parse(yaml: Self.yaml)
        let card = try #require(schema.modelClass(named: "Card"))
        #expect(card.property(named: "score")?.renamedFrom == "points")
        #expect(card.property(named: "score")?.onInvalid == nil)
        #expect(card.property(named: "rank")?.onInvalid == .clamp)
        #expect(card.property(named: "rank")?.renamedFrom == nil)
        #expect(card.property(named: "note")?.onInvalid == .null)
        #expect(card.property(named: "size")?.onInvalid == .default)
        #expect(card.property(named: "size")?.renamedFrom == "width")
        #expect(schema.modelClass(named: "Board")?.property(named: "pinned")?.onInvalid == .removeObject)
        // The old name is no property of the class.
        #expect(card.property(named: "points") == nil)
        #expect(InvalidValuePolicy.allCases.map(\.rawValue) == ["default", "clamp", "null", "remove-object"])
    }

    @Test("an unknown onInvalid is refused with a message listing the choices")
    func unknownPolicy() throws {
        let error = try #require(refusal("models:\n  Card:\n    rank: { type: Int, onInvalid: drop }\n"))
        #expect(error.file == "evolution.yaml")
        #expect(error.className == "Card")
        #expect(error.property == "rank")
        #expect(error.message.contains("default, clamp, null, remove-object"), "\(error)")
        #expect(error.message.contains("'drop'"), "\(error)")
        // Not a string at all: refused too.
        _ = refusal("models:\n  Card:\n    rank: { type: Int, onInvalid: 3 }\n")
    }

    @Test("renamedFrom naming a property the class still has is refused")
    func renamedFromAnExistingProperty() throws {
        let error = try #require(
            refusal("models:\n  Card:\n    points: Int\n    score: { type: Int, renamedFrom: points }\n"))
        #expect(error.className == "Card")
        #expect(error.property == "score")
        #expect(error.message.contains("points"), "\(error)")
        // An inherited property counts as the class's own.
        _ = refusal(
            """
            models:
              Base:
                points: Int
              Card:
                extends: Base
                score: { type: Int, renamedFrom: points }
            """)
    }

    @Test("two properties renamed from one name are refused")
    func twoRenamesFromOneName() throws {
        let error = try #require(
            refusal(
                """
                models:
                  Card:
                    score: { type: Int, renamedFrom: points }
                    total: { type: Int, renamedFrom: points }
                """))
        #expect(error.className == "Card")
        #expect(["score", "total"].contains(error.property))
        #expect(error.message.contains("points"), "\(error)")
        #expect(error.message.contains("another property"), "\(error)")
    }

    @Test("renamedFrom must be a property name")
    func renamedFromNotAName() throws {
        let error = try #require(refusal("models:\n  Card:\n    score: { type: Int, renamedFrom: \"two words\" }\n"))
        #expect(error.property == "score")
    }

    @Test("onInvalid: null on a property that is not nullable is refused")
    func nullOnNonNullable() throws {
        let error = try #require(refusal("models:\n  Card:\n    rank: { type: Int, onInvalid: \"null\" }\n"))
        #expect(error.className == "Card")
        #expect(error.property == "rank")
        #expect(error.message.contains("nullable"), "\(error)")
        // In code as well.
        #expect(throws: SchemaError.self) {
            try Schema(
                classes: [
                    ModelClass(
                        name: "Card", properties: [PropertyDefinition(name: "rank", type: .int, onInvalid: .null)])
                ], scopes: [])
        }
    }

    @Test("onInvalid: null written bare in YAML (a YAML null, as docs/model.md writes it) is the null choice")
    func bareYAMLNull() throws {
        let schema = try Schema.parse(
            yaml: "models:\n  Card:\n    note: { type: String?, maxLength: 2, onInvalid: null }\n")
        #expect(schema.modelClass(named: "Card")?.property(named: "note")?.onInvalid == .null)
        // And on a property that is not nullable, the refusal says why.
        let error = try #require(refusal("models:\n  Card:\n    rank: { type: Int, onInvalid: null }\n"))
        #expect(error.message.contains("nullable"), "\(error)")
    }

    @Test("the long-form JSON carries both keys and loads back equal")
    func jsonCarriesTheKeys() throws {
        let schema = try Schema.parse(yaml: Self.yaml)
        let json = schema.jsonValue
        let size = json["models"]?["Card"]?["size"]
        #expect(size?["renamedFrom"] == "width")
        #expect(size?["onInvalid"] == "default")
        #expect(json["models"]?["Card"]?["score"]?["renamedFrom"] == "points")
        #expect(json["models"]?["Board"]?["pinned"]?["onInvalid"] == "remove-object")
        // Keys the property does not use are not written.
        #expect(json["models"]?["Card"]?["score"]?["onInvalid"] == nil)
        #expect(json["models"]?["Card"]?["rank"]?["renamedFrom"] == nil)
        let again = try Schema.parse(json: json.encoded())
        #expect(again == schema)
        #expect(again.modelClass(named: "Card")?.property(named: "size")?.renamedFrom == "width")
        #expect(again.jsonValue.encoded() == json.encoded())
    }

    @Test("the fingerprint is 32 hex digits, equal for equal schemas, different when one property changes")
    func fingerprint() throws {
        let schema = try Schema.parse(yaml: Self.yaml)
        let fingerprint = schema.fingerprint
        #expect(fingerprint.count == 32)
        #expect(fingerprint.allSatisfy { $0.isHexDigit && !$0.isUppercase }, "\(fingerprint)")
        #expect(try Schema.parse(yaml: Self.yaml).fingerprint == fingerprint)
        #expect(try Schema.parse(json: schema.jsonValue.encoded()).fingerprint == fingerprint)
        #expect(Schema.demo.fingerprint != fingerprint)

        var changed: [String: String] = [:]
        for (what, from, to) in [
            ("a bound", "max: 10", "max: 11"),
            ("onInvalid", "onInvalid: clamp", "onInvalid: default"),
            ("renamedFrom", "renamedFrom: points", "renamedFrom: pts"),
            ("a type", "score: { type: Int8", "score: { type: Int16"),
            ("a name", "note:", "memo:"),
            ("nullability", "note:  { type: String?", "note:  { type: String"),
        ] {
            var yaml = Self.yaml.replacingOccurrences(of: from, with: to)
            if what == "nullability" {
                yaml = yaml.replacingOccurrences(of: #"onInvalid: "null""#, with: "onInvalid: clamp")
            }
            #expect(yaml != Self.yaml, "\(what): the replacement did nothing")
            let other = try Schema.parse(yaml: yaml)
            #expect(other.fingerprint != fingerprint, "changing \(what) keeps the fingerprint")
            #expect(other.fingerprint.count == 32)
            changed[what] = other.fingerprint
        }
        #expect(Set(changed.values).count == changed.count, "two different schemas share a fingerprint: \(changed)")
    }
}
