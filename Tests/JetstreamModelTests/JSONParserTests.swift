import JetstreamModel
import Testing

@Suite("JSON parser and writer")
struct JSONParserTests {
    @Test("parses every value kind, keeping key order and exact number text")
    func parsesValues() throws {
        let value = try JSONParser.parse(#" {"b":1,"a":[true,false,null,-0.5e+3,"x\u00e9\n"],"c":{}} "#)
        #expect(value.object?.keys == ["b", "a", "c"])
        #expect(value["a"]?.array?[3].number?.text == "-0.5e+3")
        #expect(value["a"]?.array?[4] == .string("xé\n"))
        #expect(value.encodedString() == #"{"b":1,"a":[true,false,null,-0.5e+3,"xé\n"],"c":{}}"#)
    }

    @Test(
        "rejects what RFC 8259 does not allow, with the byte offset",
        arguments: [
            ("[1,]", 3), ("{\"a\":1,}", 7), ("01", 1), ("NaN", 0), ("[1 2]", 3), ("\"a\u{1}\"", 2),
            ("{\"a\":1,\"a\":2}", 7), ("\"\\ud800\"", 1), ("1 x", 2), ("", 0), ("-", 1), ("1.", 2), ("\"\\x\"", 1),
            ("tru", 0), ("{1:2}", 1), ("\"abc", 0),
        ])
    func rejects(text: String, offset: Int) {
        #expect(throws: JSONParseError.self) { try JSONParser.parse(text) }
        do {
            _ = try JSONParser.parse(text)
        } catch {
            #expect(error.offset == offset, "\(text): \(error)")
        }
    }

    @Test("rejects invalid UTF-8 and nesting deeper than the limit; accepts surrogate pairs")
    func limits() throws {
        #expect(throws: JSONParseError.self) { try JSONParser.parse([0x22, 0xC3, 0x28, 0x22]) }
        let deep = String(repeating: "[", count: 65) + String(repeating: "]", count: 65)
        #expect(throws: JSONParseError.self) { try JSONParser.parse(deep) }
        let fine = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        _ = try JSONParser.parse(fine)
        #expect(throws: JSONParseError.self) {
            try JSONParser.parse("[1,2,3]", options: JSONParser.Options(maxBytes: 4))
        }
        #expect(try JSONParser.parse(#""\ud83d\ude00""#) == .string("😀"))
    }

    @Test("integer literals are integers; 5.0 and 1e3 are not")
    func integerStrictness() throws {
        #expect(try JSONParser.parse("5").number?.int64Value == 5)
        #expect(try JSONParser.parse("5.0").number?.int64Value == nil)
        #expect(try JSONParser.parse("1e3").number?.isIntegerLiteral == false)
        #expect(try JSONParser.parse("-9223372036854775808").number?.int64Value == .min)
        #expect(try JSONParser.parse("18446744073709551615").number?.uint64Value == .max)
        #expect(JSONNumber(text: "1.") == nil)
        #expect(JSONNumber(text: "-12")?.isIntegerLiteral == true)
    }

    @Test("the writer escapes quotes, backslashes and control characters, and nothing else")
    func writerEscapes() throws {
        let text: JSONValue = .string("a\"b\\c\u{1}\té/")
        #expect(text.encodedString() == #""a\"b\\c\u0001\té/""#)
        #expect(try JSONParser.parse(text.encoded()) == text)
    }
}
