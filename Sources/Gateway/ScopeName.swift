/// Scope names: 1–128 characters of `[A-Za-z0-9._~-]` (URL-safe without escaping).
enum ScopeName {
    static let maxLength = 128

    static func isValid(_ name: String) -> Bool {
        let utf8 = name.utf8
        guard !utf8.isEmpty, utf8.count <= maxLength else { return false }
        return utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"),
                UInt8(ascii: "-"):
                true
            default: false
            }
        }
    }

    /// Throws a `bad-request` problem naming the rule when `name` breaks it.
    static func validate(_ name: String) throws(Problem) {
        guard isValid(name) else {
            throw Problem(
                .badRequest,
                detail:
                    "invalid scope name '\(name.prefix(140))': use 1–128 characters of A–Z, a–z, 0–9, '.', '_', '~', '-'"
            )
        }
    }
}
