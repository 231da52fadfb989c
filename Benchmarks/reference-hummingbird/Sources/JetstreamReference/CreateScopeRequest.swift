/// The body of `PUT /v1/scopes/{name}`: `{"root":{"clsName","uuid"?,"properties"?}}`.
struct CreateScopeRequest: Sendable, Decodable {
    struct Root: Sendable, Decodable {
        let clsName: String
        let uuid: String?
        let properties: [String: JSONValue]?
    }

    let root: Root
}
