import HTTPServer
import HTTPTypes
import JetstreamModel
import Logging

/// The HTTP API of `HTTP-API.md` over a ``ScopeHub``: add its routes to a router and serve it.
///
/// ```swift
/// let gateway = Gateway(hub: hub)
/// var router = Router()
/// gateway.addRoutes(to: &router)
/// let server = HTTPServer(configuration: httpConfiguration, router: router, logger: logger)
/// ```
public struct Gateway: Sendable {
    public let hub: ScopeHub
    /// Auth, limits, trusted proxies and CORS (open by default).
    public let access: AccessControl
    let schemaJSON: [UInt8]
    let openAPIBytes: [UInt8]

    public init(hub: ScopeHub, access: AccessControl = .open()) {
        self.hub = hub
        self.access = access
        schemaJSON = hub.configuration.schema.jsonValue.encoded()
        openAPIBytes = Array(OpenAPIDocument.yaml.utf8)
    }

    public func addRoutes(to router: inout Router) {
        addOperationRoutes(to: &router)
        router.get("/openapi.yaml") { [openAPIBytes] _, _ in
            HTTPServerResponse(status: .ok, headerFields: [.contentType: "application/yaml"], body: openAPIBytes)
        }
        router.get("/v1/schema") { [schemaJSON] _, _ in .json(schemaJSON) }
        addScopeRoutes(to: &router)
        addChangeSetRoutes(to: &router)
        addEventRoutes(to: &router)
        addPreflightRoutes(to: &router)
    }

    /// Runs `body`, answering a thrown ``Problem`` as problem+json.
    static func answer(_ body: () throws(Problem) -> HTTPServerResponse) -> HTTPServerResponse {
        do {
            return try body()
        } catch {
            return error.response
        }
    }

    static func answerAsync(_ body: () async throws(Problem) -> HTTPServerResponse) async -> HTTPServerResponse {
        do {
            return try await body()
        } catch {
            return error.response
        }
    }

    static func json(_ body: [UInt8], status: HTTPResponse.Status = .ok, version: Int? = nil) -> HTTPServerResponse {
        var fields: HTTPFields = [.contentType: "application/json"]
        if let version {
            fields[.eTag] = EntityTag.header(for: version)
            fields[.cacheControl] = "no-cache"
        }
        return HTTPServerResponse(status: status, headerFields: fields, body: body)
    }

    /// The request body as a JSON object, or the problem a client needs to fix it.
    static func jsonObjectBody(_ request: HTTPServerRequest) throws(Problem) -> JSONObject {
        try requireJSONContentType(request)
        let value: JSONValue
        do {
            value = try JSONParser.parse(request.body)
        } catch {
            throw Problem(.invalidJSON, detail: "the body is not valid JSON: \(error)")
        }
        guard let object = value.object else {
            throw Problem(.badRequest, detail: "the body must be a JSON object, not \(value.typeDescription)")
        }
        return object
    }

    static func requireJSONContentType(_ request: HTTPServerRequest) throws(Problem) {
        let contentType = request.headerFields[.contentType] ?? ""
        let mediaType = contentType.split(separator: ";").first.map { String($0).trimmingSpaces.lowercased() } ?? ""
        guard mediaType == "application/json" else {
            throw Problem(
                .unsupportedMediaType,
                detail: contentType.isEmpty
                    ? "send the body as JSON with Content-Type: application/json"
                    : "Content-Type \(contentType) is not supported: send application/json")
        }
    }

    /// A non-negative integer query parameter, `fallback` when absent.
    static func integerQuery(
        _ request: HTTPServerRequest, _ name: String, fallback: Int?, range: ClosedRange<Int>
    ) throws(Problem) -> Int? {
        guard let text = request.queryValue(name) else { return fallback }
        guard let value = Int(text), range.contains(value) else {
            throw Problem(
                .badRequest,
                detail:
                    "query parameter \(name)=\(text) must be an integer from \(range.lowerBound) to \(range.upperBound)"
            )
        }
        return value
    }
}
