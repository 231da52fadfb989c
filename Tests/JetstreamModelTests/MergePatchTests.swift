import Foundation
import JetstreamModel
import Testing

/// Merge patches of one object (docs/model.md, "Merge patches") at the model level: what
/// a patch translates to, what applying it does, where its errors point; and the expanded object
/// a read-modify-write starts from.
@Suite struct MergePatchTests {
    typealias F = Fixtures

    // MARK: - Fixtures

    static let root = F.uuid(1)
    static let s1 = F.uuid(11)
    static let s2 = F.uuid(12)
    static let s3 = F.uuid(13)
    static let a = F.uuid(21)
    static let b = F.uuid(22)
    static let c = F.uuid(23)

    /// A canvas (uuid 1) with shapes s1, s2, s3 at x 1, y 2.
    static func shapes() throws -> ScopeState { try F.canvas(shapes: 3).state }

    /// A canvas with shape s1 and nodes: `children` [a, b]; a.children [c]; c.partner a (back to
    /// an ancestor: a cycle); b.partner c (c is shared: reached through a and through b).
    static func tree() throws -> ScopeState {
        try F.accept(
            ScopeState(rootUUID: root, rootClass: F.modelClass("Canvas")),
            [
                F.change(root, "Canvas", ["shapes": F.refs(s1), "children": F.refs(a, b)]),
                F.add(s1, "Shape", ["x": 1, "y": 2]),
                F.add(a, "Node", ["name": "a", "children": F.refs(c)]),
                F.add(b, "Node", ["name": "b", "partner": F.ref(c)]),
                F.add(c, "Node", ["name": "c", "partner": F.ref(a)]),
            ])
    }

    /// A Shape's properties as stored: the given ones over the schema's defaults.
    static func shapeProperties(
        x: Double = 0, y: Double = 0, color: JSONValue = .null, label: String = "", kind: String = "rect"
    ) -> JSONObject {
        [
            "x": .number(JSONNumber(x)), "y": .number(JSONNumber(y)), "width": 100.0, "height": 100.0,
            "color": color, "label": .string(label), "kind": .string(kind),
        ]
    }

    /// A Node's properties as stored.
    static func nodeProperties(_ name: JSONValue, children: JSONValue = [], partner: JSONValue = .null) -> JSONObject {
        ["name": name, "children": children, "partner": partner]
    }

    /// An object expanded in merge-patch shape: `{"uuid","clsName",…properties}`.
    static func expanded(_ uuid: UUID, _ clsName: String, _ properties: JSONObject) -> JSONValue {
        var members = JSONObject()
        members.appendUnchecked(key: "uuid", value: F.ref(uuid))
        members.appendUnchecked(key: "clsName", value: .string(clsName))
        for member in properties { members.appendUnchecked(key: member.key, value: member.value) }
        return .object(members)
    }

    static func node(_ uuid: UUID, _ name: String, children: JSONValue = [], partner: JSONValue = .null) -> JSONValue {
        expanded(uuid, "Node", nodeProperties(.string(name), children: children, partner: partner))
    }

    /// Translates a patch that must translate; nested objects without a `uuid` get uuid 50, 51, …
    static func translate(
        _ document: JSONValue, of target: UUID, in state: ScopeState
    ) throws -> MergePatchTranslation {
        var next = 50
        return try MergePatch(target: target, document: document).translate(against: state, schema: F.schema) {
            defer { next += 1 }
            return F.uuid(next)
        }
    }

    /// Why a patch does not translate, or nil when it does.
    static func failure(_ document: JSONValue, of target: UUID, in state: ScopeState) -> MergePatch.Failure? {
        do {
            _ = try MergePatch(target: target, document: document).translate(against: state, schema: F.schema) {
                F.uuid(50)
            }
            return nil
        } catch {
            return error
        }
    }

    /// Where an error points and what kind it is: the contract (messages are for people).
    struct Located: Hashable, CustomStringConvertible {
        let path: String
        let kind: FragmentError.Kind
        init(_ path: String, _ kind: FragmentError.Kind) {
            self.path = path
            self.kind = kind
        }
        var description: String { "\(path) \(kind.rawValue)" }
    }

    static func located(_ errors: [MergePatchError]) -> [Located] { errors.map { Located($0.path, $0.kind) } }

    /// The errors of a patch refused before any change set is made.
    static func invalid(_ document: JSONValue, of target: UUID, in state: ScopeState) -> [Located]? {
        guard case .invalid(let errors)? = failure(document, of: target, in: state) else { return nil }
        #expect(errors.allSatisfy { !$0.message.isEmpty })
        return located(errors)
    }

    /// The errors of a patch that translates but whose change set is rejected (nil when accepted).
    static func rejection(_ document: JSONValue, of target: UUID, in state: ScopeState) throws -> [Located]? {
        let translation = try translate(document, of: target, in: state)
        guard case .rejected(let replies) = state.applying(translation.changeSet, schema: F.schema) else { return nil }
        let errors = translation.errors(for: replies)
        #expect(errors.allSatisfy { !$0.message.isEmpty })
        return located(errors)
    }

    /// Translates and applies a patch that must be accepted.
    static func apply(
        _ document: JSONValue, of target: UUID, in state: ScopeState
    ) throws -> (translation: MergePatchTranslation, applied: AppliedChangeSet) {
        let translation = try translate(document, of: target, in: state)
        let outcome = state.applying(translation.changeSet, schema: F.schema)
        let applied = try #require(outcome.applied, "rejected: \(outcome.replies)")
        return (translation, applied)
    }

    // MARK: - Translation and application

    @Test("a flat property set is one change fragment; the applied one is normalised")
    func flatPropertySet() throws {
        let state = try Self.shapes()
        let (translation, applied) = try Self.apply(["label": "hi", "x": 12], of: Self.s1, in: state)
        #expect(translation.fragments == [F.change(Self.s1, "Shape", ["label": "hi", "x": 12])])
        // Schema order and canonical numbers.
        #expect(applied.fragments == [F.change(Self.s1, "Shape", ["x": 12.0, "label": "hi"])])
        #expect(applied.removed == [])
        #expect(applied.state.version == state.version + 1)
        #expect(applied.state.object(Self.s1)?.propertiesJSON == Self.shapeProperties(x: 12, y: 2, label: "hi"))
        #expect(applied.state.object(Self.s2)?.propertiesJSON == Self.shapeProperties(x: 1, y: 2))
    }

    @Test("an empty patch is one empty change fragment")
    func emptyPatch() throws {
        let state = try Self.shapes()
        let (translation, applied) = try Self.apply([:], of: Self.s1, in: state)
        #expect(translation.fragments == [F.change(Self.s1, "Shape", [:])])
        #expect(applied.state.object(Self.s1) == state.object(Self.s1))
    }

    @Test("a nested existing object merges by its uuid: a change fragment after the target's")
    func nestedExistingObject() throws {
        let state = try Self.tree()
        let (translation, applied) = try Self.apply(
            ["partner": ["uuid": F.ref(Self.b), "name": "bee"], "name": "ay"], of: Self.a, in: state)
        #expect(
            translation.fragments == [
                F.change(Self.a, "Node", ["partner": F.ref(Self.b), "name": "ay"]),
                F.change(Self.b, "Node", ["name": "bee"]),
            ])
        #expect(
            applied.fragments == [
                F.change(Self.a, "Node", ["name": "ay", "partner": F.ref(Self.b)]),
                F.change(Self.b, "Node", ["name": "bee"]),
            ])
        #expect(
            applied.state.object(Self.a)?.propertiesJSON
                == Self.nodeProperties("ay", children: F.refs(Self.c), partner: F.ref(Self.b)))
        #expect(
            applied.state.object(Self.b)?.propertiesJSON == Self.nodeProperties("bee", partner: F.ref(Self.c)))
        #expect(
            applied.state.parents(of: Self.b) == [
                ParentReference(uuid: Self.root, key: "children"), ParentReference(uuid: Self.a, key: "partner"),
            ])
    }

    @Test("the target's own uuid and clsName may be given; they are not properties")
    func targetIdentityMembers() throws {
        let state = try Self.shapes()
        let translation = try Self.translate(
            ["uuid": .string(Self.s1.wireString.uppercased()), "clsName": "Shape", "y": 5], of: Self.s1, in: state)
        #expect(translation.fragments == [F.change(Self.s1, "Shape", ["y": 5])])
    }

    @Test("new nested objects: with or without clsName, without uuid; defaults for what is not given")
    func nestedNewObjects() throws {
        let state = try Self.shapes()
        let n = F.uuid(60)
        let (translation, applied) = try Self.apply(
            [
                "shapes": [
                    F.ref(Self.s1), ["x": 3], ["uuid": F.ref(F.uuid(61)), "clsName": "Shape", "y": 4, "kind": "oval"],
                ],
                "children": [["clsName": "Node", "uuid": F.ref(n), "name": "n"]],
            ], of: Self.root, in: state)
        let new = F.uuid(50)
        #expect(
            translation.fragments == [
                F.change(Self.root, "Canvas", ["shapes": F.refs(Self.s1, new, F.uuid(61)), "children": F.refs(n)]),
                F.add(new, "Shape", ["x": 3]),
                F.add(F.uuid(61), "Shape", ["y": 4, "kind": "oval"]),
                F.add(n, "Node", ["name": "n"]),
            ])
        #expect(
            applied.fragments == [
                F.change(Self.root, "Canvas", ["shapes": F.refs(Self.s1, new, F.uuid(61)), "children": F.refs(n)]),
                F.add(new, "Shape", Self.shapeProperties(x: 3)),
                F.add(F.uuid(61), "Shape", Self.shapeProperties(y: 4, kind: "oval")),
                F.add(n, "Node", Self.nodeProperties("n")),
            ])
        #expect(applied.removed == [Self.s2, Self.s3])
        #expect(applied.state.object(new)?.propertiesJSON == Self.shapeProperties(x: 3))
        #expect(applied.state.object(n)?.clsName == "Node")
        #expect(applied.state.parents(of: n) == [ParentReference(uuid: Self.root, key: "children")])
    }

    @Test("a second mention of a new object merges into it: one add, then a change")
    func newObjectMentionedTwice() throws {
        let state = try Self.tree()
        let n = F.uuid(60)
        let (translation, applied) = try Self.apply(
            [
                "children": [
                    ["uuid": F.ref(n), "name": "first"],
                    ["partner": ["uuid": F.ref(n), "name": "second"]],
                ]
            ], of: Self.root, in: state)
        let other = F.uuid(50)
        #expect(
            translation.fragments == [
                F.change(Self.root, "Canvas", ["children": F.refs(n, other)]),
                F.add(n, "Node", ["name": "first"]),
                F.add(other, "Node", ["partner": F.ref(n)]),
                F.change(n, "Node", ["name": "second"]),
            ])
        #expect(applied.state.object(n)?.propertiesJSON == Self.nodeProperties("second"))
        #expect(applied.state.object(other)?.propertiesJSON == Self.nodeProperties(.null, partner: F.ref(n)))
        // a, b and c are no longer reachable.
        #expect(applied.removed == [Self.a, Self.b, Self.c])
    }

    @Test("a whole array mixing UUID strings, existing objects and new objects")
    func mixedCollection() throws {
        let state = try Self.shapes()
        let (translation, applied) = try Self.apply(
            ["shapes": [F.ref(Self.s3), ["uuid": F.ref(Self.s1), "y": 9], ["x": 5], F.ref(Self.s2)]], of: Self.root,
            in: state)
        let new = F.uuid(50)
        #expect(
            translation.fragments == [
                F.change(Self.root, "Canvas", ["shapes": F.refs(Self.s3, Self.s1, new, Self.s2)]),
                F.change(Self.s1, "Shape", ["y": 9]),
                F.add(new, "Shape", ["x": 5]),
            ])
        #expect(
            applied.state.object(Self.root)?.propertiesJSON["shapes"] == F.refs(Self.s3, Self.s1, new, Self.s2))
        #expect(applied.state.object(Self.s1)?.propertiesJSON == Self.shapeProperties(x: 1, y: 9))
        #expect(applied.state.object(new)?.propertiesJSON == Self.shapeProperties(x: 5))
        #expect(applied.removed == [])
    }

    @Test("null sets a nullable property to null")
    func nullOnNullable() throws {
        var state = try Self.tree()
        state = try F.accept(state, [F.change(Self.s1, "Shape", ["color": 255])])
        let shape = try Self.apply(["color": nil], of: Self.s1, in: state)
        #expect(shape.translation.fragments == [F.change(Self.s1, "Shape", ["color": .null])])
        #expect(shape.applied.state.object(Self.s1)?.propertiesJSON["color"] == .null)

        let node = try Self.apply(["partner": nil, "name": nil], of: Self.b, in: state)
        #expect(node.applied.fragments == [F.change(Self.b, "Node", ["name": .null, "partner": .null])])
        #expect(node.applied.state.object(Self.b)?.propertiesJSON == Self.nodeProperties(.null))
        #expect(node.applied.state.parents(of: Self.c) == [ParentReference(uuid: Self.a, key: "children")])
    }

    @Test("null on a non-nullable property or a collection is null-not-allowed at its member")
    func nullOnNonNullable() throws {
        let state = try Self.shapes()
        #expect(try Self.rejection(["y": 3, "x": nil], of: Self.s1, in: state) == [.init("/x", .nullNotAllowed)])
        #expect(try Self.rejection(["shapes": nil], of: Self.root, in: state) == [.init("/shapes", .nullNotAllowed)])
    }

    // MARK: - Error paths

    @Test("a type mismatch in a nested object points at its member")
    func nestedTypeMismatch() throws {
        let shapes = try Self.shapes()
        #expect(
            try Self.rejection(
                ["shapes": [F.ref(Self.s1), ["uuid": F.ref(Self.s2), "x": "wide"]]], of: Self.root, in: shapes)
                == [.init("/shapes/1/x", .typeMismatch)])
        let tree = try Self.tree()
        #expect(
            try Self.rejection(["partner": ["uuid": F.ref(Self.b), "name": 5]], of: Self.a, in: tree)
                == [.init("/partner/name", .typeMismatch)])
        // Two levels down, in a new object.
        #expect(
            try Self.rejection(
                ["children": [["children": [["name": "deep", "partner": 7]]]]], of: Self.root, in: tree)
                == [.init("/children/0/children/0/partner", .typeMismatch)])
    }

    @Test("an element error points at the element")
    func elementError() throws {
        let state = try Self.shapes()
        #expect(
            try Self.rejection(["shapes": [F.ref(Self.s1), F.ref(Self.s2), "nope"]], of: Self.root, in: state)
                == [.init("/shapes/2", .typeMismatch)])
        #expect(
            try Self.rejection(
                ["shapes": [F.ref(Self.s1), F.ref(Self.s2), F.ref(F.uuid(99))]], of: Self.root, in: state)
                == [.init("/shapes/2", .missingReference)])
        // A new object of another class than the collection's.
        #expect(
            try Self.rejection(
                ["shapes": [F.ref(Self.s1), F.ref(Self.s2), ["clsName": "Node", "name": "n"]]], of: Self.root, in: state
            )
                == [.init("/shapes/2", .wrongClass)])
    }

    @Test("an unknown property points at its member, at any depth")
    func unknownProperty() throws {
        let state = try Self.shapes()
        #expect(try Self.rejection(["x": 1, "nope": 1], of: Self.s1, in: state) == [.init("/nope", .unknownProperty)])
        #expect(
            try Self.rejection(["shapes": [["uuid": F.ref(Self.s1), "nope": true]]], of: Self.root, in: state)
                == [.init("/shapes/0/nope", .unknownProperty)])
    }

    @Test("errors in several fragments are reported each at its own place, in fragment order")
    func severalErrors() throws {
        let state = try Self.shapes()
        #expect(
            try Self.rejection(
                ["name": 3, "shapes": [["uuid": F.ref(Self.s1), "y": "high"], ["x": "far"]]], of: Self.root, in: state)
                == [
                    .init("/name", .typeMismatch), .init("/shapes/0/y", .typeMismatch),
                    .init("/shapes/1/x", .typeMismatch),
                ])
    }

    @Test("member names are escaped in pointers (RFC 6901: ~ as ~0, / as ~1)")
    func escapedNames() throws {
        // Schema property names are identifiers, so only unknown members can hold '/' or '~'.
        let state = try Self.shapes()
        #expect(
            try Self.rejection(["a/b~c": 1], of: Self.s1, in: state) == [.init("/a~1b~0c", .unknownProperty)])
        #expect(
            try Self.rejection(["shapes": [["uuid": F.ref(Self.s1), "~/": 1]]], of: Self.root, in: state)
                == [.init("/shapes/0/~0~1", .unknownProperty)])
        // A '/' or '~' followed by a combining mark is one Character but still two scalars to escape.
        #expect(
            try Self.rejection(["a/\u{301}b": 1], of: Self.s1, in: state)
                == [.init("/a~1\u{301}b", .unknownProperty)])
        #expect(
            try Self.rejection(["a~\u{301}b": 1], of: Self.s1, in: state)
                == [.init("/a~0\u{301}b", .unknownProperty)])
    }

    @Test("a nested uuid that is not a UUID string is refused before any change set")
    func badNestedUUID() throws {
        let state = try Self.shapes()
        #expect(
            Self.invalid(["shapes": [["uuid": "not-a-uuid", "x": 1]]], of: Self.root, in: state)
                == [.init("/shapes/0/uuid", .typeMismatch)])
        #expect(
            Self.invalid(["shapes": [F.ref(Self.s1), ["uuid": 12]]], of: Self.root, in: state)
                == [.init("/shapes/1/uuid", .typeMismatch)])
    }

    @Test("an unknown clsName is refused at its member")
    func unknownClass() throws {
        let tree = try Self.tree()
        #expect(
            Self.invalid(["shapes": [["clsName": "Nope"]]], of: Self.root, in: tree)
                == [.init("/shapes/0/clsName", .unknownClass)])
        #expect(
            Self.invalid(
                ["children": [["uuid": F.ref(Self.a), "partner": ["clsName": "Nope"]]]], of: Self.root, in: tree)
                == [.init("/children/0/partner/clsName", .unknownClass)])
        #expect(
            Self.invalid(["partner": ["clsName": 3]], of: Self.a, in: tree) == [
                .init("/partner/clsName", .typeMismatch)
            ])
    }

    @Test("a nested existing object's clsName must be its class")
    func existingClassMismatch() throws {
        let state = try Self.tree()
        #expect(
            Self.invalid(["partner": ["uuid": F.ref(Self.b), "clsName": "Shape"]], of: Self.a, in: state)
                == [.init("/partner/clsName", .classMismatch)])
    }

    @Test("a second mention of a new object with another clsName is a class mismatch")
    func newObjectClassConflict() throws {
        // As for an existing object: the first mention fixed the class, so a contradicting one is
        // an error, not dropped.
        let state = try Self.shapes()
        let n = F.ref(F.uuid(60))
        #expect(
            Self.invalid(
                ["shapes": [["uuid": n, "clsName": "Shape", "x": 1], ["uuid": n, "clsName": "Node"]]], of: Self.root,
                in: state) == [.init("/shapes/1/clsName", .classMismatch)])
    }

    @Test("a top-level uuid or clsName must name the target")
    func topLevelIdentity() throws {
        let state = try Self.shapes()
        #expect(
            Self.invalid(["uuid": F.ref(Self.s2), "x": 1], of: Self.s1, in: state) == [.init("/uuid", .unknownObject)])
        #expect(Self.invalid(["uuid": 1], of: Self.s1, in: state) == [.init("/uuid", .unknownObject)])
        #expect(Self.invalid(["clsName": "Canvas"], of: Self.s1, in: state) == [.init("/clsName", .classMismatch)])
    }

    @Test(
        "a document that is not an object is refused as a whole",
        arguments: [[1, 2], "x", 3, true, nil] as [JSONValue])
    func nonObjectDocument(_ document: JSONValue) throws {
        #expect(Self.invalid(document, of: Self.s1, in: try Self.shapes()) == [.init("", .typeMismatch)])
    }

    @Test("a target the scope does not hold is objectNotFound")
    func targetNotFound() throws {
        let state = try Self.shapes()
        #expect(Self.failure(["x": 1], of: F.uuid(99), in: state) == .objectNotFound(F.uuid(99)))
        #expect(Self.failure([1], of: F.uuid(99), in: state) == .objectNotFound(F.uuid(99)))
    }

    @Test("an operations object: inserted new objects become adds and UUID strings; anchors become UUIDs")
    func operationsObject() throws {
        let state = try Self.shapes()
        let translation = try Self.translate(
            ["shapes": ["insert": [["x": 7], F.ref(Self.s3)], "before": ["uuid": F.ref(Self.s1)]]], of: Self.root,
            in: state)
        let new = F.uuid(50)
        #expect(
            translation.fragments == [
                F.change(Self.root, "Canvas", ["shapes": ["insert": F.refs(new, Self.s3), "before": F.ref(Self.s1)]]),
                F.add(new, "Shape", ["x": 7]),
            ])
    }

    // MARK: - Expansion

    @Test("depth 0 is the object as it is read without expansion")
    func depthZero() throws {
        let state = try Self.tree()
        for uuid in [Self.root, Self.a, Self.c, Self.s1] {
            #expect(try state.objectJSON(uuid, depth: 0) == state.objectJSON(uuid))
        }
        #expect(try state.objectJSON(F.uuid(99), depth: 2) == nil)
    }

    @Test("depth 1 expands references and collection elements one level")
    func depthOne() throws {
        let state = try Self.tree()
        let expected: JSONValue = [
            "uuid": F.ref(Self.root), "clsName": "Canvas", "owner": nil,
            "properties": [
                "name": nil,
                "shapes": [Self.expanded(Self.s1, "Shape", Self.shapeProperties(x: 1, y: 2))],
                "children": [
                    Self.node(Self.a, "a", children: F.refs(Self.c)), Self.node(Self.b, "b", partner: F.ref(Self.c)),
                ],
            ],
            "parents": [],
        ]
        #expect(try state.objectJSON(Self.root, depth: 1) == expected)
        // The top object keeps its parents.
        #expect(
            try state.objectJSON(Self.c, depth: 1) == [
                "uuid": F.ref(Self.c), "clsName": "Node", "owner": nil,
                "properties": [
                    "name": "c", "children": [], "partner": Self.node(Self.a, "a", children: F.refs(Self.c)),
                ],
                "parents": [["uuid": F.ref(Self.a), "key": "children"], ["uuid": F.ref(Self.b), "key": "partner"]],
            ])
    }

    @Test("depth 2 expands two levels; deeper references stay UUID strings")
    func depthTwo() throws {
        let state = try Self.tree()
        let c = Self.node(Self.c, "c", partner: F.ref(Self.a))
        #expect(
            try state.objectJSON(Self.root, depth: 2)?["properties"]?["children"] == [
                Self.node(Self.a, "a", children: [c]), Self.node(Self.b, "b", partner: c),
            ])
    }

    @Test("a cycle stops at the object already on the path; a shared object is expanded on each path")
    func cycleAndSharing() throws {
        let state = try Self.tree()
        // Through a: c's partner is a, on the path. Through b: a is not on the path, so it is
        // expanded, and its child c (now on the path) is not.
        let expected: JSONValue = [
            Self.node(Self.a, "a", children: [Self.node(Self.c, "c", partner: F.ref(Self.a))]),
            Self.node(
                Self.b, "b",
                partner: Self.node(Self.c, "c", partner: Self.node(Self.a, "a", children: F.refs(Self.c)))),
        ]
        #expect(try state.objectJSON(Self.root, depth: 3)?["properties"]?["children"] == expected)
        #expect(try state.objectJSON(Self.root, depth: 10)?["properties"]?["children"] == expected)
        // From a itself: a is on the path from the start.
        #expect(
            try state.objectJSON(Self.a, depth: 10)?["properties"]
                == ["name": "a", "children": [Self.node(Self.c, "c", partner: F.ref(Self.a))], "partner": nil])
    }

    @Test("an object that refers to itself stays a UUID string")
    func selfReference() throws {
        let state = try F.accept(Self.tree(), [F.change(Self.b, "Node", ["partner": F.ref(Self.b)])])
        #expect(
            try state.objectJSON(Self.b, depth: 5)?["properties"]
                == ["name": "b", "children": [], "partner": F.ref(Self.b)])
    }

    @Test("the same object listed twice is expanded twice")
    func duplicateElements() throws {
        let state = try F.accept(Self.tree(), [F.change(Self.root, "Canvas", ["shapes": F.refs(Self.s1, Self.s1)])])
        let shape = Self.expanded(Self.s1, "Shape", Self.shapeProperties(x: 1, y: 2))
        #expect(try state.objectJSON(Self.root, depth: 1)?["properties"]?["shapes"] == [shape, shape])
    }

    @Test("an expansion over maxBytes is tooLarge")
    func tooLarge() throws {
        let state = try Self.tree()
        #expect(throws: ScopeState.ExpansionError.tooLarge(maxBytes: 300)) {
            try state.objectJSON(Self.root, depth: 3, maxBytes: 300)
        }
        let full = try #require(try state.objectJSON(Self.root, depth: 3))
        #expect(try state.objectJSON(Self.root, depth: 3, maxBytes: 100_000) == full)
    }

    @Test(
        "what is answered never exceeds maxBytes",
        arguments: [MergePatchTests.root, MergePatchTests.a, MergePatchTests.s1])
    func maxBytesIsABound(_ uuid: UUID) throws {
        // The shape s1 has nothing to expand: maxBytes bounds the answer, not only the expansion.
        let state = try Self.tree()
        let full = try #require(try state.objectJSON(uuid, depth: 3))
        let size = full.encoded().count
        var answered = 0
        for maxBytes in stride(from: 0, through: size + 1_000, by: 10) {
            do {
                let result = try state.objectJSON(uuid, depth: 3, maxBytes: maxBytes)
                #expect(result == full)
                #expect(size <= maxBytes, "\(size) bytes answered for maxBytes \(maxBytes)")
                answered += 1
            } catch {
                #expect(error == .tooLarge(maxBytes: maxBytes))
            }
        }
        #expect(answered > 0)
    }
}
