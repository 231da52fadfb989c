/// A failure of the test harness (a server that does not start, a condition never reached), with
/// a message that says what was expected.
struct HarnessError: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}
