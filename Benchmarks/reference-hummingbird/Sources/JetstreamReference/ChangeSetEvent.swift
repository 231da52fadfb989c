/// The `data:` of a `changeset` event: `{"version","fragments","removed"}`.
struct ChangeSetEvent: Sendable, Encodable {
    let version: Int
    let fragments: [Fragment]
    let removed: [String]
}
