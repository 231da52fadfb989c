import JetstreamModel

/// How the stored scopes fit a schema: what `jetstream check-schema --data-dir` prints, and why
/// `serve` refuses to start when they do not (then thrown as the error). Every problem of every
/// scope, not the first.
///
/// ```
/// scope 'board-1' object 6f1c… Card.points: stored 8: out-of-range: 8 is above max 5
/// 3 objects in 2 scopes do not fit the schema
/// ```
public struct SchemaFitReport: Error, Sendable, CustomStringConvertible {
    /// One stored object the schema refuses, with its scope.
    public struct Problem: Sendable, Hashable {
        public let scope: String
        public let problem: StoredValueProblem
    }

    /// A scope that could not be read at all under the schema (a logged change set it refuses as a
    /// whole, say a reference to an object of another class).
    public struct Failure: Sendable, Hashable {
        public let scope: String
        public let version: Int
        public let message: String
    }

    public internal(set) var scopes = 0
    public internal(set) var objects = 0
    /// Stored values an `onInvalid` fixed.
    public internal(set) var fixedValues = 0
    public internal(set) var problems: [Problem] = []
    public internal(set) var failures: [Failure] = []
    /// Scopes whose stored data the translation changed (something in them does not read as stored).
    var translatedScopes: Set<String> = []

    public init() {}

    public var fits: Bool { problems.isEmpty && failures.isEmpty }

    /// The lines naming each problem, then a summary naming the schema (`schemaName`, a file).
    public func lines(schemaName: String = "the schema") -> [String] {
        var lines = problems.map { "scope '\($0.scope)' \($0.problem)" }
        lines += failures.map { "scope '\($0.scope)' version \($0.version): \($0.message)" }
        if !fits {
            let scopeCount = Set(problems.map(\.scope) + failures.map(\.scope)).count
            let objectCount = Set(problems.map { "\($0.scope)/\($0.problem.uuid)" }).count
            var summary = "\(objectCount) object\(objectCount == 1 ? "" : "s") in \(scopeCount) scope"
            summary += scopeCount == 1 ? "" : "s"
            summary += " do not fit \(schemaName)"
            if !failures.isEmpty { summary += " (\(failures.count) scope\(failures.count == 1 ? "" : "s") unreadable)" }
            lines.append(summary)
        }
        return lines
    }

    public var description: String {
        (["the stored data does not fit the schema:"] + lines().map { "  " + $0 }).joined(separator: "\n")
    }

    /// `{"fits","scopes","objects","fixed","problems":[{"scope",…}],"failures":[…]}`.
    public var jsonValue: JSONValue {
        let problemValues: [JSONValue] = problems.map { entry in
            guard case .object(var object) = entry.problem.jsonValue else { return entry.problem.jsonValue }
            object["scope"] = .string(entry.scope)
            return .object(object)
        }
        let failureValues: [JSONValue] = failures.map { failure in
            [
                "scope": .string(failure.scope), "version": .number(JSONNumber(failure.version)),
                "message": .string(failure.message),
            ]
        }
        return [
            "fits": .bool(fits), "scopes": .number(JSONNumber(scopes)), "objects": .number(JSONNumber(objects)),
            "fixed": .number(JSONNumber(fixedValues)), "problems": .array(problemValues),
            "failures": .array(failureValues),
        ]
    }
}
