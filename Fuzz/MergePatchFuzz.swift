// libFuzzer entry point for merge patches: a PATCH …/objects/{uuid} body translated into a change
// set against a fixed state and applied (MergePatch in Sources/Model/JetstreamModel).
//
// Built by `Fuzz/run --target mergepatch` with Fuzz/ModelFuzzSupport.swift against the
// JetstreamJSON and JetstreamModel modules (instrumented; JetstreamModel with -enable-testing).
//
// Input: one byte of options, then the patch document (any JSON; the gateway hands every JSON
// body to the translation).
//   bit 0: the fixture (demo canvas or board), bit 1: the limits (defaults or small), as in
//          ChangeSetFuzz.swift
//   bits 2–4: the target — that index (modulo) into the state's objects in pre-order, followed by
//          one UUID the state does not hold
// Nested objects without a "uuid" get deterministic UUIDs (…f000, …f001, …).
//
// Properties checked:
// - `objectNotFound` exactly when the target is not in the state;
// - an invalid patch has at least one error, each at a JSON Pointer that names a value in the patch;
// - a translation starts with the target's `change`; its `add`s are new objects, its `change`s
//   name objects of the state or added before them in the translation;
// - applying the translation keeps every change-set invariant (`checkOutcome`, `checkState`);
// - a rejection maps to one patch error per fragment error, each at a pointer into the patch.
import Foundation

@testable import JetstreamModel

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMergePatch(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size >= 1 else { return 0 }
    let fixture = ModelFixture.select(data[0])
    let limits = fuzzLimits(data[0])
    let state = fixture.state
    let candidates = state.preOrderUUIDs() + [UUID(wireString: "00000000-0000-4000-8000-0000000000ff")!]
    let target = candidates[Int(data[0] >> 2 & 7) % candidates.count]
    guard let document = try? JSONParser.parse(Array(UnsafeBufferPointer(start: data + 1, count: size - 1))) else {
        return 0
    }

    var counter: UInt16 = 0
    let translation: MergePatchTranslation
    do {
        translation = try MergePatch(target: target, document: document).translate(
            against: state, schema: fixture.schema,
            newUUID: {
                defer { counter &+= 1 }
                return UUID(wireString: "00000000-0000-4000-8000-00000000" + hex4(0xF000 &+ counter))!
            })
    } catch {
        trace("not translated: \(error)")
        switch error {
        case .objectNotFound(let uuid):
            if uuid != target || state.contains(target) { fatalError("objectNotFound(\(uuid)) for target \(target)") }
        case .invalid(let errors):
            if !state.contains(target) { fatalError("a patch of a missing object was translated") }
            if errors.isEmpty { fatalError("invalid without an error") }
            checkPaths(errors, in: document)
        }
        return 0
    }
    if !state.contains(target) { fatalError("a patch of a missing object was translated") }

    let fragments = translation.fragments
    guard let first = fragments.first, first.type == .change, first.uuid == target,
        first.clsName == state.object(target)!.clsName
    else { fatalError("the translation does not start with the target's change: \(fragments)") }
    var added: Set<UUID> = []
    for fragment in fragments {
        switch fragment.type {
        case .add:
            if state.contains(fragment.uuid) || !added.insert(fragment.uuid).inserted {
                fatalError("the translation adds \(fragment.uuid) twice or over an existing object")
            }
        case .change:
            if !state.contains(fragment.uuid) && !added.contains(fragment.uuid) {
                fatalError("the translation changes \(fragment.uuid) before adding it")
            }
        }
    }

    let changeSet = translation.changeSet
    let outcome = state.applying(changeSet, schema: fixture.schema, limits: limits)
    checkOutcome(outcome, of: changeSet, on: state, fixture: fixture, limits: limits)
    if case .rejected(let replies) = outcome {
        let errors = translation.errors(for: replies)
        if errors.count != replies.filter({ $0.error != nil }).count {
            fatalError("\(errors.count) patch errors for \(replies.filter { $0.error != nil }.count) fragment errors")
        }
        checkPaths(errors, in: document)
    }
    return 0
}

private func checkPaths(_ errors: [MergePatchError], in document: JSONValue) {
    for error in errors where resolvePointer(error.path, in: document) == nil {
        fatalError("error path \"\(error.path)\" names nothing in the patch \(document.encodedString()): \(error)")
    }
}

private func hex4(_ value: UInt16) -> String {
    let digits = String(value, radix: 16)
    return String(repeating: "0", count: 4 - digits.count) + digits
}
