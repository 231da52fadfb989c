/// Finds the `"version":N` member of a change-set answer without parsing the whole body (the
/// answer echoes the fragments; only the version matters to the load generator).
enum ResponseVersionScanner {
    private static let key = Array(#""version":"#.utf8)

    static func version(in body: [UInt8]) -> Int? {
        guard body.count > key.count else { return nil }
        var start = 0
        while start + key.count <= body.count {
            if body[start] == key[0], body[start..<start + key.count].elementsEqual(key) {
                var index = start + key.count
                while index < body.count, body[index] == UInt8(ascii: " ") { index += 1 }
                var value = 0
                var digits = 0
                while index < body.count, body[index] >= UInt8(ascii: "0"), body[index] <= UInt8(ascii: "9") {
                    value = value * 10 + Int(body[index] - UInt8(ascii: "0"))
                    digits += 1
                    index += 1
                }
                return digits > 0 ? value : nil
            }
            start += 1
        }
        return nil
    }
}
