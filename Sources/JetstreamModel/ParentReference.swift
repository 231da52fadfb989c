import Foundation

/// An incoming reference to an object: `uuid`'s property `key` refers to it.
public struct ParentReference: Sendable, Hashable {
    public let uuid: UUID
    public let key: String

    public init(uuid: UUID, key: String) {
        self.uuid = uuid
        self.key = key
    }
}
