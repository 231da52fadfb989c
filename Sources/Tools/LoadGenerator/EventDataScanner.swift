/// Reads the few members the load generator needs from an event's `data` without parsing the
/// JSON: a many-scope stream's `"scope":"<name>"` and `"version":N`, which the server writes
/// first. The first occurrence of a key wins, which is the top-level member for these events.
enum EventDataScanner {
    static let scopeKey = Array(#""scope":""#.utf8)
    static let versionKey = Array(#""version":"#.utf8)

    /// The bytes of the string value after `key` (which ends with the opening quote), up to the
    /// closing quote; scope names have no escapes.
    static func string(after key: [UInt8], in data: [UInt8]) -> ArraySlice<UInt8>? {
        guard let start = index(after: key, in: data) else { return nil }
        guard let end = data[start...].firstIndex(of: UInt8(ascii: "\"")) else { return nil }
        return data[start..<end]
    }

    /// The non-negative integer after `key`.
    static func integer(after key: [UInt8], in data: [UInt8]) -> Int? {
        guard var index = index(after: key, in: data) else { return nil }
        while index < data.count, data[index] == UInt8(ascii: " ") { index += 1 }
        var value = 0
        var digits = 0
        while index < data.count, data[index] >= UInt8(ascii: "0"), data[index] <= UInt8(ascii: "9") {
            value = value &* 10 &+ Int(data[index] - UInt8(ascii: "0"))
            digits += 1
            index += 1
        }
        return digits > 0 ? value : nil
    }

    /// The index just past the first occurrence of `key` in `data`.
    static func index(after key: [UInt8], in data: [UInt8]) -> Int? {
        guard !key.isEmpty, data.count >= key.count else { return nil }
        var start = 0
        while start + key.count <= data.count {
            if data[start] == key[0], data[start..<start + key.count].elementsEqual(key) { return start + key.count }
            start += 1
        }
        return nil
    }

    static let markKey = Array(#""pb-"#.utf8)

    /// The presence bench's mark `"pb-RUN-MEMBER-SEQUENCE"`, wherever it is in the data: in a
    /// presence event's member data, or in a change set's fragment.
    static func mark(in data: [UInt8]) -> (run: Int, member: Int, sequence: Int)? {
        guard var index = index(after: markKey, in: data) else { return nil }
        var numbers: [Int] = []
        numbers.reserveCapacity(3)
        while numbers.count < 3 {
            var value = 0
            var digits = 0
            while index < data.count, data[index] >= UInt8(ascii: "0"), data[index] <= UInt8(ascii: "9") {
                value = value &* 10 &+ Int(data[index] - UInt8(ascii: "0"))
                digits += 1
                index += 1
            }
            guard digits > 0, index < data.count else { return nil }
            numbers.append(value)
            let separator = numbers.count < 3 ? UInt8(ascii: "-") : UInt8(ascii: "\"")
            guard data[index] == separator else { return nil }
            index += 1
        }
        return (numbers[0], numbers[1], numbers[2])
    }
}
