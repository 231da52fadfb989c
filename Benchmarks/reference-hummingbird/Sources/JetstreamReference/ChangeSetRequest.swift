/// The body of `POST /v1/scopes/{name}/changesets`. Fragments stay untyped here so a malformed one
/// is reported in its own reply rather than failing the whole body.
struct ChangeSetRequest: Sendable, Decodable {
    let fragments: [JSONValue]
}
