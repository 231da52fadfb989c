import Foundation
import JetstreamModel
import Testing

/// The schema's ownership and write rules (`rules: { write, delete }`, a property's `write` and
/// `immutable`), judged by the model core for every kind of fragment: a change, an add under a
/// parent, a removal by detaching.
@Suite("Write rules")
struct WriteRulesTests {
    static let yaml = """
        models:
          Board:
            title: { type: String, write: "role:admin" }
            shapes: [Shape]
            groups: [Group]
            notes: [Note]
            badges: [Badge]
          Group:
            rules: { write: owner, delete: owner }
            members: [Shape]
          Shape:
            rules: { write: owner, delete: owner }
            x: Float
            createdAt: { type: String?, immutable: true }
          Circle:
            extends: Shape
            radius: Float
          Note:
            text: String
            pinned: { type: Bool, write: owner }
            color: { type: String, default: yellow, write: "role:designer" }
          Badge:
            rules: { write: "role:editor" }
            text: String
        scopes:
          "board-*": { root: Board }
        """

    static let schema = try! Schema.parse(yaml: yaml, file: "rules.yaml")
    static let root = Fixtures.uuid(1)
    static let ada = ChangeAuthor(subject: "ada")
    static let bob = ChangeAuthor(subject: "bob")
    static let anonymous = ChangeAuthor(subject: nil)

    typealias F = Fixtures

    /// A board with ada's shape 11 (createdAt "t0") in ada's group 21, ada's note 31, and shape 12
    /// and note 32 added anonymously.
    static func board() throws -> ScopeState {
        var state = ScopeState(rootUUID: root, rootClass: schema.modelClass(named: "Board")!)
        state = try accept(
            state,
            [
                F.add(F.uuid(11), "Shape", ["x": 1, "createdAt": "t0"]),
                F.add(F.uuid(21), "Group", ["members": F.refs(F.uuid(11))]),
                F.add(F.uuid(31), "Note", ["text": "a"]),
                F.change(root, "Board", ["groups": F.refs(F.uuid(21)), "notes": F.refs(F.uuid(31))]),
            ], by: ada)
        return try accept(
            state,
            [
                F.add(F.uuid(12), "Shape", ["x": 2]), F.add(F.uuid(32), "Note", ["text": "b"]),
                F.change(root, "Board", ["shapes": F.refs(F.uuid(12)), "notes": F.refs(F.uuid(31), F.uuid(32))]),
            ], by: anonymous)
    }

    static func accept(_ state: ScopeState, _ fragments: [SyncFragment], by author: ChangeAuthor) throws -> ScopeState {
        let outcome = state.applying(fragments, schema: schema, author: author)
        return try #require(outcome.applied, "expected acceptance, got \(outcome.replies)").state
    }

    /// Each fragment's error as `kind property`, `{}` for none; nil when the set was accepted.
    static func refusals(_ state: ScopeState, _ fragments: [SyncFragment], by author: ChangeAuthor) -> [String]? {
        guard case .rejected(let replies) = state.applying(fragments, schema: schema, author: author) else {
            return nil
        }
        return replies.map { reply in
            guard let error = reply.error else { return "{}" }
            return [error.kind.rawValue, error.property].compactMap { $0 }.joined(separator: " ")
        }
    }

    // MARK: - The schema

    @Test("rules, write and immutable are read, inherited by subclasses and written back as read")
    func schemaReadsRules() throws {
        let schema = Self.schema
        let shape = try #require(schema.modelClass(named: "Shape"))
        #expect(shape.rules == ClassRules(write: .owner, delete: .owner))
        #expect(try #require(schema.modelClass(named: "Circle")).rules == shape.rules)
        #expect(try #require(schema.modelClass(named: "Badge")).rules == ClassRules(write: .role("editor")))
        #expect(shape.property(named: "createdAt")?.isImmutable == true)
        #expect(schema.modelClass(named: "Note")?.property(named: "pinned")?.write == .owner)
        #expect(schema.modelClass(named: "Note")?.rules == .open)
        #expect(schema.hasRules)
        #expect(try Schema.parse(tree: schema.jsonValue) == schema)
        #expect(schema.jsonValue["models"]?["Shape"]?["rules"] == ["write": "owner", "delete": "owner"])
        #expect(schema.jsonValue["models"]?["Circle"]?["rules"] == nil, "inherited, not declared")
        #expect(schema.jsonValue["models"]?["Shape"]?["createdAt"]?["immutable"] == true)
    }

    @Test("a schema without rules writes none, and checks nothing")
    func noRules() throws {
        #expect(!Schema.demo.hasRules)
        #expect(Schema.demo.jsonValue.encodedString().contains("rules") == false)
        #expect(Schema.demo.jsonValue.encodedString().contains("immutable") == false)
    }

    @Test("schemas that differ only by write rules may serve one store side by side; their fingerprints differ")
    func rulesAndRollingUpgrades() throws {
        let open = try Schema.parse(
            yaml: Self.yaml.replacingOccurrences(of: "rules: { write: owner, delete: owner }", with: "rules: {}")
                .replacingOccurrences(of: ", immutable: true", with: ""))
        #expect(!open.modelClass(named: "Shape")!.hasRules)
        #expect(Self.schema.rollingUpgradeConflicts(with: open).isEmpty)
        #expect(open.rollingUpgradeConflicts(with: Self.schema).isEmpty)
        #expect(open.fingerprint != Self.schema.fingerprint)
    }

    @Test("a property called rules is still a property when it is a type or has type/enum")
    func propertyCalledRules() throws {
        let schema = try Schema.parse(
            yaml: """
                models:
                  Game: { rules: String, modes: { type: "[String]" } }
                  Match: { rules: { type: Int, default: 3 } }
                scopes: { "g-*": Game }
                """)
        #expect(schema.modelClass(named: "Game")?.property(named: "rules")?.type == .string)
        #expect(schema.modelClass(named: "Game")?.rules == .open)
        #expect(schema.modelClass(named: "Match")?.property(named: "rules")?.defaultValue == .int(3))
    }

    @Test(
        "a bad rule is refused with the class, the property and the choices",
        arguments: [
            (
                "Shape: { rules: { write: owners }, x: Float }",
                "'write' must be any, owner or role:<name>, got 'owners'"
            ),
            ("Shape: { rules: { update: owner }, x: Float }", "unknown key 'update' in 'rules'"),
            ("Shape: { x: { type: Float, write: \"role:\" } }", "'write' must be any, owner or role:<name>"),
            ("Shape: { x: { type: Float, immutable: yes please } }", "'immutable' must be true or false"),
        ])
    func badRules(model: String, message: String) {
        #expect {
            try Schema.parse(yaml: "models:\n  \(model)\nscopes: { \"s-*\": Shape }\n")
        } throws: { error in
            "\(error)".contains(message) && "\(error)".contains("class Shape")
        }
    }

    // MARK: - Owners

    @Test("an object is owned by the subject whose set added it; anonymous adds and the root have none")
    func ownersAreRecorded() throws {
        let state = try Self.board()
        #expect(state.object(F.uuid(11))?.owner == "ada")
        #expect(state.object(F.uuid(21))?.owner == "ada")
        #expect(state.object(F.uuid(12))?.owner == nil)
        #expect(state.root.owner == nil)
        #expect(state.objectJSON(F.uuid(11))?["owner"] == "ada")
        #expect(state.objectJSON(F.uuid(12))?["owner"] == .null)
        #expect(state.owners == [F.uuid(11): "ada", F.uuid(21): "ada", F.uuid(31): "ada"])
        // Full states carry no owners: a snapshot keeps them beside its fragments.
        let copy = try ScopeState(
            importing: state.exportFragments(), rootUUID: Self.root, version: state.version, schema: Self.schema)
        #expect(copy != state)
        #expect(copy.withOwners(state.owners) == state)
    }

    @Test("the server's own apply records its subject as owner and judges nothing")
    func serverIsNotJudged() throws {
        let state = try Self.board()
        let next = try Self.accept(
            state,
            [
                F.change(F.uuid(11), "Shape", ["x": 9, "createdAt": "t9"]),
                F.add(F.uuid(13), "Shape"), F.change(Self.root, "Board", ["shapes": F.refs(F.uuid(13))]),
            ], by: .server(subject: "carol"))
        #expect(next.object(F.uuid(13))?.owner == "carol")
        #expect(next.object(F.uuid(12)) == nil, "anonymous shape 12 detached and removed")
    }

    // MARK: - Changes

    @Test("a change by another subject to an owner-only class is forbidden; its owner may")
    func changeOfAnOwnedObject() throws {
        let state = try Self.board()
        let change = [F.change(F.uuid(11), "Shape", ["x": 5])]
        #expect(Self.refusals(state, change, by: Self.bob) == ["forbidden x"])
        #expect(Self.refusals(state, change, by: Self.anonymous) == ["forbidden x"])
        #expect(try Self.accept(state, change, by: Self.ada).object(F.uuid(11))?["x"] == .float(5))
    }

    @Test("setting a value the object already holds is no write: every rule lets it pass")
    func unchangedValuePasses() throws {
        let state = try Self.board()
        let same = [F.change(F.uuid(11), "Shape", ["x": 1, "createdAt": "t0"])]
        #expect(Self.refusals(state, same, by: Self.bob) == nil)
    }

    @Test("an object added anonymously has no owner: every writer may change and remove it")
    func ownerlessObjectIsOpen() throws {
        let state = try Self.board()
        let next = try Self.accept(state, [F.change(F.uuid(12), "Shape", ["x": 7])], by: Self.bob)
        _ = try Self.accept(next, [F.change(Self.root, "Board", ["shapes": []])], by: Self.bob)
    }

    @Test("a property's write: owner binds only that property; the class stays open")
    func propertyWriteRule() throws {
        let state = try Self.board()
        #expect(
            Self.refusals(state, [F.change(F.uuid(31), "Note", ["pinned": true])], by: Self.bob) == ["forbidden pinned"]
        )
        _ = try Self.accept(state, [F.change(F.uuid(31), "Note", ["text": "bob was here"])], by: Self.bob)
        _ = try Self.accept(state, [F.change(F.uuid(31), "Note", ["pinned": true])], by: Self.ada)
    }

    @Test("an add naming a role-guarded property at its default writes nothing there; another value needs the role")
    func addAtTheDefault() throws {
        let state = try Self.board()
        func add(_ color: String) -> [SyncFragment] {
            [
                F.add(F.uuid(33), "Note", ["text": "c", "pinned": false, "color": .string(color)]),
                F.change(Self.root, "Board", ["notes": F.refs(F.uuid(31), F.uuid(32), F.uuid(33))]),
            ]
        }
        _ = try Self.accept(state, add("yellow"), by: Self.bob)
        #expect(Self.refusals(state, add("red"), by: Self.bob) == ["forbidden color", "{}"])
        _ = try Self.accept(state, add("red"), by: ChangeAuthor(subject: "bob", roles: ["designer"]))
    }

    @Test("a role rule needs the role in the writer's roles, owner or not")
    func roleRules() throws {
        let state = try Self.board()
        let title = [F.change(Self.root, "Board", ["title": "Plans"])]
        #expect(Self.refusals(state, title, by: Self.ada) == ["forbidden title"])
        _ = try Self.accept(state, title, by: ChangeAuthor(subject: "ada", roles: ["admin"]))
    }

    @Test("immutable: the add sets it, a change after it is refused, a change in the add's set is part of the add")
    func immutableProperty() throws {
        let state = try Self.board()
        let change = [F.change(F.uuid(11), "Shape", ["createdAt": "t1"])]
        #expect(Self.refusals(state, change, by: Self.ada) == ["immutable createdAt"])
        #expect(Self.refusals(state, change, by: .localEdit) == ["immutable createdAt"])
        let added = try Self.accept(
            state,
            [
                F.add(F.uuid(14), "Shape", ["createdAt": "t2"]), F.change(F.uuid(14), "Shape", ["createdAt": "t3"]),
                F.change(Self.root, "Board", ["shapes": F.refs(F.uuid(12), F.uuid(14))]),
            ], by: Self.bob)
        #expect(added.object(F.uuid(14))?["createdAt"] == .string("t3"))
    }

    @Test("a client's local edit checks immutable only: it knows no owners")
    func localEditChecksImmutableOnly() throws {
        let state = try Self.board()
        _ = try Self.accept(state, [F.change(F.uuid(11), "Shape", ["x": 3])], by: .localEdit)
    }

    // MARK: - Adds under a parent

    @Test("adding a child under someone else's parent changes the parent: its rules apply")
    func addUnderAParent() throws {
        let state = try Self.board()
        let join = [
            F.add(F.uuid(15), "Shape"), F.change(F.uuid(21), "Group", ["members": F.refs(F.uuid(11), F.uuid(15))]),
        ]
        #expect(Self.refusals(state, join, by: Self.bob) == ["{}", "forbidden members"])
        let joined = try Self.accept(state, join, by: Self.ada)
        #expect(joined.object(F.uuid(15))?.owner == "ada")
    }

    @Test("adding an object of a role-only class needs the role; an owner-only class lets any add through")
    func addsOfRuledClasses() throws {
        let state = try Self.board()
        let badge = [
            F.add(F.uuid(41), "Badge", ["text": "new"]), F.change(Self.root, "Board", ["badges": F.refs(F.uuid(41))]),
        ]
        #expect(Self.refusals(state, badge, by: Self.bob) == ["forbidden", "{}"])
        _ = try Self.accept(state, badge, by: ChangeAuthor(subject: "bob", roles: ["editor"]))
        let circle = try Self.accept(
            state,
            [
                F.add(F.uuid(16), "Circle", ["radius": 2]),
                F.change(Self.root, "Board", ["shapes": F.refs(F.uuid(12), F.uuid(16))]),
            ], by: Self.bob)
        #expect(circle.object(F.uuid(16))?.owner == "bob")
        // The subclass has the superclass's rules.
        #expect(
            Self.refusals(circle, [F.change(F.uuid(16), "Circle", ["radius": 3])], by: Self.ada) == ["forbidden radius"]
        )
    }

    // MARK: - Removals by detaching

    @Test("detaching someone else's object with delete: owner is forbidden, at the detaching fragment")
    func removalByDetaching() throws {
        var state = try Self.board()
        // Bob's shape in ada's group is not possible (the group is ada's): ada adds one under the root.
        state = try Self.accept(
            state,
            [F.add(F.uuid(17), "Shape"), F.change(Self.root, "Board", ["shapes": F.refs(F.uuid(12), F.uuid(17))])],
            by: Self.ada)
        let detach = [
            F.change(F.uuid(12), "Shape", ["x": 4]), F.change(Self.root, "Board", ["shapes": F.refs(F.uuid(12))]),
        ]
        #expect(Self.refusals(state, detach, by: Self.bob) == ["{}", "forbidden shapes"])
        let removed = try #require(state.applying(detach, schema: Self.schema, author: Self.ada).applied)
        #expect(removed.removed == [F.uuid(17)])
    }

    @Test("an object that leaves with its parent is judged too: the parent's owner cannot take others' children")
    func cascadedRemoval() throws {
        let state = try Self.board()
        // Bob's own group holding ada's shape 11 (ada's group keeps it too, so first ada leaves it).
        var next = try Self.accept(
            state,
            [
                F.add(F.uuid(22), "Group", ["members": F.refs(F.uuid(11))]),
                F.change(Self.root, "Board", ["groups": F.refs(F.uuid(21), F.uuid(22))]),
            ], by: Self.bob)
        next = try Self.accept(next, [F.change(F.uuid(21), "Group", ["members": []])], by: Self.ada)
        let dropGroup = [F.change(Self.root, "Board", ["groups": F.refs(F.uuid(21))])]
        #expect(Self.refusals(next, dropGroup, by: Self.bob) == ["forbidden groups"])
        let outcome = next.applying(dropGroup, schema: Self.schema, author: Self.bob)
        let message = try #require(outcome.replies.first?.error?.message)
        #expect(message.contains("'ada'") && message.contains(F.uuid(11).wireString))
    }
}
