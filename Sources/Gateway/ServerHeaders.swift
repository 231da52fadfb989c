import HTTPTypes

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
