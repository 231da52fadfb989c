extension Schema {
    /// Why nodes running this schema and `other` on one shared store would not understand each
    /// other's writes; empty when they may serve side by side during a rolling upgrade.
    ///
    /// Two schemas may run together when they differ only by whole classes and whole properties
    /// (added or removed): each node fills the defaults of what the other lacks and drops what it
    /// does not know. Any change to a property both have — its type, nullability, default,
    /// constraints, enum values — or a rename, or a class that extends another, is not: a node
    /// would refuse or misread what the other writes. Such a change is applied to every node
    /// together (see `docs/schema-evolution.md`).
    ///
    /// ```swift
    /// mine.rollingUpgradeConflicts(with: theirs)
    /// // ["Card.points: Int32, max 5 here; Int32, max 10 there"]
    /// ```
    public func rollingUpgradeConflicts(with other: Schema) -> [String] {
        var conflicts: [String] = []
        for mine in classes {
            guard let theirs = other.modelClass(named: mine.name) else { continue }
            if mine.superclassName != theirs.superclassName {
                conflicts.append(
                    "\(mine.name): extends \(mine.superclassName ?? "nothing") here, "
                        + "\(theirs.superclassName ?? "nothing") there")
            }
            for property in mine.ownProperties {
                if let oldName = property.renamedFrom, theirs.property(named: oldName) != nil,
                    theirs.property(named: property.name) == nil
                {
                    conflicts.append("\(mine.name).\(property.name): renamed from \(oldName), which runs there")
                }
                guard let counterpart = theirs.property(named: property.name),
                    !property.storesAlike(counterpart)
                else { continue }
                conflicts.append(
                    "\(mine.name).\(property.name): \(property.shape) here; \(counterpart.shape) there")
            }
        }
        for theirs in other.classes {
            guard let mine = modelClass(named: theirs.name) else { continue }
            for property in theirs.ownProperties {
                if let oldName = property.renamedFrom, mine.property(named: oldName) != nil,
                    mine.property(named: property.name) == nil
                {
                    conflicts.append("\(theirs.name).\(property.name): renamed from \(oldName) there")
                }
            }
        }
        return conflicts
    }
}

extension PropertyDefinition {
    /// Whether both definitions accept and store the same values.
    func storesAlike(_ other: PropertyDefinition) -> Bool {
        type == other.type && isNullable == other.isNullable && defaultValue == other.defaultValue
            && constraints == other.constraints
    }

    /// The type and constraints, as a conflict names them: `Int32?, default 3, max 5`.
    var shape: String {
        var parts = [type.name + (isNullable ? "?" : "")]
        if case .enumeration(let values) = type { parts = ["enum \(values.listDescription)"] }
        if hasExplicitDefault { parts.append("default \(defaultValue.jsonValue.encodedString())") }
        if let min = constraints.min { parts.append("min \(min)") }
        if let max = constraints.max { parts.append("max \(max)") }
        if let maxLength = constraints.maxLength { parts.append("maxLength \(maxLength)") }
        if let pattern = constraints.pattern { parts.append("pattern \(pattern)") }
        if let maxCount = constraints.maxCount { parts.append("maxCount \(maxCount)") }
        return parts.joined(separator: ", ")
    }
}
