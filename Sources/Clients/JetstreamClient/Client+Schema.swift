import Jetstream
import JetstreamModel

extension Client {
    /// `GET /v1/schema`'s answer: the schema and the `ETag` that names it (nil from a server that
    /// sends none), which a later read sends as `If-None-Match`.
    struct ServedSchema: Sendable {
        let schema: Schema
        let entityTag: String?
    }

    func loadSchema() async throws(ClientError) -> ServedSchema {
        let answer = try await request("GET", "/v1/schema")
        guard answer.status == 200 else { throw ClientError.refused(status: answer.status, problem: answer.body) }
        do {
            return ServedSchema(schema: try Schema.parse(json: answer.body), entityTag: answer.entityTag)
        } catch {
            throw ClientError.invalidState("GET /v1/schema: \(error)")
        }
    }

    /// The schema the app's model classes of `scope` form. Read before the scope adopts the
    /// server's schema: from then on `scope.schema()` answers with the server's, and a later check
    /// (after a `reset`) must compare the app's classes, not the schema the server had before.
    static func modelSchema(of scope: Scope) throws(ClientError) -> Schema {
        do {
            return try scope.schema()
        } catch {
            throw ClientError.schemaMismatch(["the model classes do not form a schema: \(error)"])
        }
    }

    /// The model classes must agree with the server's schema: every class and synced property the
    /// app declares (`local`, from ``modelSchema(of:)``) exists there with the same type, and the
    /// server's scope rule for `name` gives the root class the app has (`rootClass`).
    static func check(
        _ local: Schema, scope name: String, rootClass: String, against server: Schema
    ) throws(ClientError) {
        let problems = differences(local, scope: name, rootClass: rootClass, against: server)
        guard problems.isEmpty else { throw ClientError.schemaMismatch(problems) }
    }

    /// ``check(_:scope:rootClass:against:)``'s differences, one line each (none when they agree).
    static func differences(_ local: Schema, scope name: String, rootClass: String, against server: Schema) -> [String]
    {
        var problems: [String] = []
        for modelClass in local.classes {
            guard let serverClass = server.modelClass(named: modelClass.name) else {
                problems.append("the server has no class \(modelClass.name)")
                continue
            }
            for property in modelClass.properties {
                guard let serverProperty = serverClass.properties.first(where: { $0.name == property.name }) else {
                    problems.append("\(modelClass.name).\(property.name) is not in the server's schema")
                    continue
                }
                if serverProperty.type != property.type || serverProperty.isNullable != property.isNullable {
                    problems.append(
                        "\(modelClass.name).\(property.name) is \(property.type.name)\(property.isNullable ? "?" : "") here, "
                            + "\(serverProperty.type.name)\(serverProperty.isNullable ? "?" : "") on the server")
                }
            }
        }
        if let rule = server.rootClass(forScope: name), rule.name != rootClass {
            problems.append("scope \(name) has a \(rule.name) root on the server, a \(rootClass) here")
        }
        return problems
    }
}
