import Testing

@testable import JetstreamClient

/// The sender reads an accepted set's version from the answer's `ETag` (`"42"`), not its body.
@Suite struct EntityTagVersionTests {
    @Test("a strong tag of a non-negative integer names a version")
    func versions() {
        #expect(Client.version(entityTag: #""42""#) == 42)
        #expect(Client.version(entityTag: #""0""#) == 0)
    }

    @Test("anything else names none", arguments: [#"W/"42""#, "42", #""""#, #""-1""#, #""4x""#, #"""#, ""])
    func notVersions(_ tag: String) {
        #expect(Client.version(entityTag: tag) == nil)
    }
}
