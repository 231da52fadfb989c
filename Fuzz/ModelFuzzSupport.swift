// Shared by the change-set and merge-patch harnesses (Fuzz/ChangeSetFuzz.swift,
// Fuzz/MergePatchFuzz.swift): the fixed schemas and states they write to, and the invariants every
// outcome of applying a change set must keep. `@testable` (JetstreamModel is built with
// -enable-testing) so the parent links can be checked with their multiplicities.
import Foundation

@testable import JetstreamModel

/// `FUZZ_TRACE=1` (with `Fuzz/run --target changeset --reproduce FILE`) prints each outcome.
let tracing = getenv("FUZZ_TRACE") != nil

func trace(_ line: @autoclosure () -> String) {
    if tracing { print(line()) }
}

/// Builds both fixtures before the first input, so that their allocations (and the schema's compiled
/// patterns) are not charged to an input by the leak check.
@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>
) -> Int32 {
    _ = (ModelFixture.demo, ModelFixture.board)
    return 0
}

/// A schema and a state at version 5 to apply change sets to. The first input byte picks one.
struct ModelFixture {
    let name: String
    let schema: Schema
    let state: ScopeState

    /// The canvas of `Schema.demo` (what `jetstream serve` runs without a schema) with three shapes.
    static let demo: ModelFixture = {
        let schema = Schema.demo
        return checked(ModelFixture(name: "demo", schema: schema, state: importState(demoState, schema: schema)))
    }()

    /// The schema of Tests/Fixtures/changeset-cases.json (every property kind, references, [Model],
    /// maxCount, pattern, enums) plus a subclass, with the cases' state, a pinned item that has
    /// two parents and a partner cycle.
    static let board: ModelFixture = {
        let schema: Schema
        do {
            schema = try Schema.parse(json: Array(boardSchema.utf8))
        } catch {
            fatalError("the board schema is invalid: \(error)")
        }
        return checked(ModelFixture(name: "board-1", schema: schema, state: importState(boardState, schema: schema)))
    }()

    static func select(_ byte: UInt8) -> ModelFixture { byte & 1 == 0 ? demo : board }

    /// The fixture itself must pass the checks, under both limits.
    private static func checked(_ fixture: ModelFixture) -> ModelFixture {
        checkState(fixture.state, fixture: fixture, limits: fuzzLimits(0))
        checkState(fixture.state, fixture: fixture, limits: fuzzLimits(2))
        return fixture
    }

    private static func importState(_ json: String, schema: Schema) -> ScopeState {
        do {
            let fragments = try JSONParser.parse(json).array!.map { try SyncFragment(json: $0) }
            return try ScopeState(importing: fragments, rootUUID: fixtureRoot, version: 5, schema: schema)
        } catch {
            fatalError("a fixture state does not import: \(error)")
        }
    }
}

/// The limits a change set is applied with: the server's defaults, or small ones so that every
/// limit can be crossed by a short input (the second input bit picks).
func fuzzLimits(_ byte: UInt8) -> Limits {
    byte & 2 == 0
        ? Limits()
        : Limits(maxObjectsPerScope: 12, maxFragmentsPerSet: 8, maxStringLength: 16, maxCollectionLength: 6)
}

let fixtureRoot = UUID(wireString: "00000000-0000-4000-8000-000000000001")!

private let demoState = #"""
    [{"type":"change","uuid":"00000000-0000-4000-8000-000000000001","clsName":"Canvas","properties":{"name":"sketch",
      "shapes":["00000000-0000-4000-8000-000000000101","00000000-0000-4000-8000-000000000102","00000000-0000-4000-8000-000000000103"]}},
     {"type":"add","uuid":"00000000-0000-4000-8000-000000000101","clsName":"Shape","properties":{"x":10,"y":20}},
     {"type":"add","uuid":"00000000-0000-4000-8000-000000000102","clsName":"Shape","properties":{"x":-5.5,"y":0,"width":0,"color":4278190335,"label":"hi","kind":"oval"}},
     {"type":"add","uuid":"00000000-0000-4000-8000-000000000103","clsName":"Shape","properties":{"x":1e3,"y":2,"height":7.25,"color":null}}]
    """#

private let boardSchema = #"""
    {"models":{"Board":{"name":{"type":"String?"},"title":{"type":"String","default":"untitled","maxLength":10},
    "code":{"type":"String?","pattern":"[A-Z]{3}"},"owner":{"type":"Item?"},"items":{"type":"[Item]"},
    "pinned":{"type":"[Item]","maxCount":3},"others":{"type":"[Other]"},"words":{"type":"[String]","maxLength":5},
    "counts":{"type":"[Int8]"},"ratios":{"type":"[Float]","min":0.0},"flags":{"type":"[Bool]"},"colors":{"type":"[Color]"},
    "dates":{"type":"[Date]"},"level":{"type":"Int8"},"size":{"type":"UInt16?"},"count":{"type":"Int"},
    "score":{"type":"Float","default":5.0,"min":0.0,"max":10.0},"ratio":{"type":"Double?","min":-1.0,"max":1.0},
    "color":{"type":"Color?"},"due":{"type":"Date?"},"kind":{"enum":["rect","oval"],"default":"rect"},
    "priority":{"enum":[1,2,3],"nullable":true},"active":{"type":"Bool"}},
    "Item":{"label":{"type":"String","default":"","maxLength":20},"tags":{"type":"[String]"},
    "weight":{"type":"Float","default":1.0,"min":0.0},"partner":{"type":"Item?"},"leaves":{"type":"[Leaf]"}},
    "Special":{"extends":"Item","bonus":{"type":"UInt64?"},"stamp":{"type":"Date","default":0}},
    "Leaf":{"value":{"type":"Int8"},"note":{"type":"String?"}},"Other":{"label":{"type":"String"}},
    "Stray":{"label":{"type":"String"}}},"scopes":{"board-*":{"root":"Board"}}}
    """#

private let boardState = #"""
    [{"type":"change","uuid":"00000000-0000-4000-8000-000000000001","clsName":"Board","properties":{"name":null,
      "title":"untitled","owner":"00000000-0000-4000-8000-000000000103",
      "items":["00000000-0000-4000-8000-000000000101","00000000-0000-4000-8000-000000000102","00000000-0000-4000-8000-000000000103"],
      "pinned":["00000000-0000-4000-8000-000000000102"],"others":["00000000-0000-4000-8000-000000000301"],
      "words":["a","b","c"],"counts":[1,2],"ratios":[0.5,1.5],"flags":[true],"colors":[255],"dates":[1.5],
      "level":0,"count":0,"score":5.0,"kind":"rect","active":false}},
     {"type":"add","uuid":"00000000-0000-4000-8000-000000000101","clsName":"Item","properties":{"label":"i1",
      "partner":"00000000-0000-4000-8000-000000000103"}},
     {"type":"add","uuid":"00000000-0000-4000-8000-000000000102","clsName":"Item","properties":{"label":"i2",
      "leaves":["00000000-0000-4000-8000-000000000201","00000000-0000-4000-8000-000000000202"]}},
     {"type":"add","uuid":"00000000-0000-4000-8000-000000000201","clsName":"Leaf","properties":{"value":1}},
     {"type":"add","uuid":"00000000-0000-4000-8000-000000000202","clsName":"Leaf","properties":{"value":2,"note":"n"}},
     {"type":"add","uuid":"00000000-0000-4000-8000-000000000103","clsName":"Special","properties":{"label":"i3",
      "partner":"00000000-0000-4000-8000-000000000101","bonus":7}},
     {"type":"add","uuid":"00000000-0000-4000-8000-000000000301","clsName":"Other","properties":{"label":"o1"}}]
    """#

// MARK: - Invariants

/// Checks the outcome of applying `changeSet` to `old`, and the state it produced. Returns the
/// new state when the set was accepted.
@discardableResult
func checkOutcome(
    _ outcome: ChangeSetOutcome, of changeSet: ChangeSet, on old: ScopeState, fixture: ModelFixture, limits: Limits
) -> ScopeState? {
    let replies = outcome.replies
    switch outcome {
    case .accepted(let applied):
        trace(
            "accepted at version \(applied.state.version): \(applied.fragments.count) fragments, removed \(applied.removed)"
        )
    case .rejected(let replies):
        trace("rejected: \(replies.map { $0.error.map { "\($0.kind.rawValue) \($0.property ?? "")" } ?? "{}" })")
    }
    if replies.count != changeSet.count {
        fatalError("\(replies.count) replies for \(changeSet.count) fragments")
    }
    for (index, entry) in changeSet.entries.enumerated() {
        guard case .failure(let decodeError) = entry else { continue }
        guard let error = replies[index].error else {
            fatalError("fragment \(index) did not decode, yet its reply is {}")
        }
        if index < limits.maxFragmentsPerSet && error != decodeError {
            fatalError("fragment \(index): decoding said \(decodeError), the reply says \(error)")
        }
    }
    guard case .accepted(let applied) = outcome else {
        if !replies.contains(where: { $0.error != nil }) { fatalError("rejected without an error") }
        return nil
    }

    let new = applied.state
    if new.version != old.version + 1 { fatalError("version \(old.version) → \(new.version)") }
    if new.rootUUID != old.rootUUID || new.rootClass != old.rootClass { fatalError("the root changed") }
    if changeSet.count > limits.maxFragmentsPerSet {
        fatalError("accepted \(changeSet.count) fragments over the limit")
    }
    if new.count > limits.maxObjectsPerScope { fatalError("accepted \(new.count) objects over the limit") }
    if applied.fragments.count != changeSet.count { fatalError("\(applied.fragments.count) normalised fragments") }
    var added: Set<UUID> = []
    for (fragment, entry) in zip(applied.fragments, changeSet.entries) {
        guard case .success(let given) = entry else { fatalError("accepted a set with an undecodable fragment") }
        if fragment.type != given.type || fragment.uuid != given.uuid || fragment.clsName != given.clsName {
            fatalError("normalised \(fragment) from \(given)")
        }
        if fragment.type == .add { added.insert(fragment.uuid) }
    }

    // Objects leave only as `removed`, and arrive only by `add`.
    let oldUUIDs = Set(old.allObjects.map(\.uuid))
    let newUUIDs = Set(new.allObjects.map(\.uuid))
    if Set(applied.removed) != oldUUIDs.subtracting(newUUIDs) || applied.removed.count != Set(applied.removed).count {
        fatalError("removed \(applied.removed) but \(oldUUIDs.subtracting(newUUIDs)) left")
    }
    if newUUIDs.subtracting(oldUUIDs) != added {
        fatalError("added \(added) but \(newUUIDs.subtracting(oldUUIDs)) arrived")
    }
    if applied.removed != applied.removed.sorted(by: { $0.wireString < $1.wireString }) {
        fatalError("removed not sorted")
    }

    // The event payload is the fragments and removals as JSON.
    var writer = JSONWriter()
    applied.writeEvent(to: &writer, idempotencyKey: "k\u{1}\"")
    let expectedEvent: JSONValue = [
        "version": .number(JSONNumber(new.version)), "idempotencyKey": "k\u{1}\"",
        "fragments": .array(applied.fragments.map(\.jsonValue)),
        "removed": .array(applied.removed.map { .string($0.wireString) }),
    ]
    if (try? JSONParser.parse(writer.bytes)) != expectedEvent { fatalError("the event payload does not match") }

    // Replaying the stored fragments (what recovery does with the history) gives the same state
    // and the same fragments: normalisation is lossless and idempotent.
    let stored = applied.fragments.map { fragment -> JSONValue in
        var writer = JSONWriter()
        fragment.write(to: &writer)
        guard let json = try? JSONParser.parse(writer.bytes), json == fragment.jsonValue else {
            fatalError("a stored fragment does not read back: \(fragment)")
        }
        return json
    }
    switch old.applying(ChangeSet(json: stored), schema: fixture.schema, limits: .unlimited) {
    case .accepted(let replayed):
        if replayed.state != new { fatalError("replaying the stored fragments gives another state") }
        if replayed.fragments != applied.fragments { fatalError("replaying normalises the fragments differently") }
        if replayed.removed != applied.removed {
            fatalError("replaying removes \(replayed.removed), not \(applied.removed)")
        }
    case .rejected(let replies):
        fatalError("replaying the stored fragments is rejected: \(replies)")
    }

    checkState(new, fixture: fixture, limits: limits)
    return new
}

/// A state's own consistency: everything reachable, references to live objects of their declared
/// class, parent links equal to the references (with multiplicity), values within the limits,
/// and the full-state export importing back to the same state.
func checkState(_ state: ScopeState, fixture: ModelFixture, limits: Limits) {
    let order = state.preOrderUUIDs()
    if order.count != state.count || Set(order).count != order.count || order.first != state.rootUUID {
        fatalError("pre-order walk saw \(order.count) of \(state.count) objects")
    }
    var expectedParents: [UUID: [ParentRef: Int]] = [:]
    for object in state.allObjects {
        if object.values.count != object.modelClass.properties.count { fatalError("\(object.uuid): wrong value count") }
        for index in object.modelClass.referenceIndexes {
            let declared = object.modelClass.properties[index].type.referencedClassName!
            for target in object.values[index].referencedUUIDs {
                guard let child = state.object(target) else {
                    fatalError(
                        "\(object.uuid).\(object.modelClass.properties[index].name) refers to a missing \(target)")
                }
                if !child.modelClass.isKind(of: declared) { fatalError("\(target) is not a \(declared)") }
                expectedParents[target, default: [:]][
                    ParentRef(parent: object.uuid, propertyIndex: index), default: 0] += 1
            }
        }
    }
    for object in state.allObjects {
        let actual = Dictionary(uniqueKeysWithValues: object.parents.entries.map { ($0.ref, $0.count) })
        if actual != expectedParents[object.uuid, default: [:]] {
            fatalError(
                "\(object.uuid): parents \(actual), references say \(expectedParents[object.uuid, default: [:]])")
        }
    }

    // Every value is valid under the limits the state was built with: importing the export
    // (every object an `add`) with those limits gives the same state.
    var importLimits = limits
    importLimits.maxFragmentsPerSet = .max
    let exported = state.exportFragments()
    do {
        let copy = try ScopeState(
            importing: exported, rootUUID: state.rootUUID, version: state.version, schema: fixture.schema,
            limits: importLimits)
        if copy != state { fatalError("the exported state imports as another state") }
    } catch {
        fatalError("the exported state does not import: \(error)")
    }

    var writer = JSONWriter()
    state.writeState(name: fixture.name, to: &writer)
    if writer.bytes != state.stateJSON(name: fixture.name).encoded() { fatalError("writeState and stateJSON differ") }
}

/// The value a JSON Pointer (RFC 6901) names in `document`, or nil when it names nothing. Read by
/// Unicode scalar, as the RFC defines it: "/" followed by a combining mark is still a separator
/// (String's own methods would see one Character there).
func resolvePointer(_ pointer: String, in document: JSONValue) -> JSONValue? {
    let scalars = Array(pointer.unicodeScalars)
    guard let first = scalars.first else { return document }
    guard first == "/" else { return nil }
    var current = document
    for raw in scalars.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
        var token = String.UnicodeScalarView()
        var escaped = false
        for scalar in raw {
            if escaped {
                guard scalar == "0" || scalar == "1" else { return nil }
                token.append(scalar == "0" ? "~" : "/")
                escaped = false
            } else if scalar == "~" {
                escaped = true
            } else {
                token.append(scalar)
            }
        }
        guard !escaped else { return nil }
        switch current {
        case .object(let object):
            guard let next = object[String(token)] else { return nil }
            current = next
        case .array(let elements):
            let text = String(token)
            guard let index = Int(text), String(index) == text, elements.indices.contains(index) else { return nil }
            current = elements[index]
        default:
            return nil
        }
    }
    return current
}
