import Foundation
import JetstreamModel
import Testing

/// `Tests/Fixtures/changeset-cases.json`: change sets applied to full states, with the outcome
/// each must have. The JavaScript client's tests run the same file, so the two implementations of
/// collection operations and change-set rules (docs/model.md, "Collection operations")
/// are held to one set of answers. Here each case goes through `ScopeState.applying`, the code
/// the server runs for `POST …/changesets`.
@Suite("Shared change-set cases (Swift model ⇄ JavaScript client)")
struct SharedChangeSetCaseTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let state: JSONValue
        let changeset: [JSONValue]
        let expect: JSONValue
        /// Who writes the set, for the schema's rules (the server's own apply when absent).
        let author: ChangeAuthor
        var testDescription: String { name }
    }

    struct File: Sendable {
        let document: JSONValue
        let schema: Schema
        let cases: [Case]
    }

    static let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/changeset-cases.json")

    static func load() throws -> File {
        let document = try JSONParser.parse(Array(try Data(contentsOf: path)))
        let schema = try Schema.parse(tree: try #require(document["schema"], "the file has no schema"))
        let cases = try #require(document["cases"]?.array, "the file has no cases").map { entry in
            Case(
                name: try #require(entry["name"]?.string), state: try #require(entry["state"]),
                changeset: try #require(entry["changeset"]?.array, "\(entry["name"] ?? "?"): changeset"),
                expect: try #require(entry["expect"]), author: try author(entry["author"]))
        }
        return File(document: document, schema: schema, cases: cases)
    }

    static let file = Result { try load() }

    /// `{"subject","roles"?}` → a writer every rule judges; `"local"` → a client's own edit.
    static func author(_ json: JSONValue?) throws -> ChangeAuthor {
        switch json {
        case nil: return .server()
        case .string("local")?: return .localEdit
        case .object(let object)?:
            let roles = (object["roles"]?.array ?? []).compactMap(\.string)
            return ChangeAuthor(subject: object["subject"]?.string, roles: Set(roles))
        case let other?:
            throw CaseFileError(message: "author \(other.encodedString()) is neither an object nor \"local\"")
        }
    }

    struct CaseFileError: Error {
        let message: String
    }

    @Test("the file: the schema in GET /v1/schema's form, a scope it roots, unique names, every error kind")
    func fileShape() throws {
        let file = try Self.file.get()
        #expect(file.document["schema"] == file.schema.jsonValue, "the schema is written as GET /v1/schema serves it")
        let scope = try #require(file.document["scope"]?.string)
        #expect(file.schema.rootClass(forScope: scope) != nil)
        #expect(Set(file.cases.map(\.name)).count == file.cases.count, "case names are unique")
        var kinds = Set<String>()
        for testCase in file.cases {
            for reply in testCase.expect["replies"]?.array ?? [] {
                if let type = reply["error"]?["type"]?.string { kinds.insert(type) }
            }
        }
        let expected = Set(FragmentError.Kind.allCases.map(\.rawValue)).subtracting(["limit-exceeded"])
        #expect(expected.subtracting(kinds).isEmpty, "no case for \(expected.subtracting(kinds).sorted())")
    }

    @Test("each case", arguments: try Self.file.get().cases)
    func apply(_ testCase: Case) throws {
        let schema = try Self.file.get().schema
        let state = try Self.importState(testCase.state, schema: schema)
        #expect(
            Self.objects(state.exportFragments().map(\.jsonValue)) == Self.objects(testCase.state["fragments"]),
            "`state` is a full state, as GET returns it")
        let outcome = state.applying(
            ChangeSet(json: testCase.changeset), schema: schema, limits: Limits(), author: testCase.author)
        if let replies = testCase.expect["replies"]?.array {
            guard case .rejected(let actual) = outcome else {
                Issue.record("accepted, expected a rejection")
                return
            }
            try #require(actual.count == replies.count, "one reply per fragment")
            for (index, (reply, expected)) in zip(actual, replies).enumerated() {
                let error = reply.error
                #expect(error?.kind.rawValue == expected["error"]?["type"]?.string, "fragment \(index): \(reply)")
                #expect(error?.property == expected["error"]?["property"]?.string, "fragment \(index): \(reply)")
            }
        } else {
            guard case .accepted(let applied) = outcome else {
                Issue.record("rejected: \(outcome.replies.map { $0.error.map(\.description) ?? "{}" })")
                return
            }
            let expectedState = try #require(testCase.expect["state"])
            #expect(applied.state.rootUUID.wireString == expectedState["rootUUID"]?.string)
            #expect(
                Self.objects(applied.state.exportFragments().map(\.jsonValue))
                    == Self.objects(expectedState["fragments"]))
            let removed = try #require(testCase.expect["removed"]?.array).compactMap(\.string)
            #expect(Set(applied.removed.map(\.wireString)) == Set(removed))
            let fragments = try #require(testCase.expect["fragments"]?.array)
            #expect(applied.fragments.map { Comparable($0.jsonValue) } == fragments.map(Comparable.init))
            // A client reads what is broadcast: applied to the state before, it gives the state after.
            let received = state.applying(ChangeSet(json: fragments), schema: schema, limits: Limits())
            guard case .accepted(let replayed) = received else {
                Issue.record("the broadcast fragments do not apply: \(received.replies)")
                return
            }
            #expect(
                Self.objects(replayed.state.exportFragments().map(\.jsonValue))
                    == Self.objects(expectedState["fragments"]))
        }
    }

    static func importState(_ json: JSONValue, schema: Schema) throws -> ScopeState {
        let root = try #require(json["rootUUID"]?.string.flatMap(UUID.init(wireString:)))
        let fragments = try #require(json["fragments"]?.array).map { try SyncFragment(json: $0) }
        var owners: [UUID: String] = [:]
        for member in json["owners"]?.object ?? JSONObject() {
            owners[try #require(UUID(wireString: member.key))] = try #require(member.value.string)
        }
        return try ScopeState(importing: fragments, rootUUID: root, version: 0, schema: schema).withOwners(owners)
    }

    /// Fragments as a map uuid → {type, clsName, properties}, numbers compared by value.
    static func objects(_ fragments: JSONValue?) -> [String: Comparable] {
        objects(fragments?.array ?? [])
    }

    static func objects(_ fragments: [JSONValue]) -> [String: Comparable] {
        var map: [String: Comparable] = [:]
        for fragment in fragments {
            map[fragment["uuid"]?.string ?? "?"] = Comparable(fragment)
        }
        return map
    }

    /// JSON whose numbers compare by value (`5.0` equals `5`), as the file is read by JavaScript
    /// too; everything else compares exactly.
    struct Comparable: Equatable, CustomStringConvertible {
        let value: JSONValue

        init(_ value: JSONValue) { self.value = value }

        static func == (lhs: Comparable, rhs: Comparable) -> Bool { same(lhs.value, rhs.value) }

        static func same(_ lhs: JSONValue, _ rhs: JSONValue) -> Bool {
            switch (lhs, rhs) {
            case (.number(let left), .number(let right)):
                return left.doubleValue == right.doubleValue
            case (.array(let left), .array(let right)):
                return left.count == right.count && zip(left, right).allSatisfy { same($0, $1) }
            case (.object(let left), .object(let right)):
                return left.count == right.count && Set(left.keys) == Set(right.keys)
                    && left.allSatisfy { member in right[member.key].map { same(member.value, $0) } ?? false }
            default:
                return lhs == rhs
            }
        }

        var description: String { value.encodedString() }
    }
}
