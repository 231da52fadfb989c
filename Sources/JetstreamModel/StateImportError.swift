/// Why a full state could not be imported.
public struct StateImportError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The index of the fragment at fault, when one is.
    public let fragmentIndex: Int?
    public let message: String

    public init(fragmentIndex: Int?, message: String) {
        self.fragmentIndex = fragmentIndex
        self.message = message
    }

    public var description: String {
        fragmentIndex.map { "fragment \($0): \(message)" } ?? message
    }
}
