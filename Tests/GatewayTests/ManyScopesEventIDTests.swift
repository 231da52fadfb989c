import Testing

@testable import Gateway

/// The many-scope stream's id (``ManyScopesEventID``): fixed-width entries a stream rewrites in place.
@Suite struct ManyScopesEventIDTests {
    @Test("an id names each scope's position in 16 characters and reads back exactly")
    func roundTrip() throws {
        let names = ["canvas-1", String(repeating: "n", count: 128), "a"]
        let versions = [0, 41, 281_474_976_710_655]
        let keys = names.map(ManyScopesEventID.key(of:))
        let id = ManyScopesEventID.encode(zip(keys, versions).map { ($0, $1) })
        #expect(id.utf8.count == 1 + 16 * names.count)
        #expect(id.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
        let decoded = try #require(ManyScopesEventID.decode(id))
        #expect(decoded == Dictionary(uniqueKeysWithValues: zip(keys, versions)))
    }

    @Test("an entry is the same width whatever the version, so one can be rewritten in place")
    func fixedWidth() {
        let key = ManyScopesEventID.key(of: "canvas-1")
        #expect(Set([0, 1, 300, 1 << 40].map { ManyScopesEventID.entry(key: key, version: $0).count }) == [16])
    }

    @Test("what is not such an id is no id: a version number, a wrong length, a foreign character")
    func refusals() {
        let entry = String(decoding: ManyScopesEventID.entry(key: 7, version: 3), as: UTF8.self)
        #expect(ManyScopesEventID.decode("41") == nil)
        #expect(ManyScopesEventID.decode("m" + entry.dropLast()) == nil)
        #expect(ManyScopesEventID.decode("m" + entry.dropLast() + "=") == nil)
        #expect(ManyScopesEventID.decode("m") == [:])
        #expect(ManyScopesEventID.decode("m" + entry) == [7: 3])
    }
}
