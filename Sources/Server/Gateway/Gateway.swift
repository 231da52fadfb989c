import HTTPServer
import HTTPTypes
import JetstreamModel
import Logging
import ScopeEngine

/// The HTTP API of `docs/gateway.md` over a ``ScopeEngine/ScopeEngine``: add its routes to a router
/// and serve it. ``GatewayServer`` assembles all of it from a configuration; build one by hand only
/// to put the routes on a server of your own.
///
/// ```swift
/// let metrics = GatewayMetrics()
/// var engineConfiguration = ScopeEngineConfiguration(schema: .demo)
/// Gateway.prepare(&engineConfiguration, metrics: metrics)
/// let engine = ScopeEngine(configuration: engineConfiguration, store: store, logger: logger)
/// let gateway = Gateway(engine: engine, metrics: metrics)
/// var router = Router()
/// gateway.addRoutes(to: &router)
/// ```
public struct Gateway: Sendable {
    public let engine: ScopeEngine
    /// Auth, rate and stream limits, trusted proxies and CORS (open by default).
    public let access: AccessControl
    public let metrics: GatewayMetrics
    /// The `retry:` reconnection delay sent at the start of every event stream, in milliseconds.
    public let retryMilliseconds: Int
    /// Whether `/demo/` is served: the engine runs the built-in demo schema (``Schema/demo``), which
    /// the demo page is written against. Decided by comparing schemas rather than by a flag of
    /// `jetstream serve`, so it cannot disagree with what the engine validates: `--schema` with a
    /// file equal to the demo schema serves it too, and a gateway built by hand needs no setting.
    ///
    /// ```swift
    /// Gateway(engine: engine).servesDemo   // engine.schema == .demo
    /// ```
    public let servesDemo: Bool
    let schemaJSON: [UInt8]
    /// The server methods by name (`POST …/methods/{method}`): the ones given, and with the demo
    /// schema its own (``DemoMethods``) unless one of the same name was given.
    public let methods: [String: ScopeMethod]
    /// The methods served over HTTP (`--method NAME=URL`), by name; a Swift method of the same
    /// name wins.
    public let methodHooks: [String: HTTPMethodHook]

    public init(
        engine: ScopeEngine, access: AccessControl = .open(), metrics: GatewayMetrics = GatewayMetrics(),
        retryMilliseconds: Int = 2000, methods: [ScopeMethod] = [], methodHooks: [HTTPMethodHook] = []
    ) {
        self.engine = engine
        self.access = access
        self.metrics = metrics
        self.retryMilliseconds = retryMilliseconds
        schemaJSON = engine.schema.jsonValue.encoded()
        servesDemo = engine.schema == .demo
        var byName: [String: ScopeMethod] = [:]
        for method in (servesDemo ? DemoMethods.all : []) + methods { byName[method.name] = method }
        self.methods = byName
        var hooks: [String: HTTPMethodHook] = [:]
        for hook in methodHooks where byName[hook.name] == nil { hooks[hook.name] = hook }
        self.methodHooks = hooks
    }

    /// Fits an engine configuration to this HTTP face: subscribers are event streams delivered on
    /// their connections' loops, stored idempotent rejections are problem+json, and commits,
    /// fan-outs and replays are counted in `metrics`.
    public static func prepare(_ configuration: inout ScopeEngineConfiguration, metrics: GatewayMetrics) {
        configuration.makeSubscribers = { StreamSubscribers() }
        configuration.encodeRejection = { error in
            let problem = Problem(error)
            return (Int(problem.kind.status.code), problem.response.body)
        }
        configuration.observer = metrics
    }

    /// The OpenAPI document, embedded in the binary from `Resources/openapi.yaml` (a test keeps it
    /// identical to the repository's `openapi.yaml`).
    public static let openAPIDocument: [UInt8] = PackageResources.openapi_yaml

    public func addRoutes(to router: inout Router) {
        let engine = self.engine
        let metrics = self.metrics
        router.get("/healthz") { _, _ in .json(#"{"status":"ok"}"#) }
        router.get("/readyz") { _, context in
            context.answerAsync {
                guard let reason = await engine.readinessProblem() else { return .json(#"{"status":"ready"}"#) }
                return Problem(.notReady, detail: reason, headers: [.retryAfter: "5"]).response
            }
        }
        router.get("/metrics") { _, _ in
            HTTPServerResponse(
                status: .ok, headerFields: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: metrics.exposition())
        }
        router.get("/openapi.yaml") { _, _ in
            HTTPServerResponse(
                status: .ok, headerFields: [.contentType: "application/yaml"], body: Self.openAPIDocument)
        }
        // The schema's fingerprint is its ETag: a client revalidates with `If-None-Match` (after a
        // `reset`, say) and learns in a `304` that nothing changed.
        let schemaAsset = StaticAsset(
            body: schemaJSON, contentType: "application/json", entityTag: engine.schema.fingerprint)
        router.get("/v1/schema") { request, _ in schemaAsset.response(to: request) }
        addScopeRoutes(to: &router)
        addChangeSetRoutes(to: &router)
        addObjectRoutes(to: &router)
        addPastRoutes(to: &router)
        addMethodRoutes(to: &router)
        addEventRoutes(to: &router)
        addManyScopesRoute(to: &router)
        addPresenceRoutes(to: &router)
        addClientRoutes(to: &router)
        addIndexRoute(to: &router)
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

    /// Runs `body` in a task (the handler returns ``HTTPServer/HTTPServerResponse/deferred``),
    /// answering a thrown ``Problem`` as problem+json.
    static func answerAsync(
        _ context: HTTPRequestContext, _ body: @escaping @Sendable () async throws(Problem) -> HTTPServerResponse
    ) -> HTTPServerResponse {
        context.answerAsync {
            do throws(Problem) {
                return try await body()
            } catch {
                return error.response
            }
        }
    }

    static func json(_ body: [UInt8], status: HTTPResponse.Status = .ok, version: Int? = nil) -> HTTPServerResponse {
        var fields: HTTPFields = [.contentType: "application/json"]
        if let version {
            // Appended: the fields are new, and setting by name searches them first.
            fields.append(HTTPField(name: .eTag, value: EntityTag.header(for: version)))
            fields.append(HTTPField(name: .cacheControl, value: "no-cache"))
        }
        return HTTPServerResponse(status: status, headerFields: fields, body: body)
    }

    /// The request body as a JSON object, or the problem a client needs to fix it.
    static func jsonObjectBody(_ request: HTTPServerRequest) throws(Problem) -> JSONObject {
        try requireJSONContentType(request)
        let value = try jsonBody(request)
        guard let object = value.object else {
            throw Problem(.badRequest, detail: "the body must be a JSON object, not \(value.typeDescription)")
        }
        return object
    }

    /// The request body parsed as JSON (any value), or `400 invalid-json`.
    static func jsonBody(_ request: HTTPServerRequest) throws(Problem) -> JSONValue {
        // A compressed body would reach the parser as bytes it cannot read: say why instead.
        if let coding = request.headerFields.value(of: .contentEncoding),
            coding.trimmingSpaces.lowercased() != "identity"
        {
            throw Problem(
                .unsupportedMediaType,
                detail:
                    "Content-Encoding \(coding.prefix(64)) is not supported for request bodies: send the body uncompressed"
            )
        }
        do {
            return try JSONParser.parse(request.body)
        } catch {
            throw Problem(.invalidJSON, detail: "the body is not valid JSON: \(error)")
        }
    }

    /// The `Content-Type` without parameters, lowercased (`""` when absent).
    static func mediaType(of request: HTTPServerRequest) -> String {
        guard let contentType = request.headerFields.value(of: .contentType) else { return "" }
        // What nearly every write sends: nothing to strip or lower (read on every change set).
        if contentType == "application/json" { return contentType }
        return contentType.split(separator: ";").first.map { String($0).trimmingSpaces.lowercased() } ?? ""
    }

    static func requireJSONContentType(_ request: HTTPServerRequest) throws(Problem) {
        guard mediaType(of: request) == "application/json" else {
            let contentType = request.headerFields.value(of: .contentType) ?? ""
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

/// Header names the gateway uses that swift-http-types does not predefine.
enum ServerHeaders {
    static let xForwardedFor = HTTPField.Name("X-Forwarded-For")!
    static let forwarded = HTTPField.Name("Forwarded")!
    static let wwwAuthenticate = HTTPField.Name("WWW-Authenticate")!
    static let origin = HTTPField.Name("Origin")!
    static let accessControlRequestMethod = HTTPField.Name("Access-Control-Request-Method")!
    static let accessControlRequestHeaders = HTTPField.Name("Access-Control-Request-Headers")!
    static let allowOrigin = HTTPField.Name("Access-Control-Allow-Origin")!
    static let allowCredentials = HTTPField.Name("Access-Control-Allow-Credentials")!
    static let allowMethods = HTTPField.Name("Access-Control-Allow-Methods")!
    static let allowHeaders = HTTPField.Name("Access-Control-Allow-Headers")!
    static let exposeHeaders = HTTPField.Name("Access-Control-Expose-Headers")!
    static let maxAge = HTTPField.Name("Access-Control-Max-Age")!
}
