/// `GET /v1/scopes/{name}`, the snapshot and reset events: `{"name","version","rootUUID","fragments"}`.
struct StateBody: Sendable, Encodable {
    let name: String
    let version: Int
    let rootUUID: String
    let fragments: [Fragment]
}
