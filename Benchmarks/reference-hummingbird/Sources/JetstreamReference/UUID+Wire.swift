import Foundation

extension UUID {
    /// The lowercase form the gateway puts on the wire (`uuidString` is uppercase).
    var wireString: String { uuidString.lowercased() }
}
