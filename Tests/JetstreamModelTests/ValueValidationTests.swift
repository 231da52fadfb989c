import Foundation
import JetstreamModel
import Testing

/// Strict value checks per type (docs/model.md, "Strictness decisions").
@Suite("Value validation")
struct ValueValidationTests {
    let limits = Limits()

    func check(
        _ type: PropertyType, _ json: JSONValue, nullable: Bool = false,
        constraints: PropertyConstraints = PropertyConstraints()
    ) -> Result<Value, FragmentError> {
        let property = PropertyDefinition(name: "p", type: type, isNullable: nullable, constraints: constraints)
        return Result { () throws(FragmentError) in try property.validate(json, limits: limits) { _ in nil } }
    }

    func kind(_ result: Result<Value, FragmentError>) -> FragmentError.Kind? {
        if case .failure(let error) = result { return error.kind }
        return nil
    }

    @Test(
        "integer widths: in range is stored, one past the edge is out-of-range",
        arguments: [
            (PropertyType.int8, "-128", "127", "-129", "128"),
            (.int16, "-32768", "32767", "-32769", "32768"),
            (.int32, "-2147483648", "2147483647", "-2147483649", "2147483648"),
            (.int64, "-9223372036854775808", "9223372036854775807", "-9223372036854775809", "9223372036854775808"),
            (.uint8, "0", "255", "-1", "256"),
            (.uint16, "0", "65535", "-1", "65536"),
            (.uint32, "0", "4294967295", "-1", "4294967296"),
            (.uint64, "0", "18446744073709551615", "-1", "18446744073709551616"),
            (.color, "0", "4294967295", "-1", "4294967296"),
        ])
    func integerWidths(type: PropertyType, low: String, high: String, below: String, above: String) throws {
        for text in [low, high] {
            let value = try check(type, .number(JSONNumber(text: text)!)).get()
            #expect(value.jsonValue.encodedString() == text)
        }
        for text in [below, above] {
            #expect(kind(check(type, .number(JSONNumber(text: text)!))) == .outOfRange, "\(type) \(text)")
        }
    }

    @Test("integers reject fractions, exponents, strings and booleans as type-mismatch")
    func integerTypes() throws {
        for json: JSONValue in [5.5, .number(JSONNumber(text: "5.0")!), .number(JSONNumber(text: "1e3")!), "5", true] {
            #expect(kind(check(.int32, json)) == .typeMismatch, "\(json)")
        }
        #expect(try check(.uint8, .number(JSONNumber(text: "-0")!)).get() == .uint(0))
    }

    @Test("Float and Double: finite numbers; overflow is out-of-range; integers are fine")
    func floatingPoint() throws {
        #expect(try check(.float, 10).get() == .float(10))
        #expect(try check(.float, 0.1).get().jsonValue.encodedString() == "0.1")
        #expect(try check(.double, 0.1).get() == .double(0.1))
        #expect(kind(check(.float, .number(JSONNumber(text: "1e39")!))) == .outOfRange)
        #expect(kind(check(.double, .number(JSONNumber(text: "1e400")!))) == .outOfRange)
        // Underflow is refused like overflow: a non-zero number must not silently become 0.
        #expect(kind(check(.double, .number(JSONNumber(text: "1e-400")!))) == .outOfRange)
        #expect(kind(check(.double, .number(JSONNumber(text: "-2.5E-999")!))) == .outOfRange)
        #expect(kind(check(.float, .number(JSONNumber(text: "1e-50")!))) == .outOfRange)
        #expect(try check(.double, .number(JSONNumber(text: "0.000e-400")!)).get() == .double(0))
        #expect(try check(.float, .number(JSONNumber(text: "-0.0")!)).get() == .float(-0.0))
        #expect(try check(.double, .number(JSONNumber(text: "5e-324")!)).get() == .double(5e-324))
        #expect(kind(check(.double, "1.5")) == .typeMismatch)
        #expect(try check(.date, 1_700_000_000.25).get() == .double(1_700_000_000.25))
    }

    @Test("min/max apply to every numeric type")
    func minMax() {
        let bounds = PropertyConstraints(min: 0, max: 10)
        #expect(kind(check(.int, -1, constraints: bounds)) == .outOfRange)
        #expect(kind(check(.double, 10.5, constraints: bounds)) == .outOfRange)
        #expect(kind(check(.uint8, 10, constraints: bounds)) == nil)
    }

    @Test("strings: maxLength in characters, pattern on the whole string, the server's byte limit")
    func strings() {
        let constraints = PropertyConstraints(maxLength: 3, pattern: "[a-zé]+")
        #expect(kind(check(.string, "abé", constraints: constraints)) == nil)
        #expect(kind(check(.string, "abcd", constraints: constraints)) == .constraintViolation)
        #expect(kind(check(.string, "ab1", constraints: constraints)) == .constraintViolation)
        #expect(kind(check(.string, 1)) == .typeMismatch)
        let big = String(repeating: "x", count: limits.maxStringLength + 1)
        #expect(kind(check(.string, .string(big))) == .limitExceeded)
    }

    @Test("Bool and enums")
    func boolAndEnums() throws {
        #expect(kind(check(.bool, 1)) == .typeMismatch)
        #expect(try check(.bool, false).get() == .bool(false))
        let strings = PropertyType.enumeration(.strings(["rect", "oval"]))
        #expect(try check(strings, "oval").get() == .string("oval"))
        #expect(kind(check(strings, "hex")) == .constraintViolation)
        #expect(kind(check(strings, 1)) == .typeMismatch)
        let integers = PropertyType.enumeration(.integers([0, 1]))
        #expect(try check(integers, 1).get() == .int(1))
        #expect(kind(check(integers, 2)) == .constraintViolation)
        #expect(kind(check(integers, "1")) == .typeMismatch)
    }

    @Test("null: only for nullable scalars; collections never")
    func nulls() throws {
        #expect(kind(check(.string, nil)) == .nullNotAllowed)
        #expect(try check(.string, nil, nullable: true).get() == .null)
        #expect(kind(check(.collection(.string), nil)) == .nullNotAllowed)
        #expect(kind(check(.collection(.string), ["a", nil])) == .nullNotAllowed)
    }

    @Test("primitive collections check each element and name it")
    func primitiveCollections() throws {
        let property = PropertyDefinition(
            name: "scores", type: .collection(.double), constraints: PropertyConstraints(min: 0, maxCount: 2))
        #expect(try property.validate([1, 2.5], limits: limits) { _ in nil } == .list([.double(1), .double(2.5)]))
        #expect {
            try property.validate([1, -2], limits: limits) { _ in nil }
        } throws: { error in
            (error as? FragmentError)?.kind == .outOfRange && (error as? FragmentError)?.property == "scores[1]"
        }
        #expect {
            try property.validate([1, 2, 3], limits: limits) { _ in nil }
        } throws: { error in
            (error as? FragmentError)?.kind == .constraintViolation
        }
        #expect {
            try property.validate([1], limits: Limits(maxCollectionLength: 0)) { _ in nil }
        } throws: { error in
            (error as? FragmentError)?.kind == .limitExceeded
        }
    }

    @Test("references: a UUID string of an existing object of the right class")
    func references() throws {
        let shape = ModelClass(name: "Shape", properties: [])
        let other = ModelClass(name: "Other", properties: [])
        let existing = UUID()
        let wrong = UUID()
        let property = PropertyDefinition(name: "s", type: .reference("Shape"), isNullable: true)
        let classOf: (UUID) -> ModelClass? = { $0 == existing ? shape : $0 == wrong ? other : nil }
        func refKind(_ json: JSONValue) -> FragmentError.Kind? {
            do {
                _ = try property.validate(json, limits: limits, classOf: classOf)
                return nil
            } catch {
                return error.kind
            }
        }
        #expect(
            try property.validate(.string(existing.uuidString), limits: limits, classOf: classOf)
                == .reference(existing))
        #expect(refKind(.string(UUID().wireString)) == .missingReference)
        #expect(refKind(.string(wrong.wireString)) == .wrongClass)
        #expect(refKind("nope") == .typeMismatch)
        #expect(refKind(5) == .typeMismatch)
        #expect(refKind(nil) == nil)
    }
}
