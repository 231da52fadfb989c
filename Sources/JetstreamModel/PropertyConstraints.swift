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
