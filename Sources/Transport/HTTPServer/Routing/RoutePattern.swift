/// A route path such as `/v1/scopes/{name}/events`: literal segments and `{parameter}` segments,
/// each matching exactly one path segment. A final `*` matches any rest of the path.
struct RoutePattern: Sendable, CustomStringConvertible {
    enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)
        case rest
    }

    let segments: [Segment]
    let description: String
    /// Whether it ends in `*`: then it matches paths of at least `segments.count - 1` parts, else
    /// of exactly `segments.count`. Kept so that a request passes most routes on a comparison of
    /// counts (a router tries every route in turn).
    private let endsWithRest: Bool

    init(_ pattern: String) {
        description = pattern
        segments = pattern.split(separator: "/", omittingEmptySubsequences: true).map { part in
            if part == "*" { return .rest }
            if part.hasPrefix("{"), part.hasSuffix("}") { return .parameter(String(part.dropFirst().dropLast())) }
            return .literal(String(part))
        }
        endsWithRest = segments.last == .rest
    }

    /// The parameters when `path` matches, else nil.
    func match(_ path: String) -> [String: String]? {
        match(parts: path.split(separator: "/", omittingEmptySubsequences: true))
    }

    /// The parameters when the path split into `parts` matches, else nil.
    func match(parts: [Substring]) -> [String: String]? {
        guard parts.count == segments.count || endsWithRest else { return nil }
        var parameters: [String: String] = [:]
        for (position, segment) in segments.enumerated() {
            switch segment {
            case .rest:
                return parameters
            case .literal(let literal):
                // Bytes, not Characters: a path segment matches only its exact spelling.
                guard position < parts.count, parts[position].utf8.elementsEqual(literal.utf8) else { return nil }
            case .parameter(let name):
                guard position < parts.count else { return nil }
                parameters[name] = PercentDecoding.decode(String(parts[position]))
            }
        }
        return parts.count == segments.count ? parameters : nil
    }
}
