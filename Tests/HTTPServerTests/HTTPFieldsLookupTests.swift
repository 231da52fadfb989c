import HTTPServer
import HTTPTypes
import Testing

/// `value(of:)` is the per-request read of a field: it must read exactly what `fields[name]` does.
@Suite struct HTTPFieldsLookupTests {
    private static let custom = HTTPField.Name("Idempotency-Key")!

    private static func fields(_ pairs: [(HTTPField.Name, String)]) -> HTTPFields {
        var fields = HTTPFields()
        for (name, value) in pairs { fields.append(HTTPField(name: name, value: value)) }
        return fields
    }

    @Test(
        "the value is the one the subscript reads: none, one, several joined, names in any case",
        arguments: [
            [],
            [(HTTPField.Name.contentType, "application/json")],
            [(.accept, "*/*"), (.contentType, "text/plain; charset=utf-8"), (.userAgent, "a")],
            [(.acceptEncoding, "gzip"), (.userAgent, "a"), (.acceptEncoding, "br, deflate")],
            [(.cookie, "a=1"), (.cookie, "b=2")],
            [(HTTPField.Name("content-TYPE")!, "application/json")],
            [(custom, "k-1"), (custom, "")],
        ] as [[(HTTPField.Name, String)]])
    func readsAsTheSubscript(pairs: [(HTTPField.Name, String)]) {
        let fields = Self.fields(pairs)
        for name in [HTTPField.Name.contentType, .acceptEncoding, .cookie, .userAgent, .authorization, Self.custom] {
            #expect(fields.value(of: name) == fields[name], "\(name) in \(pairs)")
        }
    }

    @Test("a repeated field is joined as HTTP says: with a comma, cookies with a semicolon")
    func repeatedFields() {
        let fields = Self.fields([
            (.acceptEncoding, "gzip"), (.cookie, "a=1"), (.acceptEncoding, "br"), (.cookie, "b=2"),
        ])
        #expect(fields.value(of: .acceptEncoding) == "gzip, br")
        #expect(fields.value(of: .cookie) == "a=1; b=2")
        #expect(fields.value(of: .contentType) == nil)
    }
}
