import Foundation
@_exported import JetstreamJSON

/// The model schema: classes with typed properties, and scope rules naming each scope's root class.
///
/// Build one from a file (``load(from:)``), from text (``parse(yaml:file:)``, ``parse(json:file:)``)
/// or in code; every way checks the whole schema and either succeeds or throws a ``SchemaError`` —
/// it never loads half.
///
/// ```swift
/// let schema = try Schema.parse(yaml: """
///     models:
///       Canvas: { name: String?, shapes: [Shape] }
///       Shape: { x: Float, y: Float }
///     scopes:
///       "canvas-*": { root: Canvas }
///     """)
/// schema.rootClass(forScope: "canvas-1")?.name   // "Canvas"
/// ```
public struct Schema: Sendable, Hashable {
    /// The classes in declaration order.
    public let classes: [ModelClass]
    /// Scope rules in declaration order; the first match wins.
    public let scopes: [ScopeRule]
    private let classByName: [String: ModelClass]
    /// Whether some class has write rules (``ModelClass/hasRules``): without, no change set is
    /// checked against any.
    public let hasRules: Bool
    /// For each class, the classes reachable from it through references (itself included): what
    /// a scope rooted there may hold.
    private let reachableClassNames: [String: Set<String>]

    /// Checks and builds a schema.
    public init(classes: [ModelClass], scopes: [ScopeRule]) throws(SchemaError) {
        var declared: [String: ModelClass] = [:]
        for modelClass in classes {
            guard modelClass.name.isIdentifier else {
                throw SchemaError(className: modelClass.name, message: "a class name must be an identifier")
            }
            guard declared[modelClass.name] == nil else {
                throw SchemaError(className: modelClass.name, message: "the class is declared twice")
            }
            declared[modelClass.name] = modelClass
        }
        var classByName: [String: ModelClass] = [:]
        var resolved: [ModelClass] = []
        for modelClass in classes {
            let resolvedClass = try Schema.resolve(modelClass, declared: declared)
            classByName[modelClass.name] = resolvedClass
            resolved.append(resolvedClass)
        }
        for modelClass in resolved {
            for property in modelClass.ownProperties {
                do {
                    try Schema.check(property, classNames: classByName)
                    try Schema.checkEvolution(property, of: modelClass)
                } catch {
                    throw SchemaError(className: modelClass.name, property: property.name, message: error.message)
                }
            }
        }
        for rule in scopes {
            guard !rule.pattern.isEmpty else { throw SchemaError(message: "a scope pattern is empty") }
            guard classByName[rule.rootClassName] != nil else {
                throw SchemaError(message: "scope \"\(rule.pattern)\": no class \(rule.rootClassName) for its root")
            }
        }
        self.classes = resolved
        self.hasRules = resolved.contains(where: \.hasRules)
        self.scopes = scopes
        self.classByName = classByName
        var subclasses: [String: [String]] = [:]
        for modelClass in resolved {
            for ancestor in modelClass.ancestorNames { subclasses[ancestor, default: []].append(modelClass.name) }
        }
        // A scope may hold a class reachable through references, where a reference to a class also
        // admits its subclasses (whose own references count as well).
        var reachable: [String: Set<String>] = [:]
        for modelClass in resolved {
            var found: Set<String> = [modelClass.name]
            var pending = [modelClass.name]
            while let next = pending.popLast() {
                for property in classByName[next]!.properties {
                    guard let target = property.type.referencedClassName else { continue }
                    for candidate in [target] + subclasses[target, default: []] where found.insert(candidate).inserted {
                        pending.append(candidate)
                    }
                }
            }
            reachable[modelClass.name] = found
        }
        self.reachableClassNames = reachable
    }

    /// Adds inherited properties and the ancestor chain; rejects cycles and redeclared properties.
    private static func resolve(
        _ modelClass: ModelClass, declared: [String: ModelClass]
    ) throws(SchemaError) -> ModelClass {
        var chain: [ModelClass] = [modelClass]
        var ancestors: [String] = []
        var next = modelClass.superclassName
        while let superName = next {
            guard let superclass = declared[superName] else {
                throw SchemaError(className: modelClass.name, message: "extends \(superName), which the schema lacks")
            }
            guard superName != modelClass.name, !ancestors.contains(superName) else {
                throw SchemaError(className: modelClass.name, message: "the superclass chain is a cycle")
            }
            ancestors.append(superName)
            chain.append(superclass)
            next = superclass.superclassName
        }
        var all: [PropertyDefinition] = []
        var owner: [String: String] = [:]
        for ancestor in chain.reversed() {
            for property in ancestor.ownProperties {
                if let first = owner[property.name] {
                    throw SchemaError(
                        className: ancestor.name, property: property.name,
                        message: first == ancestor.name
                            ? "the property is declared twice" : "the property is already declared by \(first)")
                }
                owner[property.name] = ancestor.name
                all.append(property)
            }
        }
        // A class without rules of its own has its nearest ancestor's.
        let rules = chain.lazy.compactMap(\.ownRules).first ?? .open
        return ModelClass(
            name: modelClass.name, superclassName: modelClass.superclassName, ownProperties: modelClass.ownProperties,
            allProperties: all, ancestorNames: ancestors, ownRules: modelClass.ownRules, rules: rules)
    }

    /// The resolved class `name` (inherited properties included), or nil.
    public func modelClass(named name: String) -> ModelClass? { classByName[name] }

    /// The root class of the first scope rule whose glob matches `scopeName`, or nil when no rule
    /// does (the scope may not exist).
    public func rootClass(forScope scopeName: String) -> ModelClass? {
        scopes.first { $0.matches(scopeName) }.flatMap { classByName[$0.rootClassName] }
    }

    /// Whether a scope with this root class may hold objects of `className`: the class must be
    /// reachable from the root class through reference properties.
    public func allows(className: String, inScopeRootedAt root: ModelClass) -> Bool {
        reachableClassNames[root.name]?.contains(className) ?? false
    }

    public static func == (lhs: Schema, rhs: Schema) -> Bool {
        lhs.classes == rhs.classes && lhs.scopes == rhs.scopes
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(classes)
        hasher.combine(scopes)
    }

    private struct PropertyProblem: Error {
        let message: String
    }

    private static func check(
        _ property: PropertyDefinition, classNames: [String: ModelClass]
    ) throws(PropertyProblem) {
        guard property.name.isIdentifier else {
            throw PropertyProblem(message: "a property name must be an identifier")
        }
        let type = property.type
        let element: PropertyType
        if case .collection(let inner) = type {
            guard !inner.isCollection else { throw PropertyProblem(message: "collections cannot be nested") }
            guard !property.isNullable else {
                throw PropertyProblem(message: "a collection cannot be nullable (it is [] when empty)")
            }
            element = inner
        } else {
            element = type
        }
        if let target = type.referencedClassName, classNames[target] == nil {
            throw PropertyProblem(message: "type \(type.name) names no class of the schema")
        }
        if case .enumeration(let values) = element {
            guard values.count > 0 else { throw PropertyProblem(message: "an enum needs at least one value") }
            let unique: Int
            switch values {
            case .strings(let strings): unique = Set(strings).count
            case .integers(let integers): unique = Set(integers).count
            }
            guard unique == values.count else { throw PropertyProblem(message: "an enum lists a value twice") }
        }
        try checkConstraints(property.constraints, type: type, element: element)
        let stored: Value
        do {
            stored = try property.validate(property.defaultValue.jsonValue, limits: .unlimited) { _ in nil }
        } catch {
            throw PropertyProblem(
                message: "default \(property.defaultValue.jsonValue.encodedString()): \(error.message)")
        }
        guard stored == property.defaultValue else {
            throw PropertyProblem(message: "default \(property.defaultValue) is not stored as a \(type.name)")
        }
    }

    /// `renamedFrom` names a name the class no longer uses, once; `onInvalid: null` needs a
    /// nullable property.
    private static func checkEvolution(
        _ property: PropertyDefinition, of modelClass: ModelClass
    ) throws(PropertyProblem) {
        if let oldName = property.renamedFrom {
            guard oldName.isIdentifier else { throw PropertyProblem(message: "renamedFrom must be a property name") }
            guard modelClass.property(named: oldName) == nil else {
                throw PropertyProblem(message: "renamedFrom \(oldName): the class still has a property of that name")
            }
            let claimants = modelClass.properties.filter { $0.renamedFrom == oldName }
            guard claimants.count == 1 else {
                throw PropertyProblem(message: "renamedFrom \(oldName): another property is renamed from it too")
            }
        }
        if property.onInvalid == .null && !property.isNullable {
            throw PropertyProblem(message: "onInvalid: null needs a nullable property")
        }
    }

    private static func checkConstraints(
        _ constraints: PropertyConstraints, type: PropertyType, element: PropertyType
    ) throws(PropertyProblem) {
        if constraints.min != nil || constraints.max != nil {
            guard element.isNumeric else {
                throw PropertyProblem(message: "min/max apply to numbers, not \(type.name)")
            }
        }
        if let min = constraints.min, let max = constraints.max, min > max {
            throw PropertyProblem(message: "min \(min) is above max \(max)")
        }
        if constraints.maxLength != nil || constraints.pattern != nil {
            guard element == .string else {
                throw PropertyProblem(message: "maxLength/pattern apply to strings, not \(type.name)")
            }
        }
        if let maxLength = constraints.maxLength, maxLength < 0 {
            throw PropertyProblem(message: "maxLength must not be negative")
        }
        if let pattern = constraints.pattern, constraints.compiledPattern == nil {
            throw PropertyProblem(message: "pattern \(pattern) is not a valid regular expression")
        }
        if let maxCount = constraints.maxCount {
            guard type.isCollection else { throw PropertyProblem(message: "maxCount applies to collections") }
            guard maxCount >= 0 else { throw PropertyProblem(message: "maxCount must not be negative") }
        }
    }
}
