import Store
import Testing

/// The notification payload nodes of a shared store exchange: small, parsable, and never mistaken.
@Suite struct ChangeNoticeTests {
    @Test("changes and deletions round-trip through the payload, names beginning with '-' included")
    func roundTrip() {
        let notice = ChangeNotice.changed([
            ScopeVersion(name: "canvas-1", version: 42), ScopeVersion(name: "-odd.name_~", version: 7),
            ScopeVersion(name: "gone", version: 0, deleted: true),
        ])
        let payload = notice.payload(limit: 8000)
        #expect(payload == "canvas-1:42,-odd.name_~:7,!gone:0")
        #expect(ChangeNotice(payload: payload) == notice)
    }

    @Test("a list longer than the limit becomes '*', and '*' or anything malformed reads as everything")
    func overflowAndMalformed() {
        let many = ChangeNotice.changed((0..<1000).map { ScopeVersion(name: "canvas-\($0)", version: Int64($0)) })
        #expect(many.payload(limit: 7900) == "*")
        #expect(ChangeNotice.everything.payload(limit: 7900) == "*")
        for text in ["*", "", "canvas-1", "canvas-1:x", ":4", "a:1,,b"] {
            #expect(ChangeNotice(payload: text) == .everything, "\(text)")
        }
    }
}
