/// The `200` body of an accepted change set: `{"version","fragmentReplies","fragments","removed"}`.
struct ChangeSetResponse: Sendable, Encodable {
    let version: Int
    let fragmentReplies: [FragmentReply]
    let fragments: [Fragment]
    let removed: [String]
}
