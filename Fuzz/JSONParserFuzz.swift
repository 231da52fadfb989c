// libFuzzer entry point for the strict JSON parser and the writer (Sources/Model/JetstreamJSON).
//
// Built by `Fuzz/run --target json`: JetstreamJSON as a module of its own (instrumented), this
// file as the executable that imports it. The input is the JSON text itself, no prefix.
//
// Properties checked on every input (a violation traps, which libFuzzer reports as a crash):
// - nothing traps (overflow, out-of-bounds, ASan findings) on any bytes;
// - a rejection names an offset within the input;
// - an accepted text is valid UTF-8 (strings are validated, everything else is ASCII);
// - the writer's output parses back to the same value and is a fixed point (writing that value
//   again gives the same bytes); whitespace around the text changes nothing;
// - the limits are exact: the text is accepted with `maxDepth` equal to its nesting depth and
//   refused with one less, accepted with `maxBytes` equal to its size and refused with one less;
// - a text whose value is not a bare number is refused when cut before its last significant
//   byte (a cut half-way through and one byte before the end are tried);
// - every string that reads as a UUID writes back as the same UUID, in lowercase.
import Foundation
import JetstreamJSON

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSONParser(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    let value: JSONValue
    do {
        value = try JSONParser.parse(input)
    } catch {
        if error.offset < 0 || error.offset > size {
            fatalError("error offset \(error.offset) outside a \(size)-byte input: \(error)")
        }
        // Padding with whitespace cannot make a refused text acceptable.
        if case .success = parse([0x20] + input + [0x0A]) {
            fatalError("padded input accepted, bare input refused: \(error)")
        }
        return 0
    }

    if String(validating: input, as: UTF8.self) == nil { fatalError("accepted a text that is not UTF-8") }

    let written = value.encoded()
    guard case .success(let reparsed) = parse(written) else {
        fatalError("the writer's output does not parse: \(String(decoding: written, as: UTF8.self))")
    }
    if reparsed != value { fatalError("round trip changed the value: \(value) → \(reparsed)") }
    if reparsed.encoded() != written { fatalError("writing is not a fixed point") }

    guard case .success(let padded) = parse([0x20, 0x09] + input + [0x0D, 0x0A]), padded == value else {
        fatalError("surrounding whitespace changed the result")
    }

    checkLimits(input, depth: depth(of: value))
    checkCuts(input, value: value)
    checkUUIDs(in: value)
    return 0
}

private func parse(
    _ bytes: [UInt8], options: JSONParser.Options = JSONParser.Options()
) -> Result<JSONValue, JSONParseError> {
    Result { () throws(JSONParseError) in try JSONParser.parse(bytes, options: options) }
}

/// Arrays and objects nested in each other; 0 for a scalar.
private func depth(of value: JSONValue) -> Int {
    switch value {
    case .array(let elements): 1 + (elements.map(depth(of:)).max() ?? 0)
    case .object(let object): 1 + (object.map { depth(of: $0.value) }.max() ?? 0)
    default: 0
    }
}

private func checkLimits(_ input: [UInt8], depth: Int) {
    if case .failure(let error) = parse(input, options: JSONParser.Options(maxDepth: depth)) {
        fatalError("refused at maxDepth \(depth), its own depth: \(error)")
    }
    if depth > 0, case .success = parse(input, options: JSONParser.Options(maxDepth: depth - 1)) {
        fatalError("accepted at maxDepth \(depth - 1), below its depth \(depth)")
    }
    if case .failure(let error) = parse(input, options: JSONParser.Options(maxBytes: input.count)) {
        fatalError("refused at maxBytes \(input.count), its own size: \(error)")
    }
    if !input.isEmpty, case .success = parse(input, options: JSONParser.Options(maxBytes: input.count - 1)) {
        fatalError("accepted at maxBytes \(input.count - 1), below its size")
    }
}

private func checkCuts(_ input: [UInt8], value: JSONValue) {
    if case .number = value { return }  // "12" cut to "1" is still a number
    let whitespace: Set<UInt8> = [0x20, 0x09, 0x0A, 0x0D]
    guard let last = input.lastIndex(where: { !whitespace.contains($0) }) else { return }
    for cut in Set([last, last / 2]) {
        if case .success(let shorter) = parse(Array(input[..<cut])) {
            fatalError("the first \(cut) of \(input.count) bytes parse too (\(shorter)), the whole is \(value)")
        }
    }
}

private func checkUUIDs(in value: JSONValue) {
    switch value {
    case .string(let text):
        guard let uuid = UUID(wireString: text) else { return }
        if uuid.wireString != text.lowercased() || UUID(wireString: uuid.wireString) != uuid {
            fatalError("UUID \(text) writes back as \(uuid.wireString)")
        }
    case .array(let elements): elements.forEach(checkUUIDs(in:))
    case .object(let object):
        for member in object {
            checkUUIDs(in: .string(member.key))
            checkUUIDs(in: member.value)
        }
    default: break
    }
}
