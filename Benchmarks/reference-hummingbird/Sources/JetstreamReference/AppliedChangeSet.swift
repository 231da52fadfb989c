/// What an accepted change set did: the new version, the normalised fragments and the UUIDs
/// (lowercase, sorted) of the objects that left the scope.
struct AppliedChangeSet: Sendable {
    let version: Int
    let fragments: [Fragment]
    let removed: [String]

    var event: ChangeSetEvent { ChangeSetEvent(version: version, fragments: fragments, removed: removed) }

    var response: ChangeSetResponse {
        ChangeSetResponse(
            version: version, fragmentReplies: Array(repeating: .ok, count: fragments.count), fragments: fragments,
            removed: removed)
    }
}
