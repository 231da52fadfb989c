import Foundation

/// One incoming reference: the object `parent` refers to the owner through its property at
/// `propertyIndex`.
struct ParentRef: Sendable, Hashable {
    let parent: UUID
    let propertyIndex: Int
}
