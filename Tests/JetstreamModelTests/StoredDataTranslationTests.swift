import Foundation
import JetstreamModel
import Testing

/// ``StoredDataTranslation``: what a scope stored under an earlier schema reads as under the current
/// one — renames carried, dropped properties and classes gone, `onInvalid` fixes, and every value
/// the schema refuses without one recorded as a problem that describes the current state only.
@Suite("Stored data translation")
struct StoredDataTranslationTests {
    typealias F = Fixtures

    /// The current schema: the stored fragments below were written under an earlier one (with
    /// `points` instead of `score`, an `obsolete` property, a `Sticker` class, wider enums).
    static let schema: Schema = try! Schema.parse(
        yaml: """
            models:
              Board:
                title: String?
                cards: [Card]
                pinned: Card?
                few: { type: "[Card]", maxCount: 2, onInvalid: clamp }
                mode: { enum: [plain, fancy], onInvalid: remove-object }
              Card:
                score: { type: Int8, renamedFrom: points }
                stars: { type: Int8, max: 5 }
                rank: { type: Int16, min: 0, max: 10, onInvalid: clamp }
                small: { type: Int8, onInvalid: clamp }
                tiny: { type: UInt8, onInvalid: clamp }
                big: { type: Int64, onInvalid: clamp }
                huge: { type: UInt64, onInvalid: clamp }
                weight: { type: Float, onInvalid: clamp }
                ratio: { type: Float, min: 0, max: 1, onInvalid: clamp }
                label: { type: String, maxLength: 3, onInvalid: clamp }
                code: { type: String, maxLength: 3, pattern: "[a-z]+", default: "x", onInvalid: clamp }
                grades: { type: "[Int8]", min: 0, max: 10, maxCount: 3, onInvalid: clamp }
                color: { type: Int, max: 5, default: 2, onInvalid: default }
                note: { type: String?, maxLength: 2, onInvalid: "null" }
                status: { enum: [open, done], onInvalid: remove-object }
                children: [Card]
            scopes:
              "board-*": { root: Board }
            """, file: "translation.yaml")

    let root = F.uuid(1)
    let c1 = F.uuid(11)
    let c2 = F.uuid(12)
    let c3 = F.uuid(13)
    let sticker = F.uuid(21)

    /// A board snapshot (root change first) holding `cards`, with `boardProperties` besides.
    func snapshot(cards: [SyncFragment], board boardProperties: JSONObject = JSONObject()) -> [SyncFragment] {
        var properties = boardProperties
        if properties["cards"] == nil { properties["cards"] = .array(cards.map { F.ref($0.uuid) }) }
        return [F.change(root, "Board", properties)] + cards
    }

    /// Loads `snapshot` then each change set of `tail` as recovery does, and finishes.
    func load(
        _ snapshot: [SyncFragment], tail: [[SyncFragment]] = [], translation: inout StoredDataTranslation
    ) throws -> ScopeState {
        var state = try ScopeState(
            importing: translation.translate(snapshot), rootUUID: root, version: 0, schema: Self.schema)
        for fragments in tail {
            let outcome = state.applying(translation.translate(fragments), schema: Self.schema, limits: .unlimited)
            state = try #require(outcome.applied, "the translated change set was refused: \(outcome.replies)").state
        }
        return translation.finish(state, schema: Self.schema)
    }

    func load(
        _ snapshot: [SyncFragment], tail: [[SyncFragment]] = []
    ) throws -> (
        state: ScopeState, translation: StoredDataTranslation
    ) {
        var translation = StoredDataTranslation(schema: Self.schema)
        let state = try load(snapshot, tail: tail, translation: &translation)
        return (state, translation)
    }

    /// The value `property` of `card` has after loading one stored card with `stored`.
    func loaded(_ property: String, stored: JSONValue) throws -> (value: Value?, translation: StoredDataTranslation) {
        let (state, translation) = try load(snapshot(cards: [F.add(c1, "Card", [property: stored])]))
        return (state.object(c1)?[property], translation)
    }

    // MARK: Renames and removals

    @Test("renamedFrom carries the stored value to the new name, in snapshots and logged changes")
    func renameCarriesTheValue() throws {
        var translation = StoredDataTranslation(schema: Self.schema)
        let translated = translation.translate([F.add(c1, "Card", ["points": 4])])
        #expect(translated.count == 1)
        #expect(translated[0].properties["score"]?.number?.doubleValue == 4)
        #expect(translated[0].properties["points"] == nil)
        #expect(translation.changedAnything)
        #expect(translation.fixedValues == 0)

        let (state, loaded) = try load(
            snapshot(cards: [F.add(c1, "Card", ["points": 4])]), tail: [[F.change(c1, "Card", ["points": 6])]])
        #expect(state.object(c1)?["score"] == .int(6))
        #expect(loaded.problems.isEmpty)
    }

    @Test("renamedFrom carries nothing when the object also has a value under the new name")
    func renameYieldsToTheNewName() throws {
        var translation = StoredDataTranslation(schema: Self.schema)
        let translated = translation.translate([F.add(c1, "Card", ["points": 4, "score": 7])])
        #expect(translated[0].properties["score"]?.number?.doubleValue == 7)
        #expect(translated[0].properties.count == 1)
        // The other order in the stored object reads the same.
        let reversed = translation.translate([F.add(c2, "Card", ["score": 7, "points": 4])])
        #expect(reversed[0].properties["score"]?.number?.doubleValue == 7)
        #expect(reversed[0].properties.count == 1)
        let (state, _) = try load(snapshot(cards: [F.add(c1, "Card", ["points": 4, "score": 7])]))
        #expect(state.object(c1)?["score"] == .int(7))
    }

    @Test("a property the schema no longer has is dropped from fragments and the state")
    func removedPropertyIsDropped() throws {
        var translation = StoredDataTranslation(schema: Self.schema)
        let translated = translation.translate([F.add(c1, "Card", ["obsolete": "x", "stars": 3])])
        #expect(translated[0].properties.count == 1)
        #expect(translated[0].properties["stars"]?.number?.doubleValue == 3)
        #expect(translation.changedAnything)
        // A logged change of only removed properties loads as a change of nothing.
        let (state, loaded) = try load(
            snapshot(cards: [F.add(c1, "Card", ["obsolete": "x"])]), tail: [[F.change(c1, "Card", ["obsolete": "y"])]])
        #expect(state.object(c1)?["obsolete"] == nil)
        #expect(state.object(c1)?.propertiesJSON["obsolete"] == nil)
        #expect(loaded.problems.isEmpty)
    }

    @Test("an object of a class the schema lacks is an unknown-class problem and leaves every reference")
    func unknownClass() throws {
        // The board lists the sticker before its add, and points at it: both references go.
        let stored = [
            F.change(root, "Board", ["cards": F.refs(c1, sticker), "pinned": F.ref(sticker)]),
            F.add(sticker, "Sticker", ["text": "hi"]), F.add(c1, "Card"),
        ]
        var translation = StoredDataTranslation(schema: Self.schema)
        let translated = translation.translate(stored)
        #expect(translated.map(\.uuid) == [root, c1])
        #expect(translated[0].properties["cards"] == F.refs(c1))
        #expect(translated[0].properties["pinned"] == .null)

        var loading = StoredDataTranslation(schema: Self.schema)
        // A later logged change that still names the sticker loses it too.
        let state = try load(
            stored,
            tail: [
                [F.change(root, "Board", ["pinned": F.ref(sticker), "cards": ["insert": F.refs(sticker)]])]
            ], translation: &loading)
        #expect(state.root["cards"] == .references([c1]))
        #expect(state.root["pinned"] == .null)
        #expect(!state.contains(sticker))
        let problem = try #require(loading.problems.first)
        #expect(loading.problems.count == 1)
        #expect(problem.uuid == sticker)
        #expect(problem.className == "Sticker")
        #expect(problem.property == nil)
        #expect(problem.value == nil)
        #expect(problem.kind == .unknownClass)
        #expect(problem.description == "object \(sticker.wireString) Sticker: unknown-class: \(problem.reason)")
    }

    @Test("an object of a removed class that the log let go of since is not reported")
    func unknownClassLetGo() throws {
        let stored = [
            F.change(root, "Board", ["cards": F.refs(c1, sticker), "pinned": F.ref(sticker)]),
            F.add(sticker, "Sticker", ["text": "hi"]), F.add(c1, "Card"),
        ]
        let (state, translation) = try load(
            stored,
            tail: [
                [F.change(root, "Board", ["cards": ["remove": F.refs(sticker)]])],
                [F.change(root, "Board", ["pinned": .null])],
            ])
        #expect(state.root["cards"] == .references([c1]))
        #expect(translation.problems.isEmpty, "\(translation.problems)")

        // Still listed by one property: still in the state, still reported.
        let (_, holding) = try load(stored, tail: [[F.change(root, "Board", ["pinned": .null])]])
        #expect(holding.problems.map(\.uuid) == [sticker])
    }

    @Test("what only an object of a removed class held is cut loose with it, not refused as unattached")
    func unknownClassChildren() throws {
        // The sticker's add lists c2 (a Card) among its properties: with the sticker gone, nothing
        // attaches c2, in the snapshot or in a logged change set.
        let stored = [
            F.change(root, "Board", ["cards": F.refs(c1, sticker)]),
            F.add(sticker, "Sticker", ["cards": F.refs(c2)]), F.add(c1, "Card"), F.add(c2, "Card"),
        ]
        let (state, translation) = try load(
            stored,
            tail: [
                [F.add(c3, "Card"), F.change(sticker, "Sticker", ["cards": ["insert": F.refs(c3)]])],
                [F.change(c2, "Card", ["stars": 1])],
            ])
        #expect(state.count == 2, "root and c1")
        #expect(!state.contains(c2) && !state.contains(c3))
        #expect(translation.problems.map(\.uuid) == [sticker])
    }

    // MARK: onInvalid

    @Test("onInvalid: default loads the property's default and counts the fix")
    func onInvalidDefault() throws {
        let (value, translation) = try loaded("color", stored: 9)
        #expect(value == .int(2))
        #expect(translation.fixedValues == 1)
        #expect(translation.problems.isEmpty)
        // A value that fits is kept, not fixed.
        let (kept, untouched) = try loaded("color", stored: 4)
        #expect(kept == .int(4))
        #expect(untouched.fixedValues == 0)
    }

    @Test(
        "onInvalid: clamp brings a number into min…max and its type's range (integers toward zero)",
        arguments: [
            ("rank", 14.0, Value.int(10)), ("rank", -3, .int(0)), ("rank", 7.9, .int(7)),
            ("small", 300, .int(127)), ("small", -300, .int(-128)), ("small", 3.7, .int(3)), ("small", -3.7, .int(-3)),
            ("tiny", -5, .uint(0)), ("tiny", 1000, .uint(255)), ("tiny", 2.5, .uint(2)),
            ("weight", 1e300, .float(.greatestFiniteMagnitude)), ("weight", -1e300, .float(-.greatestFiniteMagnitude)),
            ("ratio", 12.5, .float(1)), ("ratio", -0.5, .float(0)),
        ])
    func onInvalidClampNumbers(property: String, stored: Double, expected: Value) throws {
        let (value, translation) = try loaded(property, stored: .number(JSONNumber(stored)))
        #expect(value == expected, "\(property) stored \(stored)")
        #expect(translation.fixedValues == 1)
        #expect(translation.problems.isEmpty)
    }

    @Test(
        "onInvalid: clamp brings a 64-bit integer beyond its type to the type's bound",
        arguments: [
            ("big", 1e19, Value.int(.max)), ("big", -1e19, .int(.min)), ("huge", 1e20, .uint(.max)),
            ("huge", -1, .uint(0)),
        ])
    func onInvalidClamp64Bit(property: String, stored: Double, expected: Value) throws {
        let (value, translation) = try loaded(property, stored: .number(JSONNumber(stored)))
        #expect(value == expected, "\(property) stored \(stored)")
        #expect(translation.fixedValues == 1)
    }

    @Test("onInvalid: clamp cuts a string to maxLength, counting Unicode scalars")
    func onInvalidClampStrings() throws {
        #expect(try loaded("label", stored: "abcdef").value == .string("abc"))
        #expect(try loaded("label", stored: "🙂🙂🙂🙂").value == .string("🙂🙂🙂"))
        let (kept, translation) = try loaded("label", stored: "ab")
        #expect(kept == .string("ab"))
        #expect(translation.fixedValues == 0)
    }

    @Test("onInvalid: clamp with no value that fits (a cut string the pattern refuses) loads the default")
    func onInvalidClampWithoutAFit() throws {
        let (value, translation) = try loaded("code", stored: "ABCDEF")
        #expect(value == .string("x"))
        #expect(translation.fixedValues == 1)
        #expect(translation.problems.isEmpty)
        #expect(try loaded("code", stored: "abcdef").value == .string("abc"))
    }

    @Test("onInvalid: clamp cuts a collection to maxCount after clamping its elements")
    func onInvalidClampCollections() throws {
        let (value, translation) = try loaded("grades", stored: [5, 20, 300, -1])
        #expect(value == .list([.int(5), .int(10), .int(10)]))
        #expect(translation.fixedValues == 1)
        // Elements alone out of range: clamped, none cut.
        #expect(try loaded("grades", stored: [-4, 11]).value == .list([.int(0), .int(10)]))
        // An inserting operation in a logged change has its elements clamped too.
        let (state, loaded) = try load(
            snapshot(cards: [F.add(c1, "Card", ["grades": [1]])]),
            tail: [[F.change(c1, "Card", ["grades": ["insert": [50, 2]]])]])
        #expect(state.object(c1)?["grades"] == .list([.int(1), .int(10), .int(2)]))
        #expect(loaded.fixedValues == 1)
    }

    @Test("onInvalid: clamp cuts a collection of references to maxCount; the objects cut off leave the state")
    func onInvalidClampReferenceCollection() throws {
        let cards = [F.add(c1, "Card"), F.add(c2, "Card"), F.add(c3, "Card")]
        let stored = [F.change(root, "Board", ["few": F.refs(c1, c2, c3)])] + cards
        let (state, translation) = try load(stored)
        #expect(state.root["few"] == .references([c1, c2]))
        #expect(!state.contains(c3))
        #expect(translation.fixedValues == 1)
        #expect(translation.problems.isEmpty)
    }

    @Test("onInvalid: null loads null")
    func onInvalidNull() throws {
        let (value, translation) = try loaded("note", stored: "long")
        #expect(value == .null)
        #expect(translation.fixedValues == 1)
        #expect(translation.problems.isEmpty)
    }

    @Test("onInvalid: remove-object takes the object out through finish: collections drop it, a to-one becomes null")
    func onInvalidRemoveObject() throws {
        let stored = snapshot(
            cards: [
                F.add(c1, "Card"),
                // Also refused without onInvalid: a problem that goes with the object.
                F.add(c2, "Card", ["status": "archived", "stars": 9, "children": F.refs(c3)]),
                F.add(c3, "Card"),
            ], board: ["cards": F.refs(c1, c2), "pinned": F.ref(c2)])
        var translation = StoredDataTranslation(schema: Self.schema)
        let imported = try ScopeState(
            importing: translation.translate(stored), rootUUID: root, version: 4, schema: Self.schema)
        // Until finish the object is there, its refused value at the default.
        #expect(imported.object(c2)?["status"] == .string("open"))
        #expect(translation.fixedValues == 1)

        let state = translation.finish(imported, schema: Self.schema)
        #expect(!state.contains(c2))
        #expect(!state.contains(c3), "what only the removed object held leaves with it")
        #expect(state.contains(c1))
        #expect(state.root["cards"] == .references([c1]))
        #expect(state.root["pinned"] == .null)
        #expect(state.version == 4, "the removal is part of the loaded version")
        #expect(translation.problems.isEmpty)
    }

    @Test("a to-one reference is always nullable, so remove-object always has null to leave its referrers with")
    func toOneReferencesAreNullable() {
        // finish's report of a referrer that cannot become null has no schema to happen in.
        #expect(throws: SchemaError.self) {
            try Schema.parse(
                yaml: """
                    models:
                      Board:
                        lead: Card
                      Card:
                        status: { enum: [open], onInvalid: remove-object }
                    """)
        }
    }

    @Test("onInvalid: remove-object found in a logged change set removes the object at finish")
    func onInvalidRemoveObjectFromTheLog() throws {
        let (state, translation) = try load(
            snapshot(cards: [F.add(c1, "Card"), F.add(c2, "Card")]),
            tail: [[F.change(c2, "Card", ["status": "archived"])]])
        #expect(state.root["cards"] == .references([c1]))
        #expect(!state.contains(c2))
        #expect(translation.problems.isEmpty)
    }

    @Test("onInvalid: remove-object cannot remove the root: reported, the root stays")
    func onInvalidRemoveObjectOfTheRoot() throws {
        let (state, translation) = try load(snapshot(cards: [F.add(c1, "Card")], board: ["mode": "gaudy"]))
        #expect(state.contains(root))
        #expect(state.contains(c1))
        let problem = try #require(translation.problems.first)
        #expect(translation.problems.count == 1)
        #expect(problem.uuid == root)
        #expect(problem.className == "Board")
        #expect(problem.property == nil)
        #expect(problem.reason.contains("root"))
    }

    // MARK: Problems

    @Test("a refused value without onInvalid is a problem with the stored value and its kind; the default stands in")
    func problemCarriesValueAndKind() throws {
        let (state, translation) = try load(
            snapshot(cards: [F.add(c1, "Card", ["stars": 9, "points": "many"]), F.add(c2, "Card", ["stars": 2])]))
        #expect(state.object(c1)?["stars"] == .int(0))
        #expect(state.object(c1)?["score"] == .int(0))
        #expect(state.object(c2)?["stars"] == .int(2))
        #expect(translation.fixedValues == 0)
        let problems = translation.problems
        #expect(problems.count == 2, "\(problems)")
        let stars = try #require(problems.first { $0.property == "stars" })
        #expect(stars.uuid == c1)
        #expect(stars.className == "Card")
        #expect(stars.value == 9)
        #expect(stars.kind == .outOfRange)
        #expect(
            stars.description.hasPrefix("object \(c1.wireString) Card.stars: stored 9: out-of-range: 9 is above max"))
        #expect(stars.description == "object \(c1.wireString) Card.stars: stored 9: out-of-range: \(stars.reason)")
        // A renamed property's problem is named by its new name, with the value as stored.
        let score = try #require(problems.first { $0.property == "score" })
        #expect(score.value == "many")
        #expect(score.kind == .typeMismatch)
        #expect(score.jsonValue["kind"] == "type-mismatch")
        #expect(score.jsonValue["class"] == "Card")
        #expect(score.jsonValue["uuid"] == .string(c1.wireString))
    }

    @Test("a later valid value for the same object and property clears its problem")
    func laterValidValueClears() throws {
        let stored = snapshot(cards: [F.add(c1, "Card", ["stars": 9]), F.add(c2, "Card", ["stars": 8])])
        let (state, translation) = try load(stored, tail: [[F.change(c1, "Card", ["stars": 4])]])
        #expect(state.object(c1)?["stars"] == .int(4))
        #expect(translation.problems.map(\.uuid) == [c2], "only c2's problem is left")
        // A later refused value opens it again.
        let (_, reopened) = try load(
            stored, tail: [[F.change(c1, "Card", ["stars": 4])], [F.change(c1, "Card", ["stars": 7])]])
        #expect(reopened.problems.map(\.uuid) == [c1, c2])
        #expect(reopened.problems.first?.value == 7)
    }

    @Test("a problem of an object that is gone by finish is forgotten")
    func problemOfAGoneObjectIsForgotten() throws {
        let stored = snapshot(cards: [F.add(c1, "Card", ["stars": 9]), F.add(c2, "Card")])
        let (state, translation) = try load(stored, tail: [[F.change(root, "Board", ["cards": F.refs(c2)])]])
        #expect(!state.contains(c1))
        #expect(translation.problems.isEmpty)
    }

    @Test("translate returns the very fragments when nothing needs a change")
    func nothingChanges() throws {
        let fragments = snapshot(
            cards: [
                F.add(c1, "Card", ["score": 3, "stars": 5, "label": "abc", "grades": [1, 2], "status": "done"]),
                F.add(c2, "Card", ["note": "ok", "children": F.refs()]),
            ], board: ["title": "t", "cards": F.refs(c1, c2), "pinned": F.ref(c1)])
        var translation = StoredDataTranslation(schema: Self.schema)
        #expect(translation.translate(fragments) == fragments)
        #expect(
            translation.translate([F.change(c1, "Card", ["grades": ["insert": [4]]])]) == [
                F.change(c1, "Card", ["grades": ["insert": [4]]])
            ])
        #expect(!translation.changedAnything)
        #expect(translation.fixedValues == 0)
        #expect(translation.problems.isEmpty)
    }
}
