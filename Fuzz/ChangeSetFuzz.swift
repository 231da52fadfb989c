// libFuzzer entry point for change sets: decoding a POST …/changesets body into a ChangeSet and
// applying it to a fixed state (Sources/Model/JetstreamModel, Sources/Model/JetstreamJSON).
//
// Built by `Fuzz/run --target changeset` with Fuzz/ModelFuzzSupport.swift against the
// JetstreamJSON and JetstreamModel modules (instrumented; JetstreamModel with -enable-testing).
//
// Input: one byte of options, then the request body `{"fragments":[…]}`.
//   bit 0: the fixture — 0 the demo canvas (Schema.demo), 1 the board of the shared change-set cases
//   bit 1: the limits — 0 the server's defaults, 1 small ones (12 objects, 8 fragments, 16-byte
//          strings, 6 elements) so that every limit is reachable
// The body is read as the gateway reads it (anything but an object with a `fragments` array is a
// 400 before the model sees it), applied, and — when accepted — applied once more to the new
// state, so that a set can meet what it created itself.
//
// Properties checked (see `checkOutcome` and `checkState` in ModelFuzzSupport.swift):
// - every fragment decodes to itself again from its own JSON;
// - one reply per fragment; an undecodable fragment's reply is its decoding error; a rejection has
//   an error; nothing over a limit is accepted;
// - an accepted set: version + 1, the same root, normalised fragments matching the given ones,
//   `removed` exactly the objects that left (sorted), arrivals exactly the `add`s, the event
//   payload equal to the fragments; replaying the stored fragments on the old state (recovery)
//   gives the same state, fragments and removals;
// - the new state: every object reachable once in pre-order, references to live objects of the
//   declared class, parent links equal to the references with multiplicity, the export imports
//   back (under the same limits) to an equal state, writeState == stateJSON.
@testable import JetstreamModel

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzChangeSet(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size >= 1 else { return 0 }
    let fixture = ModelFixture.select(data[0])
    let limits = fuzzLimits(data[0])
    let body = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    guard let json = try? JSONParser.parse(body), let elements = json["fragments"]?.array else { return 0 }

    let changeSet = ChangeSet(json: elements)
    for entry in changeSet.entries {
        guard case .success(let fragment) = entry else { continue }
        guard (try? SyncFragment(json: fragment.jsonValue)) == fragment else {
            fatalError("a fragment does not decode from its own JSON: \(fragment)")
        }
    }

    let old = fixture.state
    let outcome = old.applying(changeSet, schema: fixture.schema, limits: limits)
    guard let new = checkOutcome(outcome, of: changeSet, on: old, fixture: fixture, limits: limits) else { return 0 }
    let again = new.applying(changeSet, schema: fixture.schema, limits: limits)
    checkOutcome(again, of: changeSet, on: new, fixture: fixture, limits: limits)
    return 0
}
