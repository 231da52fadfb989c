import Synchronization

/// One typed property of a model class.
///
/// ```swift
/// let width = PropertyDefinition(
///     name: "width", type: .float, defaultValue: .float(100), constraints: PropertyConstraints(min: 0))
/// ```
public struct PropertyDefinition: Sendable, Hashable {
    public let name: String
    public let type: PropertyType
    /// A trailing `?` in the schema. Collections are never nullable.
    public let isNullable: Bool
    /// The value an `add` gets when it leaves the property out.
    public let defaultValue: Value
    /// Whether the schema named a default (rather than the type's zero or `null`).
    public let hasExplicitDefault: Bool
    public let constraints: PropertyConstraints
    /// The name this property was stored under before a rename (`renamedFrom:`): a stored object
    /// that has a value under that name and none under ``name`` loads it as this property's value.
    public let renamedFrom: String?
    /// What loading does with a stored value this property now refuses (`onInvalid:`); without
    /// one, such a value stops the server from starting and `check-schema` reports it.
    public let onInvalid: InvalidValuePolicy?
    /// Who may change the property of an existing object (`write:`); the class's `rules` apply too.
    public let write: WriteRule
    /// Set by the object's add and never changed after it (`immutable: true`).
    public let isImmutable: Bool

    /// A property; without `defaultValue` it defaults to `null` when nullable, else the type's zero.
    /// ``Schema/init(classes:scopes:)`` checks the definition (default included) against its type.
    public init(
        name: String, type: PropertyType, isNullable: Bool = false, defaultValue: Value? = nil,
        constraints: PropertyConstraints = PropertyConstraints(), renamedFrom: String? = nil,
        onInvalid: InvalidValuePolicy? = nil, write: WriteRule = .any, isImmutable: Bool = false
    ) {
        self.name = name
        self.type = type
        self.isNullable = isNullable
        self.hasExplicitDefault = defaultValue != nil
        self.defaultValue = defaultValue ?? (isNullable ? .null : Value.zero(of: type))
        self.constraints = constraints
        self.renamedFrom = renamedFrom
        self.onInvalid = onInvalid
        self.write = write
        self.isImmutable = isImmutable
    }

    /// Whether a write rule or `immutable` constrains who changes this property.
    public var hasRules: Bool { write != .any || isImmutable }
}

/// What loading stored data does with a value its property now refuses (a schema's `onInvalid:`).
///
/// ```yaml
/// rank: { type: Int16, min: 0, max: 10, onInvalid: clamp }   # a stored 14 loads as 10
/// ```
public enum InvalidValuePolicy: String, Sendable, Hashable, CaseIterable {
    /// The property's default.
    case `default`
    /// The nearest value that fits: a number into `min`…`max` and its type's range, a string cut to
    /// `maxLength`, a collection cut to `maxCount` (its elements clamped); anything else its default.
    case clamp
    /// `null` (the property must be nullable).
    case null
    /// The whole object leaves the scope: references to it become `null`, collections drop it.
    case removeObject = "remove-object"
}

/// Optional constraints on a property. `min`/`max` apply to numbers, `maxLength`/`pattern` to
/// strings, `maxCount` to collections; on a collection, the scalar constraints apply to each element.
///
/// ```swift
/// PropertyConstraints(min: 0, maxLength: nil)
/// ```
public struct PropertyConstraints: Sendable, Hashable {
    public var min: Double?
    public var max: Double?
    /// Longest string, in Unicode scalars.
    public var maxLength: Int?
    /// A regular expression the whole string must match.
    public var pattern: String? {
        didSet { compiledPattern = pattern.flatMap(CompiledPattern.init) }
    }
    public var maxCount: Int?
    private(set) var compiledPattern: CompiledPattern?

    public init(
        min: Double? = nil, max: Double? = nil, maxLength: Int? = nil, pattern: String? = nil, maxCount: Int? = nil
    ) {
        self.min = min
        self.max = max
        self.maxLength = maxLength
        self.pattern = pattern
        self.maxCount = maxCount
        self.compiledPattern = pattern.flatMap(CompiledPattern.init)
    }

    public var isEmpty: Bool { min == nil && max == nil && maxLength == nil && pattern == nil && maxCount == nil }

    public static func == (lhs: PropertyConstraints, rhs: PropertyConstraints) -> Bool {
        lhs.min == rhs.min && lhs.max == rhs.max && lhs.maxLength == rhs.maxLength && lhs.pattern == rhs.pattern
            && lhs.maxCount == rhs.maxCount
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(min)
        hasher.combine(max)
        hasher.combine(maxLength)
        hasher.combine(pattern)
        hasher.combine(maxCount)
    }
}

/// A compiled `pattern`. `Regex<AnyRegexOutput>` is not Sendable (it may lower its program lazily),
/// so matches from several threads take a lock; patterns are rare and matches short.
final class CompiledPattern: Sendable {
    private let regex: Mutex<Regex<AnyRegexOutput>>

    init?(_ pattern: String) {
        guard let regex = try? Regex(pattern) else { return nil }
        self.regex = Mutex(regex)
    }

    func matchesWhole(_ string: String) -> Bool {
        regex.withLock { regex in (try? regex.wholeMatch(in: string)) != nil }
    }
}
