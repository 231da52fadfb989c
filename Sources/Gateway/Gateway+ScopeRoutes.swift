import Foundation
import HTTPServer
import HTTPTypes
import JetstreamModel

extension Gateway {
    func addScopeRoutes(to router: inout Router) {
        let hub = self.hub
        router.get("/v1/scopes", gate(.anyClient)) { request, _, grant in
            Self.answer { () throws(Problem) in
                let limit = try Self.integerQuery(request, "limit", fallback: 100, range: 1...1000)!
                let after = request.queryValue("after")
                if let after { try ScopeName.validate(after) }
                let (page, next) = hub.list(after: after, limit: limit) { grant.allows(.read, scope: $0) }
                var writer = JSONWriter(capacity: 64 + page.count * 96)
                writer.writeRaw(#"{"scopes":["#)
                for (index, entry) in page.enumerated() {
                    let state = entry.handle.committedState
                    if index > 0 { writer.writeRaw(",") }
                    writer.write([
                        "name": .string(entry.name), "rootClass": .string(entry.handle.rootClass),
                        "rootUUID": .string(state.rootUUID.wireString), "version": .number(JSONNumber(state.version)),
                    ])
                }
                writer.writeRaw(#"],"next":"#)
                writer.write(next.map(JSONValue.string) ?? .null)
                writer.writeRaw("}")
                return Self.json(writer.bytes)
            }
        }

        router.put("/v1/scopes/{name}", gate(.write)) { request, context in
            await Self.answerAsync { () async throws(Problem) in
                let name = context.parameters["name"] ?? ""
                try ScopeName.validate(name)
                let body = try Self.jsonObjectBody(request)
                guard let root = body["root"]?.object else {
                    throw Problem(
                        .badRequest, detail: #"the body must be {"root":{"clsName":…,"uuid"?:…,"properties"?:{…}}}"#)
                }
                guard let clsName = root["clsName"]?.string else {
                    throw Problem(.badRequest, detail: "root.clsName must be a string naming the root's class")
                }
                var uuid: UUID?
                if let value = root["uuid"], value != .null {
                    guard let text = value.string, let parsed = UUID(wireString: text) else {
                        throw Problem(.badRequest, detail: "root.uuid must be a UUID string")
                    }
                    uuid = parsed
                }
                var properties = JSONObject()
                if let value = root["properties"] {
                    guard let object = value.object else {
                        throw Problem(.badRequest, detail: "root.properties must be an object")
                    }
                    properties = object
                }
                let handle = try await hub.create(
                    name: name, rootClassName: clsName, rootUUID: uuid, properties: properties)
                let (version, json) = handle.stateJSON()
                var response = Self.json(json, status: .created, version: version)
                response.head.headerFields[.location] = "/v1/scopes/\(name)"
                return response
            }
        }

        router.get("/v1/scopes/{name}", gate(.read)) { request, context in
            Self.answer { () throws(Problem) in
                let handle = try hub.existingHandle(context.parameters["name"] ?? "")
                let version = handle.committedState.version
                if let header = request.headerFields[.ifNoneMatch] {
                    guard let condition = EntityTag.parse(header, allowWeak: true) else {
                        throw Problem(.badRequest, detail: "If-None-Match \(header) is not a list of entity tags")
                    }
                    if ScopeHub.matches(condition, version: version) {
                        return HTTPServerResponse(
                            status: .notModified,
                            headerFields: [.eTag: EntityTag.header(for: version), .cacheControl: "no-cache"])
                    }
                }
                let (stateVersion, json) = handle.stateJSON()
                return Self.json(json, version: stateVersion)
            }
        }

        router.delete("/v1/scopes/{name}", gate(.write)) { _, context in
            await Self.answerAsync { () async throws(Problem) in
                try await hub.delete(name: context.parameters["name"] ?? "")
                return HTTPServerResponse(status: .noContent)
            }
        }

        router.get("/v1/scopes/{name}/objects/{uuid}", gate(.read)) { _, context in
            Self.answer { () throws(Problem) in
                let handle = try hub.existingHandle(context.parameters["name"] ?? "")
                let text = context.parameters["uuid"] ?? ""
                guard let uuid = UUID(wireString: text) else {
                    throw Problem(.badRequest, detail: "'\(text.prefix(64))' is not a UUID")
                }
                let state = handle.committedState
                guard let object = state.objectJSON(uuid) else {
                    throw Problem(.notFound, detail: "scope '\(handle.name)' has no object \(uuid.wireString)")
                }
                return Self.json(object.encoded(), version: state.version)
            }
        }
    }
}
