/// The body of `POST /v1/scopes/{name}/changesets`: `{"fragments":[…]}`.
struct ChangeSetRequest: Sendable, Decodable {
    let fragments: [FragmentEntry]
}
